// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true decode-runs=true" --canonicalize | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true decode-runs=true avx512-bf16=true" --canonicalize | FileCheck %s --check-prefix=X86

#l = #sconv.layout<kv_heads = 2, head_dim = 32, hidden = 64, kernel = 4, tp = 1>
!cache = memref<?x2x4x128xbf16, strided<[1024, 512, 128, 1]>>
!kv = memref<?x16x2x32xbf16, strided<[1024, 64, 32, 1]>>

// The decode form of the fused K/V op on the CPU (the steps that do not
// take the token-run nest): a nest over (run of 4 tokens, head). A whole
// run whose tokens are live and whose taps are all history rows walks its
// 4 rows together, as the prefill run form does: per 64-byte group the
// weights once, the 4 tokens' x and history rows loaded before any slot
// store (the slot row is the same column as the history rows, a multiple
// of 4 KiB away at the real layout), then their convs; K's rows staged in
// a [4, head_dim] stack buffer for their norms (4 roots), then scaled into
// the K cache; V's rows into the V cache. Other whole runs, and the step's
// last, partial run, go row by row.
// CHECK-LABEL: func.func @kv_decode
// CHECK:         } else {
// CHECK:           %[[RUNS:.+]] = arith.ceildivui %{{.+}}, %c4 : index
// CHECK:           scf.parallel (%{{.+}}, %[[H:.+]]) = (%c0, %c0) to (%[[RUNS]], %c2)
// CHECK:             %[[WHOLE:.+]] = arith.cmpi eq, %{{.+}}, %c4 : index
// CHECK:             scf.if %[[WHOLE]] {
// CHECK:               scf.if %{{[0-9]+}} {
// CHECK:                 memref.alloca() {{.*}} : memref<4x32xbf16>
// CHECK:                 vector.load %{{.+}} : memref<256xbf16>, vector<128xbf16>
// CHECK-NOT:             vector.store
// CHECK:                 %[[X0:.+]] = vector.load %arg5[%{{.+}}, %[[H]], %c0]
// CHECK-COUNT-3:         vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:             vector.store
// CHECK:                 %[[X1:.+]] = vector.load %arg5[%{{.+}}, %[[H]], %c0]
// CHECK-COUNT-3:         vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:             vector.store
// CHECK:                 %[[X2:.+]] = vector.load %arg5[%{{.+}}, %[[H]], %c0]
// CHECK-COUNT-3:         vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:             vector.store
// CHECK:                 %[[X3:.+]] = vector.load %arg5[%{{.+}}, %[[H]], %c0]
// CHECK-COUNT-3:         vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:             math.fma
// CHECK:                 scf.if
// CHECK-NEXT:              vector.store %[[X0]], %reinterpret_cast
// CHECK:                 scf.if
// CHECK-NEXT:              vector.store %[[X1]], %reinterpret_cast
// CHECK:                 scf.if
// CHECK-NEXT:              vector.store %[[X2]], %reinterpret_cast
// CHECK:                 scf.if
// CHECK-NEXT:              vector.store %[[X3]], %reinterpret_cast
// CHECK:                 math.fma
// CHECK-COUNT-4:         vector.store %{{.+}}, %alloca[
// CHECK-COUNT-4:         math.sqrt
// CHECK-COUNT-4:         vector.store %{{.+}}, %arg10[
// CHECK-COUNT-4:         vector.store %{{.+}}, %arg11[
// CHECK:               } else {
// CHECK:                 math.sqrt
// CHECK:             } else {
// CHECK:               scf.for
// CHECK:                 math.sqrt
// CHECK:         scf.reduce
// avx512-bf16: the decode nest rounds its 64-byte lines as the conv's
// decode-run nest does (conv-decode-runs.mlir): vcvtne2ps2bf16 unless a
// lane is a NaN or a denormal. In the whole run from the cache: K's 4
// convs, then (after the 4 roots) K's 4 normed rows, then V's 4 convs. The
// prefill nest (token runs) keeps the software rounding.
// X86-LABEL: func.func @kv_decode
// X86-NOT:     cvtne2ps2bf16
// X86:         } else {
// X86:           scf.parallel
// X86:             memref.alloca() {{.*}} : memref<4x32xbf16>
// X86-COUNT-4:     llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86-NOT:         math.sqrt
// X86-COUNT-4:     vector.store %{{.+}}, %alloca[
// X86-COUNT-4:     math.sqrt
// X86:             llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:             vector.store %{{.+}}, %arg10[
// X86:             llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:             vector.store %{{.+}}, %arg10[
// X86:             llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:             vector.store %{{.+}}, %arg10[
// X86:             llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:             vector.store %{{.+}}, %arg10[
// X86-NOT:         vector.store %{{.+}}, %arg11[
// X86-COUNT-4:     llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:             vector.store %{{.+}}, %arg11[
// The step's last, partial run token by token, by the same pieces (the
// conv's taps selected): K's conv, K's normed row, V's conv.
// X86:           scf.for %{{.+}} = %{{[0-9]+}} to %{{[0-9]+}} step %c1 {
// X86-COUNT-3:       llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"
// X86:           scf.reduce
func.func @kv_decode(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                     %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                     %k: memref<?x2x32xbf16>, %v: memref<?x2x32xbf16>,
                     %wk: memref<64x4xbf16>, %wv: memref<64x4xbf16>, %kn: memref<32xbf16>,
                     %kc: !kv, %vc: !kv, %aslots: memref<?xi64>) {
  %cache = sconv.bind %buffer layout #l page_bytes 2048 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.fused_conv_kv_write %k, %v weights %wk, %wv history %cache[k, v] layout #l
      step %step and_insert norm [true, false] (%kn : memref<32xbf16>) eps 1.0e-06
      into %kc, %vc slots %aslots
      : !cache, (memref<?x2x32xbf16>, memref<?x2x32xbf16>),
        (memref<64x4xbf16>, memref<64x4xbf16>) -> (!kv, !kv), memref<?xi64>
  return
}
