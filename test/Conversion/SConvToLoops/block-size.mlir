// RUN: inkling-opt %s --sconv-lower-to-loops --canonicalize | FileCheck %s

// Block sizes N independent of the kernel W = 4: slots and history taps are
// addressed through block_table[b][q / N], row q % N, with a shift and a mask
// when N is a power of two and a division otherwise. Small layout: H = 2,
// D = 32.

!cache16 = memref<?x2x16x32xbf16, strided<[1024, 512, 32, 1]>>
!cache3 = memref<?x2x3x32xbf16, strided<[192, 96, 32, 1]>>
!cache1 = memref<?x2x1x32xbf16, strided<[64, 32, 32, 1]>>
!cross = memref<?x2x16x32xbf16, strided<[3072, 512, 32, 1]>>

// N = 16: slot s stores into block s >> 4, row s & 15. The bind counts the
// blocks whose 2048-byte page lies inside the buffer.
// CHECK-LABEL: func @insert_n16
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[C15:.+]] = arith.constant 15 : index
// CHECK-DAG:     %[[C2048:.+]] = arith.constant 2048 : index
// CHECK:         %[[BYTES:.+]] = memref.dim %{{.*}}, %{{.*}} : memref<?xi8>
// CHECK:         %[[FITS:.+]] = arith.cmpi uge, %[[BYTES]], %[[C2048]] : index
// CHECK:         %[[REST:.+]] = arith.subi %[[BYTES]], %[[C2048]] : index
// CHECK:         %[[WHOLE:.+]] = arith.divui %[[REST]], %[[C2048]] : index
// CHECK:         %[[COUNT:.+]] = arith.addi %[[WHOLE]], %[[C1]] : index
// CHECK:         %[[BLOCKS:.+]] = arith.select %[[FITS]], %[[COUNT]], %{{.*}} : index
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%[[BLOCKS]], 2, 16, 32], strides: [1024, 512, 32, 1]
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[SLOT:.+]] = memref.load %{{.*}}[%[[T]]] : memref<?xi64>
// CHECK:           %[[IDX:.+]] = arith.index_cast %[[SLOT]] : i64 to index
// CHECK:           %[[BLOCK:.+]] = arith.shrui %[[IDX]], %[[C4]] : index
// CHECK:           %[[ROW:.+]] = arith.andi %[[IDX]], %[[C15]] : index
// CHECK:             vector.store %{{.*}}, %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %{{.*}}] {{.*}} : memref<{{.*}}>, vector<8xbf16>
func.func @insert_n16(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                      %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                      %slots: memref<?xi64>, %k: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 2, head_dim = 8,
      hidden = 16, kernel = 4, tp = 1, block_size = 16> page_bytes 2048
      : memref<?xi8> -> !cache16
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #sconv.layout<kv_heads = 2,
      head_dim = 8, hidden = 16, kernel = 4, tp = 1, block_size = 16>
      step %step : memref<?x2x8xbf16>, !cache16
  return
}

// N = 3 (not a power of two): a history tap at q < num_computed reads
// block_table[b][q / 3], row q % 3.
// CHECK-LABEL: func @conv_n3
// CHECK-DAG:     %[[C3:.+]] = arith.constant 3 : index
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[SEQ:.+]]:3 = scf.if %{{.*}} -> (index, index, index) {
// CHECK:             scf.while
// CHECK:                 %[[LOGICAL:.+]] = arith.divui %[[Q:.+]], %[[C3]] : index
// CHECK:                 %[[ROW:.+]] = arith.remui %[[Q]], %[[C3]] : index
// CHECK:                 %[[ID:.+]] = memref.load %{{.*}}[%[[SEQ]]#0, %[[LOGICAL]]] : memref<?x?xi32>
// CHECK:                 %[[BLOCK:.+]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:                 vector.load %[[CACHE]][%[[BLOCK]], %[[H]], %[[ROW]], %{{.*}}] {{.*}} : memref<{{.*}}>, vector<8xbf16>
// CHECK-NOT:     arith.shrui
func.func @conv_n3(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                   %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                   %slots: memref<?xi64>, %k: memref<?x2x8xbf16>,
                   %w: memref<16x4xbf16>, %y: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 2, head_dim = 8,
      hidden = 16, kernel = 4, tp = 1, block_size = 3> page_bytes 384
      : memref<?xi8> -> !cache3
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %w history %cache[k] layout #sconv.layout<kv_heads = 2,
      head_dim = 8, hidden = 16, kernel = 4, tp = 1, block_size = 3>
      step %step into %y
      : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache3 -> memref<?x2x8xbf16>
  return
}

// N = 1: every position is its own block (the shift by 0 and the mask 0
// fold away): the tap reads block_table[b][q], row 0.
// CHECK-LABEL: func @conv_n1
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[SEQ:.+]]:3 = scf.if %{{.*}} -> (index, index, index) {
// CHECK:             scf.while
// CHECK:               arith.cmpi slt, %[[Q:.+]], %[[C0]] : index
// CHECK-NOT:           arith.shrui
// CHECK-NOT:           arith.divui
// CHECK:                 %[[ID:.+]] = memref.load %{{.*}}[%[[SEQ]]#0, %[[Q]]] : memref<?x?xi32>
// CHECK:                 %[[BLOCK:.+]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:                 vector.load %[[CACHE]][%[[BLOCK]], %[[H]], %[[C0]], %{{.*}}] {{.*}} : memref<{{.*}}>, vector<8xbf16>
func.func @conv_n1(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                   %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                   %slots: memref<?xi64>, %k: memref<?x2x8xbf16>,
                   %w: memref<16x4xbf16>, %y: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 2, head_dim = 8,
      hidden = 16, kernel = 4, tp = 1, block_size = 1> page_bytes 128
      : memref<?xi8> -> !cache1
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %w history %cache[k] layout #sconv.layout<kv_heads = 2,
      head_dim = 8, hidden = 16, kernel = 4, tp = 1, block_size = 1>
      step %step into %y
      : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache1 -> memref<?x2x8xbf16>
  return
}

// Cross-layer pages: 3 layers' 2048-byte pages in a 6144-byte block stride;
// layer l's buffer starts l pages in, so its last block's page ends before
// the stride does: the count is (bytes - 2048) / 6144 + 1.
// CHECK-LABEL: func @bind_cross_layer
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2048:.+]] = arith.constant 2048 : index
// CHECK-DAG:     %[[C6144:.+]] = arith.constant 6144 : index
// CHECK:         %[[REST:.+]] = arith.subi %{{.*}}, %[[C2048]] : index
// CHECK:         %[[WHOLE:.+]] = arith.divui %[[REST]], %[[C6144]] : index
// CHECK:         %[[COUNT:.+]] = arith.addi %[[WHOLE]], %[[C1]] : index
// CHECK:         %[[BLOCKS:.+]] = arith.select %{{.*}}, %[[COUNT]], %{{.*}} : index
// CHECK:         memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%[[BLOCKS]], 2, 16, 32], strides: [3072, 512, 32, 1]
func.func @bind_cross_layer(%buffer: memref<?xi8>) -> !cross {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 2, head_dim = 8,
      hidden = 16, kernel = 4, tp = 1, block_size = 16> page_bytes 6144
      layers 3 : memref<?xi8> -> !cross
  return %cache : !cross
}
