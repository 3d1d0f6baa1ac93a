// RUN: inkling-opt %s --sconv-lower-to-loops --canonicalize | FileCheck %s

// sconv.insert -> scf.parallel (token, head) { scf.parallel (16-byte chunk) }.

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
// widths 3 (k, v), 5 (attn, mlp) at offsets 0, 3, 6, 11; D = 16, N = 2.
#odd = #sconv.layout<kv_heads = 2, head_dim = 3, hidden = 10, kernel = 2, tp = 1>

// The real layout's k stream: 16 aligned chunks of 8, the block stride of
// the bound (padded) page, slots < 0 skipped.
// CHECK-LABEL: func @insert_real
// CHECK-SAME:    %{{[a-z0-9]+}}: memref<?xi8>, %[[QSL:[a-z0-9]+]]: memref<?xi32>
// CHECK-DAG:     %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG:     %[[C0_I64:.+]] = arith.constant 0 : i64
// CHECK:         %[[VIEW:.+]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xbf16>
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast %[[VIEW]] to offset: [0], sizes: [%{{.*}}, 8, 4, 2048], strides: [69632, 8192, 2048, 1]
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}})
// CHECK:           %[[SLOT:.+]] = memref.load %{{.*}}[%[[T]]] : memref<?xi64>
// CHECK:           %[[STORED:.+]] = arith.cmpi sge, %[[SLOT]], %[[C0_I64]] : i64
// CHECK:           %[[IDX:.+]] = arith.index_cast %[[SLOT]] : i64 to index
// CHECK:           %[[BLOCK:.+]] = arith.shrui %[[IDX]], %{{.*}} : index
// CHECK:           %[[ROW:.+]] = arith.andi %[[IDX]], %{{.*}} : index
// A padding token (t >= qsl[B], the last entry of qsl) stores nothing.
// CHECK:           %[[LASTIDX:.+]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK:           %[[REALTOKENS:.+]] = memref.load %[[QSL]][%[[LASTIDX]]] : memref<?xi32>
// CHECK:           %[[REALIDX:.+]] = arith.index_cast %[[REALTOKENS]] : i32 to index
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %[[REALIDX]] : index
// CHECK:           %[[VALID:.+]] = arith.andi %[[STORED]], %[[REAL]] : i1
// CHECK:           scf.parallel (%[[CHUNK:.+]]) = (%{{.*}}) to (%[[C16]])
// CHECK:             scf.if %[[VALID]] {
// CHECK:               %[[COL:.+]] = arith.muli %[[CHUNK]], %{{.*}} : index
// CHECK:               %[[V:.+]] = vector.load %{{.*}}[%[[T]], %[[H]], %[[COL]]] {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK:               vector.store %[[V]], %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x8x4x2048xbf16, strided<[69632, 8192, 2048, 1]>>, vector<8xbf16>
// CHECK-NOT:     sconv.
func.func @insert_real(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                       %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                       %slots: memref<?xi64>, %k: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 139264
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[69632, 8192, 2048, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #real step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[69632, 8192, 2048, 1]>>
  return
}

// A dynamic block stride (a cache that is not visibly bound) and a token
// stride that is not static: still vectors, but no alignment is claimed. The
// mlp stream of the real layout starts at 768, [T, H*w] input.
// CHECK-LABEL: func @insert_unknown_strides
// CHECK:         vector.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x4096xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
// CHECK:         vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, vector<8xbf16>
func.func @insert_unknown_strides(
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
    %qsl: memref<?xi32>, %nc: memref<?xi32>, %bt: memref<?x?xi32>,
    %slots: memref<?xi64>, %mlp: memref<?x4096xbf16, strided<[?, 1], offset: ?>>) {
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %mlp into %cache[mlp] layout #real step %step
      : memref<?x4096xbf16, strided<[?, 1], offset: ?>>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// A memref.cast to a dynamic block stride keeps the bound strides visible
// (here the cast also folds away).
// CHECK-LABEL: func @insert_through_cast
// CHECK:         vector.store %{{.*}} {alignment = 16 : i64} : memref<?x8x4x2048xbf16, strided<[{{.*}}, 8192, 2048, 1]>>, vector<8xbf16>
func.func @insert_through_cast(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                               %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                               %slots: memref<?xi64>, %v: memref<?x8x128xbf16>) {
  %bound = sconv.bind %buffer layout #real page_bytes 131072
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  %cache = memref.cast %bound : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
      to memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %v into %cache[v] layout #real step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// Widths below 8: a single chunk (its one-iteration loop folds away) whose
// scalar loop covers the stream; the cache column is offset + c (attn at 6).
// CHECK-LABEL: func @insert_scalar_tail
// CHECK-DAG:     %[[C5:.+]] = arith.constant 5 : index
// CHECK-DAG:     %[[C6:.+]] = arith.constant 6 : index
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:             scf.if
// CHECK:               scf.for %[[C:.+]] = %{{.*}} to %[[C5]]
// CHECK:                 %[[X:.+]] = memref.load %{{.*}}[%[[T]], %[[H]], %[[C]]] : memref<?x2x5xbf16>
// CHECK:                 %[[COL:.+]] = arith.addi %[[C]], %[[C6]] : index
// CHECK:                 memref.store %[[X]], %{{.*}}[%{{.*}}, %[[H]], %{{.*}}, %[[COL]]] : memref<?x2x2x16xbf16, strided<[67, 32, 16, 1]>>
// CHECK-NOT:     vector.
func.func @insert_scalar_tail(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                              %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                              %slots: memref<?xi64>, %attn: memref<?x2x5xbf16>) {
  %cache = sconv.bind %buffer layout #odd page_bytes 134
      : memref<?xi8> -> memref<?x2x2x16xbf16, strided<[67, 32, 16, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %attn into %cache[attn] layout #odd step %step
      : memref<?x2x5xbf16>, memref<?x2x2x16xbf16, strided<[67, 32, 16, 1]>>
  return
}

// Width 10 at offset 26 (head_dim 8, hidden 20, kv_heads 2: mlp): one vector
// chunk and a 2-channel scalar tail. Neither the input rows (10 wide) nor
// the cache column 26 are multiples of 8, only of 2: 4 bytes are claimed,
// never 16.
// CHECK-LABEL: func @insert_vector_and_tail
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.+]] = arith.constant 2 : index
// CHECK:         scf.parallel (%[[CHUNK:.+]]) = (%{{.*}}) to (%[[C2]])
// CHECK:           scf.if
// CHECK:             %[[TAIL:.+]] = arith.cmpi eq, %[[CHUNK]], %[[C1]] : index
// CHECK:             scf.if %[[TAIL]] {
// CHECK:               scf.for
// CHECK:                 memref.load
// CHECK:                 memref.store
// CHECK:             } else {
// CHECK:               vector.load %{{.*}}] {alignment = 4 : i64} : memref<?x2x10xbf16>, vector<8xbf16>
// CHECK:               vector.store %{{.*}}] {alignment = 4 : i64} : memref<?x2x2x64xbf16, strided<[256, 128, 64, 1]>>, vector<8xbf16>
func.func @insert_vector_and_tail(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                                  %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                                  %slots: memref<?xi64>, %mlp: memref<?x2x10xbf16>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 20, kernel = 2, tp = 1> page_bytes 512
      : memref<?xi8> -> memref<?x2x2x64xbf16, strided<[256, 128, 64, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %mlp into %cache[mlp] layout #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 20, kernel = 2, tp = 1> step %step
      : memref<?x2x10xbf16>, memref<?x2x2x64xbf16, strided<[256, 128, 64, 1]>>
  return
}
