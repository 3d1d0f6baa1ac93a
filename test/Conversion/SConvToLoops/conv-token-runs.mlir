// RUN: inkling-opt %s --sconv-lower-to-loops="hoist-taps=true token-runs=true" --canonicalize | FileCheck %s
// RUN: inkling-opt %s --sconv-lower-to-loops="hoist-taps=true token-runs=true checked=true" --canonicalize | FileCheck %s --check-prefix=CHECKED

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// token-runs (the CPU's form): when the step's real tokens are at least
// kernel x its sequences, a nest over (run of 4 tokens, head); per sequence
// in the run and 32 channels, the weights (32 channels x 4 taps) loaded
// once, the window of the 3 inputs before the run's first token of the
// sequence (x, else the cache row or 0), then a token loop that carries the
// window and loads x[t] once. The fma chain is the (token, head) nest's
// (acc = 0, taps 0..3 in order). Else the (token, head) nest.
// CHECK-LABEL: func @conv_real
// CHECK:         %[[PREFILL:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK:         scf.if %[[PREFILL]] {
// CHECK:           scf.parallel (%{{.+}}, %[[H:.+]]) = (%c0, %c0) to (%{{.+}}, %c8)
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 {
// CHECK:               scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK:                 vector.load %{{.+}} : memref<16384xbf16>, vector<128xbf16>
// CHECK:                 scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step %c1 iter_args(%[[W0:.+]] = %{{.+}}, %[[W1:.+]] = %{{.+}}, %[[W2:.+]] = %{{.+}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>) {
// CHECK-NOT:               memref<?x?xi32>
// CHECK:                   vector.load %arg5[%[[T]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK-NOT:               vector.load
// CHECK:                   %[[A0:.+]] = math.fma %{{.+}}, %[[W0]], %{{.+}} : vector<32xf32>
// CHECK:                   %[[A1:.+]] = math.fma %{{.+}}, %[[W1]], %[[A0]] : vector<32xf32>
// CHECK:                   %[[A2:.+]] = math.fma %{{.+}}, %[[W2]], %[[A1]] : vector<32xf32>
// CHECK:                   %[[A3:.+]] = math.fma %{{.+}}, %[[X:.+]], %[[A2]] : vector<32xf32>
// CHECK:                   vector.store %{{.+}}, %arg7[%[[T]], %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<32xbf16>
// CHECK:                   scf.yield %[[W1]], %[[W2]], %[[X]] : vector<32xf32>, vector<32xf32>, vector<32xf32>
// CHECK:         } else {
// CHECK:           scf.parallel (%{{.+}}, %{{.+}}) =
// CHECK-NOT:         vector<32xf32>
// CHECK:         return

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
