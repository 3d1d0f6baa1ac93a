// RUN: inkling-opt %s --sconv-lower-to-loops --canonicalize --cse | FileCheck %s

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
// widths 3 (k, v), 5 (attn, mlp) at offsets 0, 3, 6, 11; raw 16 = D, N = 2.
#odd = #sconv.layout<kv_heads = 2, head_dim = 3, hidden = 10, kernel = 2, tp = 1>
!ocache = memref<?x2x2x16xbf16, strided<[67, 32, 16, 1]>>

// All four streams of the real layout, given in any order: one nest; the
// inner loop runs over the 16 + 16 + 64 + 64 = 160 chunks of the row in row
// order (k, v, attn, mlp; dispatched by comparisons against 16, 32, 96),
// one aligned 16-byte load and store per chunk at column offset + 8 * c':
// the row [0, 1280) exactly, never the padding [1280, 2048).
// CHECK-LABEL: func @packed_real
// CHECK-SAME:    %[[K:[a-z0-9]+]]: memref<?x8x128xbf16>, %[[V:[a-z0-9]+]]: memref<?x8x128xbf16>, %[[A:[a-z0-9]+]]: memref<?x4096xbf16>, %[[M:[a-z0-9]+]]: memref<?x4096xbf16>
// CHECK-DAG:     %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG:     %[[C96:.+]] = arith.constant 96 : index
// CHECK-DAG:     %[[C160:.+]] = arith.constant 160 : index
// CHECK-DAG:     %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[C768:.+]] = arith.constant 768 : index
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[SLOT:.+]] = memref.load
// CHECK:           %[[STORED:.+]] = arith.cmpi sge, %[[SLOT]]
// CHECK:           %[[BLOCK:.+]] = arith.shrui
// CHECK:           %[[ROW:.+]] = arith.andi
// CHECK:           %[[VALID:.+]] = arith.andi %[[STORED]], %{{.*}} : i1
// CHECK:           scf.parallel (%[[CH:.+]]) = (%{{.*}}) to (%[[C160]])
// CHECK:             arith.cmpi slt, %[[CH]], %[[C16]]
// CHECK:               scf.if %[[VALID]]
// CHECK:                 %[[COLK:.+]] = arith.muli %[[CH]]
// CHECK:                 %[[XK:.+]] = vector.load %[[K]][%[[T]], %[[H]], %[[COLK]]] {alignment = 16 : i64}
// CHECK:                 vector.store %[[XK]], %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %[[COLK]]] {alignment = 16 : i64}
// CHECK:             arith.cmpi slt, %[[CH]], %[[C32]]
// CHECK:                 vector.load %[[V]]
// CHECK:                 %[[COLV:.+]] = arith.addi %{{.*}}, %[[C128]]
// CHECK:                 vector.store %{{.*}}, %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %[[COLV]]] {alignment = 16 : i64}
// CHECK:             arith.cmpi slt, %[[CH]], %[[C96]]
// CHECK:                 vector.load %[[A]]
// CHECK:                 %[[COLA:.+]] = arith.addi %{{.*}}, %[[C256]]
// CHECK:                 vector.store %{{.*}}, %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %[[COLA]]] {alignment = 16 : i64}
// CHECK:               arith.subi %[[CH]], %[[C96]]
// CHECK:                 vector.load %[[M]]
// CHECK:                 %[[COLM:.+]] = arith.addi %{{.*}}, %[[C768]]
// CHECK:                 vector.store %{{.*}}, %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %[[COLM]]] {alignment = 16 : i64}
// CHECK-NOT:     vector.store
// CHECK-NOT:     memref.store
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @packed_real(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                       %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                       %slots: memref<?xi64>,
                       %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                       %a: memref<?x4096xbf16>, %m: memref<?x4096xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert_packed %m, %k, %a, %v into %cache[mlp, k, attn, v] layout #real step %step
      : !cache, memref<?x4096xbf16>, memref<?x8x128xbf16>, memref<?x4096xbf16>, memref<?x8x128xbf16>
  return
}

