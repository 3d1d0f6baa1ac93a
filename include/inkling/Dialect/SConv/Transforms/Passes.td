//===- Passes.td - sconv passes --------------------------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD
#define INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SConvPrintLayouts : Pass<"sconv-print-layouts"> {
  let summary = "Print the derived values of every sconv layout in the IR";
  let description = [{
    Prints, once per distinct `#sconv.layout` used by an op, everything the
    runtime derives from it: heads per rank, hidden per head, raw width,
    head size D, block size, sliding window, the four stream ranges, the
    padding, the cache shape and strides, and the page bytes. The IR is left
    unchanged.

    ```
    inkling-opt examples/decoder_layer.mlir --sconv-print-layouts -o /dev/null
    ```
  }];
}

def SConvDeferInserts : Pass<"sconv-defer-inserts"> {
  let summary = "Move each cache insert to the latest point where it is legal";
  let description = [{
    Moves every `sconv.insert` / `sconv.insert_packed` later in its block,
    past ops it provably commutes with, up to the first op it does not (or
    the terminator, or another insert on the same cache, whose order is
    kept). An insert commutes with a conv of the same step, cache and layout
    because the conv reads only positions below `num_computed` and the insert
    writes only positions at or above it; with anything else it commutes only
    if their memory effects do not conflict (alias analysis, with
    `llvm.noalias` function arguments known distinct). An op with unknown
    effects (a call, an op without a memory-effect interface), a write to the
    insert's input or the step's metadata, or another step's access to the
    same cache stops the motion.

    After this pass the inserts of a layer sit together, ready for
    `sconv-fuse-inserts`.
  }];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

def SConvFuseInserts : Pass<"sconv-fuse-inserts"> {
  let summary = "Fuse adjacent inserts of distinct streams into one packed insert";
  let description = [{
    Replaces each maximal run of adjacent inserts (`sconv.insert` or
    `sconv.insert_packed`) into the same cache with the same step and layout
    and pairwise distinct streams by one `sconv.insert_packed`, its streams
    in head-row order. With all four streams the result writes the whole row
    `[0, raw)` of each (token, head) in one pass. Inserts of the same stream
    twice, of different steps (slots), caches or layouts are not fused.
  }];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

def SConvFuseConvInsert : Pass<"sconv-fuse-conv-insert"> {
  let summary = "Fold an insert into the conv that reads the same input";
  let description = [{
    A `sconv.insert` and a `sconv.conv` of the same input, stream, step,
    cache and layout become one `sconv.fused_conv ... and_insert` at the
    conv's place, which reads the input once. Legal when the insert commutes
    with every op between the two (see `sconv-defer-inserts`).
  }];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

def SConvFuseConvs : Pass<"sconv-fuse-convs"> {
  let summary = "Fuse convs of distinct streams of one step into one loop nest";
  let description = [{
    Convs (`sconv.conv`, `sconv.fused_conv`) over the same cache with the
    same step, layout, residual, activation, bias presence and insert flag,
    on distinct streams, become one `sconv.fused_conv` - one loop nest, one
    launch - when the later one can move up to the earlier one: it commutes
    with every op in between and with the earlier conv itself (so a conv
    that reads another's output is never fused with it), and its operands are
    defined above. K and V, both produced by the QKV projection, fuse this
    way; ATTN and MLP convs, separated by attention and the MLP, do not.
  }];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

def SConvFuseEpilogues : Pass<"sconv-fuse-epilogues"> {
  let summary = "Fuse a conv's row-local consumers (k_norm, the attention KV write) into its nest";
  let description = [{
    A conv (`sconv.conv` or `sconv.fused_conv`, no bias) whose every
    output `y` is a `memref.alloc` of the function read by nothing but
    row-local epilogues becomes one `sconv.fused_conv_kv_write` at the
    conv's place; `y` (and the norm's output) is no longer allocated or
    written. Per stream the epilogue is either

    - `sconv.kv_write %y ...` (V), or
    - `sconv.rms_norm %y ... into %n` then `sconv.kv_write %n ...`, `%n`
      an alloc read by nothing else (K: k_norm, then the KV write),

    the KV writes of all streams with one slot mapping and the norms with
    one epsilon. Row-local: both ops read, for row (t, h) of their output,
    only row (t, h) of their input (their definitions), so running them
    inside the conv's (t, h) iteration reads exactly the values the conv
    has just produced.

    A one-stream conv (ATTN, MLP) whose output `y`, an alloc, is read only
    as the `y` of an `sconv.add_rms_norm` (the residual add and the norm
    over the token's hidden row) becomes one `sconv.fused_conv_add_norm`,
    under the same conditions (the norm's `sum` and `out` alias nothing the
    conv reads). The pipeline runs the pass once with `hidden-row-only`
    before `sconv-fuse-convs` (so that ATTN and MLP, whose epilogues read
    whole token rows, are not first merged into one multi-stream conv) and
    once after it (K and V merged first, then their epilogues).

    Legal when, from the ops' declared memory effects:
    each epilogue op commutes with every other op between the conv and it
    (it may move up to the conv), its other operands are defined above the
    conv, and the KV caches it writes alias nothing the fused op reads or
    writes otherwise (inputs, weights, the conv cache, the step's buffers,
    norm weights, slots, the other KV caches), so that interleaving the
    rows changes no value read.

    What is not fused stays as it was; with `remarks` each conv that is
    not fused gets a remark saying why:

    ```
    inkling-opt layer.mlir --sconv-fuse-epilogues=remarks=true
    remark: conv not fused with its epilogue: output 'outs[0]' is read by
            'func.call' (only sconv.rms_norm / sconv.kv_write fuse)
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for each conv whose consumers are not fused, "
           "saying why">,
    Option<"hiddenRowOnly", "hidden-row-only", "bool", /*default=*/"false",
           "Fuse only the sconv.add_rms_norm epilogues (one-stream convs)">,
  ];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

def SConvSetCacheGeometry : Pass<"sconv-set-cache-geometry"> {
  let summary = "Give every sconv.bind the engine's block size or cross-layer pages";
  let description = [{
    The IR's `#sconv.layout` carries the model's default block size N and its
    `sconv.bind` a page per block; the serving engine may choose another N
    (vLLM's page unifier scales it to the attention page) or pages of several
    layers side by side in one block stride. This pass applies that choice
    once, at the start of a lowering: each bind's layout gets the block size
    (`block-size`, 0: unchanged), its `page_bytes` the new page (a padded
    page keeps its padding) times the cross-layer count (`layers`, 0:
    unchanged, 1: a page per block), and every use of the old layout and
    cache type in the bind's function follows. A geometry the layout cannot
    take is an error on the bind. Both options 0: nothing changes. The
    pipelines run it first when their `block-size` / `cross-layers` options
    are set; `planCacheGeometry` (CacheGeometry.h) is the same computation
    for a host that needs the geometry before lowering.

    ```
    inkling-opt examples/small_layer.mlir         --sconv-set-cache-geometry=block-size=16 layers=3
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "Tokens per cache block N (0: the layout's)">,
    Option<"layers", "layers", "int64_t", /*default=*/"0",
           "Pages side by side in one block stride, the cross-layer "
           "allocation (0: the bind's; 1: a page per block)">,
  ];
  let dependentDialects = ["::inkling::sconv::SConvDialect"];
}

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD
