// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true decode-runs=true" --canonicalize | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true decode-runs=true" --canonicalize | FileCheck %s --check-prefix=BOTH
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true decode-runs=true checked=true" --canonicalize | FileCheck %s --check-prefix=CHECKED
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true decode-runs=true even-odd-lanes=true avx512-bf16=true" --canonicalize | FileCheck %s --check-prefix=X86

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// decode-runs (the CPU's form of the steps that are not prefill): a nest
// over (run of 4 consecutive tokens, head). A whole run first computes each
// token's sequence and taps' sources (block-table loads), then per 32 channels loads the
// weights (32 channels x 4 taps) once and walks the 4 tokens unrolled: each
// token's x (a 64-byte line), its taps from x, the cache row or 0, the fma
// chain of the (token, head) nest (acc = 0, taps 0..3 in order) and one
// 64-byte line store marked inkling.line_aligned and inkling.cached_store
// (the next op reads it); when every token is live and every tap a history
// row, the 4 tokens' loads all come before their stores
// (conv-decode-runs-insert.mlir). The step's last, partial run loops over its
// tokens, the weights per token. The nest streams its other stores (cache
// rows) at every size: inkling.stream_min_iterations = 1.
// CHECK-LABEL: func @conv_real
// CHECK:         %[[RUNS:.+]] = arith.ceildivui %{{.+}}, %c4 : index
// CHECK:         scf.parallel (%[[R:.+]], %[[H:.+]]) = (%c0, %c0) to (%[[RUNS]], %c8)
// CHECK:           %[[T0:.+]] = arith.muli %[[R]], %c4 : index
// CHECK:           %[[WHOLE:.+]] = arith.cmpi eq, %{{.+}}, %c4 : index
// CHECK:           scf.if %[[WHOLE]] {
// CHECK:             memref.load %arg3
// CHECK:             %[[T1:.+]] = arith.addi %[[T0]], %c1 : index
// CHECK:             scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK:               vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// CHECK-NOT:           memref<16384xbf16>
// CHECK:               vector.load %arg5[%[[T0]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:               vector.load %reinterpret_cast[%{{.+}}, %[[H]], %{{.+}}, %{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:           memref<16384xbf16>
// CHECK-NOT:           vector.store
// CHECK:               vector.load %arg5[%[[T1]], %{{.+}}]
// CHECK-NOT:           vector.store
// CHECK:               %[[A0:.+]] = math.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK:               %[[A1:.+]] = math.fma %{{.+}}, %{{.+}}, %[[A0]] : vector<32xf32>
// CHECK:               %[[A2:.+]] = math.fma %{{.+}}, %{{.+}}, %[[A1]] : vector<32xf32>
// CHECK:               math.fma %{{.+}}, %{{.+}}, %[[A2]] : vector<32xf32>
// CHECK:               vector.store %{{.+}}, %arg7[%[[T0]], %{{.+}}] {alignment = 16 : i64, inkling.cached_store, inkling.line_aligned} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK-NOT:           memref<16384xbf16>
// CHECK-NOT:           vector.load
// CHECK:               vector.store %{{.+}}, %arg7[%[[T1]], %{{.+}}] {alignment = 16 : i64, inkling.cached_store, inkling.line_aligned}
// CHECK:           } else {
// CHECK:             scf.for %[[T:.+]] = %[[T0]] to %{{.+}} step %c1 {
// CHECK:               scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK:                 vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// CHECK:                 vector.load %arg5[%[[T]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:         } {inkling.stream_min_iterations = 1 : i64}
// CHECK:         return

// With token-runs too: prefill steps take the token-run nest, the others
// the decode-run nest.
// BOTH-LABEL: func @conv_real
// BOTH:         %[[PREFILL:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// BOTH:         scf.if %[[PREFILL]] {
// BOTH:         } else {
// BOTH:           arith.ceildivui %{{.+}}, %c4 : index
// BOTH:           scf.parallel
// BOTH:             vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// BOTH:         return

// avx512-bf16: each output line's 32 f32 lanes (even-odd order) are
// classified per half by vfpclassps (QNaN | denormal | SNaN = 0xa1 = 161);
// a line with such a lane takes the software rounding (the bits' round to
// nearest even, NaN -> 0x7fc0), the others one vcvtne2ps2bf16 (its first
// operand the high half) and the interleave back to channel order.
// X86-LABEL: func @conv_real
// X86:         %[[CLASSES:.+]] = llvm.mlir.constant(161 : i32) : i32
// X86:         %[[ACC:.+]] = arith.addf %{{.+}}, %{{.+}} : vector<32xf32>
// X86-NEXT:    %[[LOW:.+]] = vector.shuffle %[[ACC]], %[[ACC]] [0, 1, {{.*}}, 15] : vector<32xf32>, vector<32xf32>
// X86-NEXT:    %[[HIGH:.+]] = vector.shuffle %[[ACC]], %[[ACC]] [16, 17, {{.*}}, 31] : vector<32xf32>, vector<32xf32>
// X86-NEXT:    %[[CL:.+]] = llvm.call_intrinsic "llvm.x86.avx512.fpclass.ps.512"(%[[LOW]], %[[CLASSES]]) : (vector<16xf32>, i32) -> vector<16xi1>
// X86-NEXT:    %[[CH:.+]] = llvm.call_intrinsic "llvm.x86.avx512.fpclass.ps.512"(%[[HIGH]], %[[CLASSES]])
// X86-NEXT:    %[[C:.+]] = arith.ori %[[CL]], %[[CH]] : vector<16xi1>
// X86-NEXT:    %[[ANY:.+]] = vector.reduction <or>, %[[C]] : vector<16xi1> into i1
// X86-NEXT:    %[[OUT:.+]] = scf.if %[[ANY]] -> (vector<32xbf16>) {
// X86:           arith.cmpf une
// X86:           arith.select
// X86:           vector.bitcast %{{.+}} : vector<16xi32> to vector<32xbf16>
// X86:         } else {
// X86-NEXT:      %[[P:.+]] = llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"(%[[HIGH]], %[[LOW]]) : (vector<16xf32>, vector<16xf32>) -> vector<32xbf16>
// X86-NEXT:      %[[I:.+]] = vector.shuffle %[[P]], %[[P]] [0, 16, 1, 17, {{.*}}, 15, 31]
// X86-NEXT:      scf.yield %[[I]]
// X86:         vector.store %[[OUT]], %arg7{{.*}}inkling.cached_store
// X86:         return

// Checked convs keep the (token, head) nest (its history taps check and
// report per chunk): no runs, no 64-byte lines of x.
// CHECKED-LABEL: func @conv_real
// CHECKED-NOT:   arith.ceildivui
// CHECKED-NOT:   memref<?x4096xbf16>, vector<32xbf16>
// CHECKED:       return
func.func @conv_real(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                     %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                     %slots: memref<?xi64>, %x: memref<?x4096xbf16>,
                     %w: memref<4096x4xbf16>, %y: memref<?x4096xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %x, %w history %cache[attn] layout #real step %step into %y
      : memref<?x4096xbf16>, memref<4096x4xbf16>, !cache -> memref<?x4096xbf16>
  return
}
