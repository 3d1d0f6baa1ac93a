// Loop nests per decoder layer under each fusion strategy of
// inkling-lower-to-cpu, counted on the loop form the pipeline itself
// produces (printed after its sconv-lower-to-loops step). An outer nest is
// an scf.parallel over (token, head): `scf.parallel (%a, %b)`; the inner
// loops are 1-D. On the CPU each conv's nest exists twice, in an scf.if on
// the step's shape (sconv-lower-to-loops token-runs): the (run of tokens,
// head) form for prefill-sized steps, then the (token, head) one; an
// insert's nest once.
//
// RUN: inkling-opt %s --inkling-lower-to-cpu=decode-runs=false --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEFAULT
// RUN: inkling-opt %s --inkling-lower-to-cpu="fusion=conv-insert decode-runs=false" --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEFAULT
// RUN: inkling-opt %s --inkling-lower-to-cpu="split-streams=false decode-runs=false" --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CONCAT
// RUN: inkling-opt %s --inkling-lower-to-cpu="fusion=packed-inserts decode-runs=false" --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PACKED
// RUN: inkling-opt %s --inkling-lower-to-cpu="fusion=none decode-runs=false" --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NONE
// The same counts with grep -c over the whole module:
// RUN: inkling-opt %s --inkling-lower-to-cpu=decode-runs=false --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | grep -c 'scf.parallel (%[a-z0-9_]*, %[a-z0-9_]*)' | FileCheck %s --check-prefix=COUNT3
// RUN: inkling-opt %s --inkling-lower-to-cpu="fusion=none decode-runs=false" --mlir-print-ir-after=sconv-lower-to-loops -o /dev/null 2>&1 \
// RUN:   | grep -c 'scf.parallel (%[a-z0-9_]*, %[a-z0-9_]*)' | FileCheck %s --check-prefix=COUNT8
// RUN: not inkling-opt %s --inkling-lower-to-cpu=fusion=fastest 2>&1 | FileCheck %s --check-prefix=BAD
// And the whole pipeline still reaches the LLVM dialect with each strategy.
// RUN: inkling-opt %s --inkling-lower-to-cpu=fusion=packed-inserts | FileCheck %s --check-prefix=LLVM
// RUN: inkling-opt %s --inkling-lower-to-cpu="fusion=conv-insert checked=true" | FileCheck %s --check-prefix=LLVM
// (decode-runs=false throughout: the nests counted are the (token, head)
// ones; the decode-run nest has its own test, conv-decode-runs.mlir.)

// The decoder layer of test/Dialect/SConv/Transforms/fusion-pipeline.mlir at
// the real layout: K and V are ready together (QKV projection); attention
// and the MLP (opaque calls) sit before the ATTN and MLP streams.

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!c = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x8x128xbf16>
!h = memref<?x4096xbf16>
!wkv = memref<1024x4xbf16>
!wh = memref<4096x4xbf16>

func.func private @attention(!kv, !kv, !h)
func.func private @mlp(!h, !h)

func.func @layer(%k: !kv {llvm.noalias}, %v: !kv {llvm.noalias},
                 %a: !h {llvm.noalias}, %m: !h {llvm.noalias},
                 %wk: !wkv {llvm.noalias}, %wv: !wkv {llvm.noalias},
                 %wa: !wh {llvm.noalias}, %wm: !wh {llvm.noalias},
                 %yk: !kv {llvm.noalias}, %yv: !kv {llvm.noalias},
                 %ya: !h {llvm.noalias}, %ym: !h {llvm.noalias},
                 %buf: memref<?xi8> {llvm.noalias},
                 %qsl: memref<?xi32> {llvm.noalias},
                 %nc: memref<?xi32> {llvm.noalias},
                 %bt: memref<?x?xi32> {llvm.noalias},
                 %sm: memref<?xi64> {llvm.noalias}) {
  %c = sconv.bind %buf layout #l page_bytes 131072 : memref<?xi8> -> !c
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %sm : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %wk history %c[k] layout #l step %s into %yk : !kv, !wkv, !c -> !kv
  sconv.insert %k into %c[k] layout #l step %s : !kv, !c
  sconv.conv %v, %wv history %c[v] layout #l step %s into %yv : !kv, !wkv, !c -> !kv
  sconv.insert %v into %c[v] layout #l step %s : !kv, !c
  call @attention(%yk, %yv, %a) : (!kv, !kv, !h) -> ()
  sconv.conv %a, %wa history %c[attn] layout #l step %s into %ya : !h, !wh, !c -> !h
  sconv.insert %a into %c[attn] layout #l step %s : !h, !c
  call @mlp(%ya, %m) : (!h, !h) -> ()
  sconv.conv %m, %wm history %c[mlp] layout #l step %s into %ym : !h, !wh, !c -> !h
  sconv.insert %m into %c[mlp] layout #l step %s : !h, !c
  return
}

// conv-insert (the default): K+V conv with both inserts, then ATTN, then
// MLP, each conv storing its input: 3 nests. On the CPU (split-streams, the
// default) the K+V nest runs one inner loop per stream (16 chunks each);
// ATTN's and MLP's run over 64.
// DEFAULT-LABEL: func.func @layer
// DEFAULT:       scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// DEFAULT:         scf.parallel (%{{[^)]+}}) = (%c0) to (%c16)
// DEFAULT:         scf.parallel (%{{[^)]+}}) = (%c0) to (%c16)
// DEFAULT:       call @attention
// DEFAULT:       scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// DEFAULT:         scf.parallel (%{{[^)]+}}) = (%c0) to (%c64)
// DEFAULT:       call @mlp
// DEFAULT:       scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// DEFAULT:         scf.parallel (%{{[^)]+}}) = (%c0) to (%c64)
// DEFAULT-NOT:   scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// DEFAULT:       return

// The GPU's form (split-streams=false): the K+V nest's inner loop runs over
// the 16 + 16 concatenated chunks.
// CONCAT-LABEL: func.func @layer
// CONCAT:       scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// CONCAT:         scf.parallel (%{{[^)]+}}) = (%c0) to (%c32)
// CONCAT-NOT:     scf.parallel (%{{[^)]+}}) = (%c0) to (%c16)
// CONCAT:       call @attention

// packed-inserts: K+V conv, K+V packed insert, then ATTN conv + insert and
// MLP conv + insert (the inserts cannot move past the calls): 6 nests, 9
// outer loops.
// PACKED-LABEL: func.func @layer
// PACKED-COUNT-3: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// PACKED:       call @attention
// PACKED-COUNT-3: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// PACKED:       call @mlp
// PACKED-COUNT-3: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// PACKED-NOT:   scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// PACKED:       return

// none: one nest per op (8), 12 outer loops.
// NONE-LABEL: func.func @layer
// NONE-COUNT-6: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// NONE:         call @attention
// NONE-COUNT-3: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// NONE:         call @mlp
// NONE-COUNT-3: scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// NONE-NOT:     scf.parallel (%{{[^,]+}}, %{{[^)]+}}) =
// NONE:         return

// COUNT3: {{^}}6{{$}}
// COUNT8: {{^}}12{{$}}

// BAD: Cannot find option named 'fastest'!

// LLVM: llvm.func @layer
// LLVM-NOT: sconv.
// LLVM-NOT: scf.
