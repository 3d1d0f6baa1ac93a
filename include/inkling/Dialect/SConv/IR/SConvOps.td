//===- SConvOps.td - sconv operations --------------------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVOPS_TD
#define INKLING_DIALECT_SCONV_IR_SCONVOPS_TD

include "inkling/Dialect/SConv/IR/SConvAttrDefs.td"
include "inkling/Dialect/SConv/IR/SConvInterfaces.td"
include "inkling/Dialect/SConv/IR/SConvTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

class SConv_Op<string mnemonic, list<Trait> traits = []>
    : Op<SConv_Dialect, mnemonic, traits>;

// Element types, shapes and strides are checked by each op's verifier against
// the layout, so that the diagnostic names the operand and says what was
// expected and what was found (ODS constraints would only say "operand #2").
def SConv_MemRef : MemRefOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// sconv.bind
//===----------------------------------------------------------------------===//

def SConv_BindOp : SConv_Op<"bind", [
    Pure, DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "View a raw byte buffer as the paged conv-state cache";
  let description = [{
    Binds the serving engine's cache allocation (`num_blocks` pages of
    `page_bytes` each) to the strided cache view `[num_blocks, H, N, D]`
    with strides `[page_bytes / 2, N*D, D, 1]`. `page_bytes` may exceed the
    layout's own page `H*N*D*2` when the page was padded up to a unified page
    size: every access goes through the block stride. The blocks are those
    whose unpadded page lies inside the buffer:
    `(buffer bytes - H*N*D*2) / page_bytes + 1` (0 if the buffer is smaller
    than a page).

    Cross-layer pages: with `layers L`, one allocation holds the pages of all
    L layers of a block side by side (block stride `page_bytes >= L*H*N*D*2`)
    and layer `l`'s buffer is the allocation from byte `l*H*N*D*2` on; the
    verifier checks that the stride holds the L pages.

    ```mlir
    %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
        head_dim = 128, hidden = 4096, kernel = 4, tp = 1> page_bytes 131072
        : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
    %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
        head_dim = 128, hidden = 4096, kernel = 4, tp = 1> page_bytes 4194304
        layers 32
        : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[2097152, 8192, 2048, 1]>>
    ```
  }];
  let arguments = (ins SConv_MemRef:$buffer,
                       SConv_LayoutAttr:$layout,
                       ConfinedAttr<I64Attr, [IntPositive]>:$page_bytes,
                       OptionalAttr<I64Attr>:$layers);
  let results = (outs SConv_MemRef:$cache);
  let assemblyFormat = [{
    $buffer `layout` $layout `page_bytes` $page_bytes (`layers` $layers^)?
    attr-dict `:` type($buffer) `->` type($cache)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$buffer, "LayoutAttr":$layout,
                   "int64_t":$pageBytes)>
  ];
  let extraClassDeclaration = [{
    /// The cache type bound for `layout` with a page of `pageBytes`.
    static ::mlir::MemRefType getCacheType(LayoutAttr layout,
                                           int64_t pageBytes);
  }];
}

//===----------------------------------------------------------------------===//
// sconv.step
//===----------------------------------------------------------------------===//

