// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true decode-runs=true" --canonicalize | FileCheck %s

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// A whole decode run whose tokens are live and whose taps are all history
// rows: each 64-byte line's loads of the 4 tokens (x, then its 3 history
// rows) come before any of its stores (the slot rows of and_insert, the
// outputs). A slot row is the same column 4 KiB (D = 2048 bf16) from the
// token's history rows, and history loads issued after the slot store ran
// slower (docs/fusion.md). Each slot store keeps its validity test.
// CHECK-LABEL: func @kv_insert
// CHECK:         scf.parallel (%{{.+}}, %[[H:.+]]) =
// The whole run's branch for such tokens holds the nest's first loop (the
// K stream's lines).
// CHECK:             scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK:               vector.load %{{.+}} : memref<4096xbf16>, vector<128xbf16>
// CHECK-NOT:           vector.store
// CHECK:               %[[X0:.+]] = vector.load %arg5[%[[T0:.+]], %[[H]], %[[C:.+]]] {{.*}} vector<32xbf16>
// CHECK-COUNT-3:       vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:           vector.store
// CHECK:               %[[X1:.+]] = vector.load %arg5[%[[T1:.+]], %[[H]], %[[C]]]
// CHECK-COUNT-3:       vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:           vector.store
// CHECK:               %[[X2:.+]] = vector.load %arg5[%[[T2:.+]], %[[H]], %[[C]]]
// CHECK-COUNT-3:       vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:           vector.store
// CHECK:               %[[X3:.+]] = vector.load %arg5[%[[T3:.+]], %[[H]], %[[C]]]
// CHECK-COUNT-3:       vector.load %reinterpret_cast[{{.+}}] {{.*}} vector<32xbf16>
// CHECK-NOT:           vector.store
// CHECK-COUNT-16:      math.fma
// CHECK-NOT:           vector.load
// CHECK:               scf.if %{{.+}} {
// CHECK-NEXT:            vector.store %[[X0]], %reinterpret_cast
// CHECK:               vector.store %{{.+}}, %arg9[%[[T0]], %[[H]], %[[C]]] {{.*}}inkling.cached_store
// CHECK-NEXT:          scf.if %{{.+}} {
// CHECK-NEXT:            vector.store %[[X1]], %reinterpret_cast
// CHECK:               vector.store %{{.+}}, %arg9[%[[T1]], %[[H]], %[[C]]]
// CHECK-NEXT:          scf.if %{{.+}} {
// CHECK-NEXT:            vector.store %[[X2]], %reinterpret_cast
// CHECK:               vector.store %{{.+}}, %arg9[%[[T2]], %[[H]], %[[C]]]
// CHECK-NEXT:          scf.if %{{.+}} {
// CHECK-NEXT:            vector.store %[[X3]], %reinterpret_cast
// CHECK:               vector.store %{{.+}}, %arg9[%[[T3]], %[[H]], %[[C]]]
// CHECK-NEXT:        {{^ +}}}{{$}}
// The V stream's lines: the same order.
// CHECK-NEXT:        scf.for
// CHECK-NOT:           vector.store
// CHECK:               vector.load %arg6[
// CHECK:         return
func.func @kv_insert(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                     %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                     %slots: memref<?xi64>,
                     %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                     %wk: memref<1024x4xbf16>, %wv: memref<1024x4xbf16>,
                     %yk: memref<?x8x128xbf16>, %yv: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.fused_conv %k, %v weights %wk, %wv history %cache[k, v] layout #real
      step %step into %yk, %yv and_insert
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}
