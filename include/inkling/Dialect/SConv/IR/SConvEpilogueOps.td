//===- SConvEpilogueOps.td - The conv's neighbours in the model -*- tablegen -*-===//
//
// The ops that consume a conv's output in an Inkling decoder layer (issue
// #29, docs/Design.md section 4, "Epilogues"): the RMSNorm of a K head row
// (k_norm), the attention layer's paged KV write, and the fused op that
// `sconv-fuse-epilogues` builds from a conv and these consumers. Included by
// SConvOps.td (one op library).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVEPILOGUEOPS_TD
#define INKLING_DIALECT_SCONV_IR_SCONVEPILOGUEOPS_TD

//===----------------------------------------------------------------------===//
// sconv.rms_norm
//===----------------------------------------------------------------------===//

def SConv_RmsNormOp : SConv_Op<"rms_norm"> {
  let summary = "RMSNorm of each (token, head) row of a stream, in the project's arithmetic";
  let description = [{
    For every token `t < T` and head `h`, over the `w` channels of the row
    `x[t, h, :]` (w: the stream's width, a multiple of 8):

    ```
    ss   = the sum of x^2 in the fixed order of docs/Design.md section 4
           ("Epilogues"): per 16-byte chunk a halving tree over its 8 lanes,
           then a pairwise tree over the chunks (zeros up to a power of two)
    r    = sqrt(ss / w + eps)                // f32, correctly rounded
    out[t, h, c] = bf16((x[t, h, c] * (1 / r)) * weight[c])
    ```

    All in f32 (x and weight widened exactly from bf16), one rounding to bf16
    at the end: vLLM's `k_norm` (`y * rsqrt(mean(y^2) + eps) * weight`) with
    the inverse root computed as a correctly rounded sqrt and divide, and a
    stated reduction order, so that every backend gives the same bits.
    Padding tokens are normalized like any other row (the op takes no step).
    A named op rather than linalg: docs/Rationale.md, "Epilogues".

    ```mlir
    sconv.rms_norm %yk weight %k_norm eps 1.000000e-06
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        stream k into %kn
        : memref<?x8x128xbf16>, memref<128xbf16> -> memref<?x8x128xbf16>
    ```
  }];
  let arguments = (ins Arg<SConv_MemRef, "rows", [MemRead]>:$x,
                       Arg<SConv_MemRef, "weight [w]", [MemRead]>:$weight,
                       Arg<SConv_MemRef, "output, shaped like x", [MemWrite]>:$out,
                       F32Attr:$epsilon,
                       SConv_LayoutAttr:$layout,
                       SConv_StreamAttr:$stream);
  let assemblyFormat = [{
    $x `weight` $weight `eps` $epsilon `layout` $layout
    `stream` custom<StreamRef>($stream) `into` $out attr-dict
    `:` type($x) `,` type($weight) `->` type($out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.kv_write
//===----------------------------------------------------------------------===//

def SConv_KvWriteOp : SConv_Op<"kv_write"> {
  let summary = "Store a stream's rows into the attention layer's paged KV cache";
  let description = [{
    The attention layer's cache write (vLLM's `reshape_and_cache` for one
    of the key or value caches), in its own layout: NHD
    `[num_blocks, block_size, H, w]` with strides
    `[block_stride, H*w, w, 1]` (the block stride may exceed a page: a
    padded or cross-layer allocation), any block size (dim 1, static).
    For every token `t < T` (x's dim 0) with
    `0 <= slot = slots[t] < num_blocks * block_size`, every head `h` and
    channel `c < w`:
    `kv_cache[slot / block_size, slot % block_size, h, c] = x[t, h, c]`.
    Slot -1 means "not stored"; a slot outside the cache is not stored
    either (the write is memory-safe without checked mode). The slots are the
    *attention* layer's slot mapping, not the conv cache's.

    ```mlir
    sconv.kv_write %kn into %key_cache slots %attn_slots
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        stream k
        : memref<?x8x128xbf16>,
          memref<?x16x8x128xbf16, strided<[16384, 1024, 128, 1]>>, memref<?xi64>
    ```
  }];
  let arguments = (ins Arg<SConv_MemRef, "rows", [MemRead]>:$x,
                       Arg<SConv_MemRef, "the attention KV cache", [MemWrite]>:$kv_cache,
                       Arg<SConv_MemRef, "attention slot mapping", [MemRead]>:$slots,
                       SConv_LayoutAttr:$layout,
                       SConv_StreamAttr:$stream);
  let assemblyFormat = [{
    $x `into` $kv_cache `slots` $slots `layout` $layout
    `stream` custom<StreamRef>($stream) attr-dict
    `:` type($x) `,` type($kv_cache) `,` type($slots)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.fused_conv_kv_write
//===----------------------------------------------------------------------===//

def SConv_FusedConvKvWriteOp : SConv_StepCacheAccessOp<"fused_conv_kv_write", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Convs whose rows go, optionally normalized, straight into the attention KV cache";
  let description = [{
    Stream `i` convolves `inputs[i]` with `weights[i]` exactly as
    `sconv.conv` defines (one rounding to bf16), then, when `normed[i]`, the
    row is normalized as `sconv.rms_norm` defines with the next of
    `norm_weights` and `eps`, and the row is stored into `kv_caches[i]` at
    `kv_slots` as `sconv.kv_write` defines. The conv's output never reaches
    memory. With `and_insert` each stream's input is also stored into the
    conv cache at the step's slots (as `sconv.fused_conv ... and_insert`).
    A padding token's row is its input x (as the conv gives it), normalized
    and stored like any other.

    Produced by `sconv-fuse-epilogues` from a conv (or fused conv) whose
    outputs are read only by `sconv.rms_norm` / `sconv.kv_write` (vLLM's
    `_qkvr_qkv_kernel` does this fusion by hand).

    ```mlir
    sconv.fused_conv_kv_write %k, %v weights %wk, %wv history %cache[k, v]
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step and_insert
        norm [true, false] (%k_norm : memref<128xbf16>) eps 1.000000e-06
        into %key_cache, %value_cache slots %attn_slots
        : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>,
          (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
          (memref<1024x4xbf16>, memref<1024x4xbf16>)
          -> (memref<?x16x8x128xbf16, strided<[16384, 1024, 128, 1]>>,
              memref<?x16x8x128xbf16, strided<[16384, 1024, 128, 1]>>),
          memref<?xi64>
    ```
  }];
  let arguments = (ins
    Variadic<SConv_MemRef>:$inputs,
    Variadic<SConv_MemRef>:$weights,
    SConv_MemRef:$cache,
    SConv_StepType:$step,
    Variadic<SConv_MemRef>:$norm_weights,
    Variadic<SConv_MemRef>:$kv_caches,
    SConv_MemRef:$kv_slots,
    SConv_StreamArrayAttr:$streams,
    SConv_LayoutAttr:$layout,
    DenseBoolArrayAttr:$normed,
    F32Attr:$epsilon,
    DefaultValuedAttr<BoolAttr, "true">:$residual,
    DefaultValuedAttr<SConv_ActivationAttr, "Activation::None">:$activation,
    UnitAttr:$insert);
  let assemblyFormat = [{
    $inputs `weights` $weights `history` $cache `[` custom<StreamList>($streams) `]`
    `layout` $layout `step` $step (`and_insert` $insert^)?
    `norm` $normed (`(` $norm_weights^ `:` type($norm_weights) `)`)?
    `eps` $epsilon `into` $kv_caches `slots` $kv_slots
    `` custom<OptionalActivation>($activation) attr-dict
    `:` type($cache) `,` `(` type($inputs) `)` `,` `(` type($weights) `)`
    `->` `(` type($kv_caches) `)` `,` type($kv_slots)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The streams, in operand order.
    ::llvm::SmallVector<Stream> getStreamList();
    /// The norm weight of stream `i`, or null when it is not normalized.
    ::mlir::Value getNormWeightOf(unsigned i);
  }];
}

//===----------------------------------------------------------------------===//
// sconv.add_rms_norm
//===----------------------------------------------------------------------===//

def SConv_AddRmsNormOp : SConv_Op<"add_rms_norm"> {
  let summary = "The residual-stream add and the next RMSNorm over a token's hidden row";
  let description = [{
    For every token `t < T`, over the token's whole hidden row of the rank
    (`H*w` channels, w the stream's width; x and the outputs are `[T, H*w]`
    or `[T, H, w]`):

    ```
    h[t, i]   = bf16(y[t, i] + residual[t, i])            // f32 add
    ss        = per head: the sum of h^2 over the head's w channels in the
                order of sconv.rms_norm; then a pairwise tree over the H
                heads (zeros up to a power of two)
    r         = sqrt(ss / (H*w) + eps)
    out[t, i] = bf16((h[t, i] * (1 / r)) * weight[i])
    ```

    `h` is the new residual stream (both outputs are written). The norm
    covers the token's whole hidden row, so the layout's `tp` must be 1: at
    tp > 1 a rank holds H/tp of the row and the sum of squares needs every
    rank's part (the engine's all-reduce), which this op does not do
    (docs/Design.md section 4, "Epilogues").

    ```mlir
    sconv.add_rms_norm %ya, %residual weight %post_norm eps 1.000000e-06
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        stream attn into %h, %normed
        : memref<?x4096xbf16>, memref<?x4096xbf16>, memref<4096xbf16>
          -> memref<?x4096xbf16>, memref<?x4096xbf16>
    ```
  }];
  let arguments = (ins Arg<SConv_MemRef, "rows (the conv's output)", [MemRead]>:$y,
                       Arg<SConv_MemRef, "the residual stream", [MemRead]>:$residual,
                       Arg<SConv_MemRef, "weight [H*w]", [MemRead]>:$weight,
                       Arg<SConv_MemRef, "h = residual + y", [MemWrite]>:$sum,
                       Arg<SConv_MemRef, "the normalized row", [MemWrite]>:$out,
                       F32Attr:$epsilon,
                       SConv_LayoutAttr:$layout,
                       SConv_StreamAttr:$stream);
  let assemblyFormat = [{
    $y `,` $residual `weight` $weight `eps` $epsilon `layout` $layout
    `stream` custom<StreamRef>($stream) `into` $sum `,` $out attr-dict
    `:` type($y) `,` type($residual) `,` type($weight) `->` type($sum) `,` type($out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// sconv.fused_conv_add_norm
//===----------------------------------------------------------------------===//

def SConv_FusedConvAddNormOp : SConv_StepCacheAccessOp<"fused_conv_add_norm", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "A conv whose rows go through the residual add and the hidden-row RMSNorm";
  let description = [{
    The conv of one stream (`sconv.conv`'s semantics, one rounding to bf16),
    then `sconv.add_rms_norm` of its output with `residual`, `weight` and
    `eps`, writing `sum` (h) and `out`; the conv's output never reaches
    memory. With `and_insert` the input is also stored into the conv cache
    at the step's slots. Produced by `sconv-fuse-epilogues` (vLLM's
    `lamport.py` does this by hand inside its collective kernels).

    ```mlir
    sconv.fused_conv_add_norm %attn weights %wattn history %cache[attn]
        layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
        step %step and_insert residual %residual
        norm %post_norm eps 1.000000e-06 into %h, %normed
        : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>,
          memref<?x4096xbf16>, memref<4096x4xbf16>, memref<?x4096xbf16>,
          memref<4096xbf16> -> memref<?x4096xbf16>, memref<?x4096xbf16>
    ```
  }];
  let arguments = (ins
    SConv_MemRef:$x,
    SConv_MemRef:$weights,
    SConv_MemRef:$cache,
    SConv_StepType:$step,
    SConv_MemRef:$residual,
    SConv_MemRef:$norm_weight,
    SConv_MemRef:$sum,
    SConv_MemRef:$out,
    SConv_StreamAttr:$stream,
    SConv_LayoutAttr:$layout,
    F32Attr:$epsilon,
    DefaultValuedAttr<BoolAttr, "true">:$residual_conv,
    DefaultValuedAttr<SConv_ActivationAttr, "Activation::None">:$activation,
    UnitAttr:$insert);
  let assemblyFormat = [{
    $x `weights` $weights `history` $cache `[` custom<StreamRef>($stream) `]`
    `layout` $layout `step` $step (`and_insert` $insert^)?
    `residual` $residual `norm` $norm_weight `eps` $epsilon `into` $sum `,` $out
    `` custom<OptionalActivation>($activation) attr-dict
    `:` type($cache) `,` type($x) `,` type($weights) `,` type($residual) `,`
    type($norm_weight) `->` type($sum) `,` type($out)
  }];
  let hasVerifier = 1;
}

#endif // INKLING_DIALECT_SCONV_IR_SCONVEPILOGUEOPS_TD
