// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true" --canonicalize | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true checked=true" --canonicalize | FileCheck %s --check-prefix=CHECKED
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true even-odd-lanes=true" --canonicalize | FileCheck %s --check-prefix=EVENODD

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// token-runs (the CPU's form): when the step's real tokens are at least
// kernel x its sequences, a nest over (run of 4 tokens, head); per sequence
// in the run and 32 channels, the weights (32 channels x 4 taps) loaded
// once, the window of the 3 inputs before the run's first token of the
// sequence (x, else the cache row or 0), then the tokens, each x[t] loaded
// once. When the run's 4 tokens are all of the sequence (a long prefill)
// they are unrolled: the second token's chain reads the first's input as
// its tap 2. Else a token loop carries the window. The fma chain is the
// (token, head) nest's (acc = 0, taps 0..3 in order). Each output row is
// one 64-byte line store marked inkling.line_aligned (the layout proves its
// offset a multiple of 64 bytes from the base). Else the (token, head) nest.
// CHECK-LABEL: func @conv_real
// CHECK:         %[[PREFILL:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK:         scf.if %[[PREFILL]] {
// CHECK:           scf.parallel (%{{.+}}, %[[H:.+]]) = (%c0, %c0) to (%{{.+}}, %c8)
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 {
// CHECK:               %[[S:.+]] = arith.maxui
// CHECK:               %[[E:.+]] = arith.minui
// CHECK:               %[[LEN:.+]] = arith.subi %[[E]], %[[S]] : index
// CHECK:               %[[WHOLE:.+]] = arith.cmpi eq, %[[LEN]], %c4 : index
// CHECK:               scf.if %[[WHOLE]] {
// CHECK:                 scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK:                   vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// CHECK:                   arith.subi %[[S]], %c3 : index
// CHECK-NEXT:              arith.cmpi sge
// CHECK-NEXT:              %[[U0:.+]] = scf.if %{{.+}} -> (vector<32xf32>) {
// CHECK:                   arith.subi %[[S]], %c2 : index
// CHECK-NEXT:              arith.cmpi sge
// CHECK-NEXT:              %[[U1:.+]] = scf.if %{{.+}} -> (vector<32xf32>) {
// CHECK:                   arith.subi %[[S]], %c1 : index
// CHECK-NEXT:              arith.cmpi sge
// CHECK-NEXT:              %[[U2:.+]] = scf.if %{{.+}} -> (vector<32xf32>) {
// CHECK:                   vector.load %arg5[%[[S]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:                   %[[X0:.+]] = arith.extf
// CHECK:                   math.fma %{{.+}}, %[[U0]], %{{.+}} : vector<32xf32>
// CHECK:                   vector.store %{{.+}}, %arg7[%[[S]], %{{.+}}] {alignment = 16 : i64, inkling.line_aligned} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:                   %[[S1:.+]] = arith.addi %[[S]], %c1 : index
// CHECK:                   vector.load %arg5[%[[S1]], %{{.+}}]
// CHECK:                   %[[B0:.+]] = math.fma %{{.+}}, %[[U1]], %{{.+}} : vector<32xf32>
// CHECK:                   %[[B1:.+]] = math.fma %{{.+}}, %[[U2]], %[[B0]] : vector<32xf32>
// CHECK:                   math.fma %{{.+}}, %[[X0]], %[[B1]] : vector<32xf32>
// CHECK:                   vector.store %{{.+}}, %arg7[%[[S1]], %{{.+}}] {alignment = 16 : i64, inkling.line_aligned}
// CHECK:                   arith.addi %[[S]], %c2 : index
// CHECK:                   arith.addi %[[S]], %c3 : index
// CHECK-NOT:               scf.for
// CHECK:               } else {
// CHECK:                 scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK:                   vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// CHECK:                   scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step %c1 iter_args(%[[W0:.+]] = %{{.+}}, %[[W1:.+]] = %{{.+}}, %[[W2:.+]] = %{{.+}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>) {
// CHECK-NOT:                 memref<?x?xi32>
// CHECK:                     vector.load %arg5[%[[T]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK-NOT:                 vector.load
// CHECK:                     %[[A0:.+]] = math.fma %{{.+}}, %[[W0]], %{{.+}} : vector<32xf32>
// CHECK:                     %[[A1:.+]] = math.fma %{{.+}}, %[[W1]], %[[A0]] : vector<32xf32>
// CHECK:                     %[[A2:.+]] = math.fma %{{.+}}, %[[W2]], %[[A1]] : vector<32xf32>
// CHECK:                     %[[A3:.+]] = math.fma %{{.+}}, %[[X:.+]], %[[A2]] : vector<32xf32>
// CHECK:                     vector.store %{{.+}}, %arg7[%[[T]], %{{.+}}] {alignment = 16 : i64, inkling.line_aligned} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:                     scf.yield %[[W1]], %[[W2]], %[[X]] : vector<32xf32>, vector<32xf32>, vector<32xf32>
// CHECK:         } else {
// CHECK:           scf.parallel (%{{.+}}, %{{.+}}) =
// CHECK-NOT:         vector<32xf32>
// CHECK-NOT:         inkling.line_aligned
// CHECK:         return

// even-odd-lanes: the same nest, each chunk's f32 lanes the even channels,
// then the odd ones. x[t] widens with a shift and a mask of its 32-bit
// words (no arith.extf), the weights' shuffles pick the lanes in that
// order (the first lane of tap 0 is word 0, channel 0; the 17th is word 2,
// channel 1), and the result is rounded on the words (nearest even, a NaN
// to 0x7fc0 = 32704) and packed with one or.
// EVENODD-LABEL: func @conv_real
// EVENODD:         scf.if %{{.+}} {
// EVENODD:           vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// EVENODD:           vector.shuffle %{{.+}}, %{{.+}} [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 2, 6, 10,
// EVENODD:           %[[XW:.+]] = vector.bitcast %{{.+}} : vector<32xbf16> to vector<16xi32>
// EVENODD:           %[[EV:.+]] = arith.shli %[[XW]], %{{.+}} : vector<16xi32>
// EVENODD:           %[[OD:.+]] = arith.andi %[[XW]], %{{.+}} : vector<16xi32>
// EVENODD:           math.fma
// EVENODD:           arith.addi %{{.+}}, %{{.+}} : vector<16xi32>
// EVENODD:           arith.cmpf une
// EVENODD:           arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<16xi1>, vector<16xi32>
// EVENODD:           %[[PACKED:.+]] = arith.ori %{{.+}}, %{{.+}} : vector<16xi32>
// EVENODD:           %[[OUT:.+]] = vector.bitcast %[[PACKED]] : vector<16xi32> to vector<32xbf16>
// EVENODD:           vector.store %[[OUT]], %arg7
// The (token, head) nest (over the step's tokens, not its runs) keeps the
// natural order.
// EVENODD:         scf.parallel ({{.+}}) = (%c0, %c0) to (%dim
// EVENODD-NOT:       arith.ori
// EVENODD:         return

// Checked mode keeps the (token, head) nest only.
// CHECKED-LABEL: func @conv_real
// CHECKED-NOT:     vector<32xf32>
// CHECKED:         return
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