def SConv_StepOp : SConv_Op<"step", [Pure, AttrSizedOperandSegments]> {
  let summary = "Bundle the metadata buffers of one forward step";
  let description = [{
    Names the four metadata buffers of a continuous-batching step
    (docs/Design.md section 3) as one `!sconv.step` value:

    - `query_start_loc` (i32, B+1): the tokens of sequence b are
      `[qsl[b], qsl[b+1])`;
    - `num_computed` (i32, B): tokens of sequence b processed before this
      step; token t of b is at position `num_computed[b] + t - qsl[b]`;
    - `block_table` (i32, B x M): logical block j of b -> physical block;
    - `slot_mapping` (i64, >= T): physical slot of token t
      (`block * N + position % N`), or -1 for "do not store".

    - `token_seq` (optional, i32, >= T): the sequence b of each real token
      (`qsl[b] <= t < qsl[b+1]`). With it, the lowerings load a token's
      sequence instead of searching `query_start_loc` for it (a chain of
      dependent loads, and a loop in every GPU conv kernel). Entries of
      padding tokens are not read. An entry that is not a sequence of the
      step, or not the one holding the token, is undefined behaviour in the
      default lowering; checked mode reports it (kind 5), the token's
      output is `x` and it stores nothing (as for padding).

    Tokens `t >= qsl[B]` (B = the length of `num_computed`) are padding,
    e.g. of a token dimension padded to a captured graph's size: they read
    nothing from the cache or the step's metadata beyond their own
    `slot_mapping` entry, write nothing to the cache (whatever
    `slot_mapping[t]` holds), and a conv's output for them is `x[t]` (what
    vLLM's kernel gives a pad token), whatever `residual` and `activation`
    say.

    - `status` (optional, i64, at least 5 entries): where a lowering with
      run-time checks (`sconv-lower-to-loops{checked=true}`) reports an
      out-of-range slot or block id instead of accessing memory out of
      bounds: `[0]` counts rejected accesses, `[1..4]` describe the first
      one (kind: 1 slot, 2 block id, 3 logical block beyond the block table,
      4 a slot that is not the token's own `block_table[b][p / N] * N +
      p % N` (limit: that slot), 5 a `token_seq` entry (limit: B); token;
      offending value; limit). The host zeroes it before the step.

    The op reads nothing itself; the ops that take the step read the buffers
    (they declare the read on the step operand). Sharing one step value is
    how the fusion passes prove that an insert and a conv see the same
    `num_computed`, so the insert writes only positions the conv never reads.

    ```mlir
    %step = sconv.step query_start_loc %qsl num_computed %nc
        block_table %bt slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    %step2 = sconv.step query_start_loc %qsl num_computed %nc
        block_table %bt slot_mapping %slots token_seq(%seq : memref<?xi32>)
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    ```
  }];
  let arguments = (ins SConv_MemRef:$query_start_loc,
                       SConv_MemRef:$num_computed,
                       SConv_MemRef:$block_table,
                       SConv_MemRef:$slot_mapping,
                       Optional<SConv_MemRef>:$token_seq,
                       Optional<SConv_MemRef>:$status);
  let results = (outs SConv_StepType:$step);
  let assemblyFormat = [{
    `query_start_loc` $query_start_loc `num_computed` $num_computed
    `block_table` $block_table `slot_mapping` $slot_mapping
    (`token_seq` `(` $token_seq^ `:` type($token_seq) `)`)?
    (`status` $status^)? attr-dict
    `:` type($query_start_loc) `,` type($num_computed) `,`
        type($block_table) `,` type($slot_mapping) (`,` type($status)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.insert
//===----------------------------------------------------------------------===//

// Ops that access the cache through a step declare which positions they touch.
class SConv_StepCacheAccessOp<string mnemonic, list<Trait> traits = []>
    : SConv_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SConv_StepCacheAccessOpInterface,
            ["readsOnlyHistory", "getStepWrittenStreams"]>])>;

def SConv_InsertOp : SConv_StepCacheAccessOp<"insert"> {
  let summary = "Store one stream of a step's tokens into the cache";
  let description = [{
    For every token `t` with `slot = slot_mapping[t] >= 0`, every head `h`
    and channel `c < w`:
    `cache[slot / N, h, slot % N, offset + c] = x[t, h, c]`, where
    `(offset, w)` is the stream's range in the head row. Nothing outside the
    stream's range is written (in particular not the padding `[raw, D)`).
    Padding tokens (`t >= qsl[B]`, see `sconv.step`) store nothing, whatever
    their slot.

    `x` is `[T, H, w]`, or `[T, H*w]` (the rank's hidden chunk of the
    attn/mlp streams, the same memory); its token stride may be larger than
    a row (a slice of a fused projection output).

    ```mlir
    sconv.insert %k into %cache[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step
        : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
    ```
  }];
  let arguments = (ins Arg<SConv_MemRef, "stream input", [MemRead]>:$x,
                       Arg<SConv_MemRef, "the cache", [MemWrite]>:$cache,
                       SConv_StreamAttr:$stream,
                       Arg<SConv_StepType, "step metadata", [MemRead]>:$step,
                       SConv_LayoutAttr:$layout);
  let assemblyFormat = [{
    $x `into` $cache `[` custom<StreamRef>($stream) `]` `layout` $layout
    `step` $step attr-dict
    `:` type($x) `,` type($cache)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.conv
//===----------------------------------------------------------------------===//

def SConv_ConvOp : SConv_StepCacheAccessOp<"conv"> {
  let summary = "Causal depthwise short convolution over cache and step";
  let description = [{
    For token `t` of sequence `b` at position `p`, tap `j` in `[0, W)` reads
    position `q = p - (W - 1) + j`: zero if `q < 0`; the step's own input
    `x[qsl[b] + q - num_computed[b]]` if `q >= num_computed[b]`; otherwise
    the cache, `cache[block_table[b][q / N], h, q % N, offset + c]`.

    `out[t, h, c] = (residual ? x[t, h, c] : 0)
                    + act(bias[ch] + sum_j weights[ch, j] * tap_j)`
    with `ch = h * w + c`. All arithmetic is f32: the accumulator starts at
    the bias (0 without), one fma per tap in ascending `j`, then the
    activation, then the residual add, then one rounding to bf16.

    `residual` defaults to true (the reference model), `activation` to
    `none`. The conv reads the cache only below `num_computed`, so it commutes
    with inserts of the same step.

    A padding token (`t >= qsl[B]`, see `sconv.step`) reads no cache and no
    metadata of a sequence: `out[t] = x[t]`, whatever `residual`, `bias` and
    `activation` say (vLLM's kernel gives a pad token its input). With the
    step's `token_seq`, the sequence `b` of a real token is
    `token_seq[t]`; without it, the largest `b` with `qsl[b] <= t`.

    ```mlir
    sconv.conv %k, %wk history %cache[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step into %y
        : memref<?x8x128xbf16>, memref<1024x4xbf16>,
          memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
    sconv.conv %a, %wa bias %ba history %cache[attn] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step into %ya
        activation silu {residual = false}
        : memref<?x4096xbf16>, memref<4096x4xbf16>,
          memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
          memref<4096xbf16> -> memref<?x4096xbf16>
    ```
  }];
  let arguments = (ins
    Arg<SConv_MemRef, "stream input", [MemRead]>:$x,
    Arg<SConv_MemRef, "weights [H*w, W]", [MemRead]>:$weights,
    Arg<Optional<SConv_MemRef>, "bias [H*w]", [MemRead]>:$bias,
    Arg<SConv_MemRef, "the cache (history)", [MemRead]>:$cache,
    Arg<SConv_StepType, "step metadata", [MemRead]>:$step,
    Arg<SConv_MemRef, "output, shaped like x", [MemWrite]>:$out,
    SConv_StreamAttr:$stream,
    SConv_LayoutAttr:$layout,
    DefaultValuedAttr<BoolAttr, "true">:$residual,
    DefaultValuedAttr<SConv_ActivationAttr, "Activation::None">:$activation);
  let assemblyFormat = [{
    $x `,` $weights (`bias` $bias^)? `history` $cache `[` custom<StreamRef>($stream) `]`
    `layout` $layout `step` $step `into` $out
    `` custom<OptionalActivation>($activation) attr-dict
    `:` type($x) `,` type($weights) `,` type($cache) (`,` type($bias)^)?
    `->` type($out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.insert_packed
//===----------------------------------------------------------------------===//

def SConv_InsertPackedOp : SConv_StepCacheAccessOp<"insert_packed"> {
  let summary = "Store several streams of a step's tokens in one packed write";
  let description = [{
    The inserts of several distinct streams into one cache, for the same step
    and layout, as one op: for every token with a slot and every head, the
    streams' channels are written into their ranges of the head row. When the
    streams are all four (k, v, attn, mlp) the write covers the whole row
    `[0, raw)` in one pass of 16-byte stores; the padding `[raw, D)` is never
    written. Produced by `sconv-fuse-inserts`; semantically the same as the
    separate inserts in any order (their channel ranges are disjoint).

    ```mlir
    sconv.insert_packed %k, %v, %attn, %mlp into %cache[k, v, attn, mlp]
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step
        : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
          memref<?x8x128xbf16>, memref<?x8x128xbf16>, memref<?x4096xbf16>,
          memref<?x4096xbf16>
    ```
  }];
  let arguments = (ins
    Arg<Variadic<SConv_MemRef>, "stream inputs", [MemRead]>:$inputs,
    Arg<SConv_MemRef, "the cache", [MemWrite]>:$cache,
    SConv_StreamArrayAttr:$streams,
    Arg<SConv_StepType, "step metadata", [MemRead]>:$step,
    SConv_LayoutAttr:$layout);
  let assemblyFormat = [{
    $inputs `into` $cache `[` custom<StreamList>($streams) `]`
    `layout` $layout `step` $step attr-dict
    `:` type($cache) `,` type($inputs)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The streams, in operand order.
    ::llvm::SmallVector<Stream> getStreamList();
  }];
}

//===----------------------------------------------------------------------===//
// sconv.fused_conv
//===----------------------------------------------------------------------===//

def SConv_FusedConvOp : SConv_StepCacheAccessOp<"fused_conv", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Convs of several streams in one loop nest, optionally storing";
  let description = [{
    The convs of several distinct streams over one cache, for the same step,
    layout, residual and activation, as one op (one loop nest, one launch):
    stream `i` convolves `inputs[i]` with `weights[i]` (and `biases[i]` when
    biases are given, for every stream) into `outs[i]`, exactly as
    `sconv.conv` defines.

    With `and_insert`, the op also stores each stream's input at the step's
    own positions, as `sconv.insert` would: the conv already reads every
    token's input (its last tap), so the store reads `x` once. This is sound
    inside one op because the conv reads the cache only below `num_computed`
    and the insert writes only at or above it.

    Produced by `sconv-fuse-conv-insert` and `sconv-fuse-convs`.

    ```mlir
    sconv.fused_conv %k, %v weights %wk, %wv history %cache[k, v]
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step into %yk, %yv and_insert
        : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
          (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
          (memref<1024x4xbf16>, memref<1024x4xbf16>)
          -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
    ```
  }];
  let arguments = (ins
    Variadic<SConv_MemRef>:$inputs,
    Variadic<SConv_MemRef>:$weights,
    Variadic<SConv_MemRef>:$biases,
    SConv_MemRef:$cache,
    SConv_StepType:$step,
    Variadic<SConv_MemRef>:$outs,
    SConv_StreamArrayAttr:$streams,
    SConv_LayoutAttr:$layout,
    DefaultValuedAttr<BoolAttr, "true">:$residual,
    DefaultValuedAttr<SConv_ActivationAttr, "Activation::None">:$activation,
    UnitAttr:$insert);
  let assemblyFormat = [{
    $inputs `weights` $weights (`biases` $biases^)?
    `history` $cache `[` custom<StreamList>($streams) `]`
    `layout` $layout `step` $step `into` $outs
    (`and_insert` $insert^)? `` custom<OptionalActivation>($activation) attr-dict
    `:` type($cache) `,` `(` type($inputs) `)` `,` `(` type($weights) `)`
    (`,` `(` type($biases)^ `)`)? `->` `(` type($outs) `)`
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The streams, in operand order.
    ::llvm::SmallVector<Stream> getStreamList();
  }];
}

include "inkling/Dialect/SConv/IR/SConvEpilogueOps.td"

#endif // INKLING_DIALECT_SCONV_IR_SCONVOPS_TD