// Streams of odd widths: chunk 0 is v's (3 channels at column 3), chunk 1
// mlp's (5 at column 11), each a scalar loop; nothing else is written.
// CHECK-LABEL: func @packed_odd
// CHECK-DAG:     %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG:     %[[C5:.+]] = arith.constant 5 : index
// CHECK-DAG:     %[[C11:.+]] = arith.constant 11 : index
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK:           scf.parallel (%[[CH:.+]]) = (%{{.*}}) to (%c2)
// CHECK:             scf.for %[[C:.+]] = %{{.*}} to %[[C3]]
// CHECK:               %[[COL:.+]] = arith.addi %[[C]], %[[C3]]
// CHECK:               memref.store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[COL]]]
// CHECK:             scf.for %[[C2:.+]] = %{{.*}} to %[[C5]]
// CHECK:               %[[COL2:.+]] = arith.addi %[[C2]], %[[C11]]
// CHECK:               memref.store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[COL2]]]
// CHECK-NOT:     memref.store
// CHECK-NOT:     vector.store
// CHECK:         return
func.func @packed_odd(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                      %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                      %slots: memref<?xi64>,
                      %v: memref<?x2x3xbf16>, %m: memref<?x10xbf16>) {
  %cache = sconv.bind %buffer layout #odd page_bytes 134 : memref<?xi8> -> !ocache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert_packed %v, %m into %cache[v, mlp] layout #odd step %step
      : !ocache, memref<?x2x3xbf16>, memref<?x10xbf16>
  return
}

// K and V convs with their inserts: one nest, the inner loop over 16 + 16
// chunks; per chunk x[t] is loaded once and feeds the cache store (only
// for slot >= 0), the last tap and the residual.
// CHECK-LABEL: func @fused_kv_insert
// CHECK-SAME:    %[[K:[a-z0-9]+]]: memref<?x8x128xbf16>, %[[V:[a-z0-9]+]]: memref<?x8x128xbf16>, %{{[a-z0-9]+}}: memref<1024x4xbf16>, %{{[a-z0-9]+}}: memref<1024x4xbf16>, %[[YK:[a-z0-9]+]]: memref<?x8x128xbf16>, %[[YV:[a-z0-9]+]]: memref<?x8x128xbf16>
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECK:           scf.while
// CHECK:           %[[SLOT:.+]] = memref.load %{{.*}}[%[[T]]] : memref<?xi64>
// CHECK:           %[[STORED:.+]] = arith.cmpi sge, %[[SLOT]]
// CHECK:           %[[VALID:.+]] = arith.andi %[[STORED]], %[[REAL]] : i1
// CHECK:           scf.parallel (%[[CH:.+]]) = (%{{.*}}) to (%c32)
// CHECK:             %[[XK:.+]] = vector.load %[[K]][%[[T]], %[[H]], %[[COL:.+]]] {alignment = 16 : i64}
// CHECK-NEXT:        scf.if %[[REAL]] {
// CHECK:               scf.if %[[VALID]] {
// CHECK-NEXT:            vector.store %[[XK]], %[[CACHE]][%{{.*}}, %[[H]], %{{.*}}, %[[COL]]] {alignment = 16 : i64}
// CHECK-NEXT:          }
// CHECK-NEXT:          %[[XKF:.+]] = arith.extf %[[XK]]
// CHECK:             %[[ACC:.+]] = math.fma %{{.*}}, %[[XKF]], %{{.*}}
// CHECK-NEXT:        %[[RES:.+]] = arith.addf %[[ACC]], %[[XKF]]
// CHECK:             vector.store %{{.*}}, %[[YK]][%[[T]], %[[H]], %[[COL]]]
// CHECK:           } else {
// CHECK:             %[[XV:.+]] = vector.load %[[V]][%[[T]], %[[H]], %[[COLV:.+]]] {alignment = 16 : i64}
// CHECK-NEXT:        scf.if %[[REAL]] {
// CHECK:               scf.if %[[VALID]] {
// CHECK-NEXT:          %[[CV:.+]] = arith.addi %[[COLV]], %c128
// CHECK-NEXT:          vector.store %[[XV]], %[[CACHE]][%{{.*}}, %[[H]], %{{.*}}, %[[CV]]] {alignment = 16 : i64}
// CHECK:             vector.store %{{.*}}, %[[YV]][%[[T]], %[[H]], %[[COLV]]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @fused_kv_insert(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
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

// Without and_insert the fused conv never writes the cache: per stream one
// output store for a real token and one (y = x) for a padding token.
// CHECK-LABEL: func @fused_kv(
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%c32)
// CHECK-NOT:     vector.store %{{.*}}, %reinterpret_cast
// CHECK-COUNT-4: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK-NOT:     vector.store
// CHECK:         return
func.func @fused_kv(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
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
      step %step into %yk, %yv
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}
