// The four-stream decoder layer lowered to loops passes upstream mlir-opt's
// verifier, and so does its LLVM dialect form.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --sconv-lower-to-loops \
// RUN:   | mlir-opt --verify-each | FileCheck %s --check-prefix=LOOPS
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu=fusion=none \
// RUN:   | mlir-opt --verify-each | FileCheck %s --check-prefix=LLVM
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu \
// RUN:   | mlir-opt --verify-each | FileCheck %s --check-prefix=FUSED
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="checked=true emit-c-interface=true" \
// RUN:   | mlir-opt --verify-each | FileCheck %s --check-prefix=CIFACE

// One loop nest (outer scf.parallel over token and head, inner over 16-byte
// chunks) per op: 4 convs and 4 inserts. Every stream of the real layout is
// 8-aligned: 44 vector accesses, all with alignment 16 (per conv: 1 weight
// load, 3 history and 3 in-step tap loads, x[t], the store; per insert: a
// load and a store), and no scalar access to bf16 data.
// LOOPS-LABEL: func.func @decoder_layer
// LOOPS-COUNT-8: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}, %c8) step
// LOOPS-NOT:     sconv.
// LOOPS-NOT:     memref.load {{.*}}xbf16
// LOOPS-NOT:     memref.store {{.*}}xbf16

// LLVM-NOT: __truncsfbf2
// LLVM-NOT: llvm.fptrunc
// LLVM-NOT: llvm.fpext
// LLVM-LABEL: llvm.func @decoder_layer
// LLVM-NOT: llvm.intr.fmuladd
// LLVM-COUNT-32: llvm.intr.fma
// LLVM-NOT: __truncsfbf2

// With the default fusion (one fused_conv of the four streams, and_insert;
// one inner loop per stream on the CPU) the same arithmetic: no libgcc
// call, no fmuladd. The 16 fmas of the four chains: 5 times in the
// token-run form for prefill-sized steps (the 4 unrolled tokens of a whole
// run, and the token loop of a partial one), 9 times in the decode-run form
// of the other steps (its whole runs twice: taps read from the cache
// unselected, or selected; and the partial run's loop); each form twice
// (the copy with streaming stores; the decode-run form's streams only its
// cache rows): 2 x (5 + 9) x 16.
// FUSED-NOT: __truncsfbf2
// FUSED-LABEL: llvm.func @decoder_layer
// FUSED-NOT: llvm.intr.fmuladd
// FUSED-COUNT-448: llvm.intr.fma
// FUSED-NOT: llvm.intr.fma
// FUSED-NOT: __truncsfbf2

// CIFACE: llvm.func @_mlir_ciface_decoder_layer
