// RUN: inkling-opt %s --sconv-lower-to-loops --canonicalize | FileCheck %s

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// The real layout's attn stream ([T, H*w] form, offset 256): the sequence of
// the token by binary search over query_start_loc, its position p; per chunk
// the weights of 8 channels (one 32-element load, deinterleaved per tap), the
// taps in ascending order (q = p-3, p-2, p-1: in-step x, else 0 below
// position 0, else the cache through the block table; the last tap is x[t]),
// one math.fma per tap in that order starting from 0, the residual add, one
// truncf.
// CHECK-LABEL: func @conv_real
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         %[[W:.+]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<4096x4xbf16> into memref<16384xbf16>
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// A real token (t < qsl[B]) searches its sequence; a padding token reads no
// metadata, and its output is its input (the else branch per chunk).
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECK:           %[[META:.+]]:3 = scf.if %[[REAL]] -> (index, index, index) {
// CHECK:             %[[SEARCH:.+]]:2 = scf.while
// CHECK:             %[[START:.+]] = memref.load %{{.*}}[%[[SEARCH]]#0] : memref<?xi32>
// CHECK:             %[[NC:.+]] = memref.load %{{.*}}[%[[SEARCH]]#0] : memref<?xi32>
// CHECK:             scf.yield %[[SEARCH]]#0, %{{.*}}, %{{.*}} : index, index, index
// CHECK:           } else {
// CHECK:             scf.yield %{{.*}}, %{{.*}}, %{{.*}} : index, index, index
// CHECK:           scf.parallel (%[[CHUNK:.+]]) =
// CHECK:             %[[XT:.+]] = vector.load %{{.*}}[%[[T]], %{{.*}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:             scf.if %[[REAL]] {
// CHECK:             %[[WALL:.+]] = vector.load %[[W]][%{{.*}}] {alignment = 16 : i64} : memref<16384xbf16>, vector<32xbf16>
// CHECK:             %[[W0:.+]] = vector.shuffle %[[WALL]], %[[WALL]] [0, 4, 8, 12, 16, 20, 24, 28]
// CHECK:             %[[W0F:.+]] = arith.extf %[[W0]]
// CHECK:             %[[W1:.+]] = vector.shuffle %[[WALL]], %[[WALL]] [1, 5, 9, 13, 17, 21, 25, 29]
// CHECK:             %[[W1F:.+]] = arith.extf %[[W1]]
// CHECK:             %[[W2:.+]] = vector.shuffle %[[WALL]], %[[WALL]] [2, 6, 10, 14, 18, 22, 26, 30]
// CHECK:             %[[W2F:.+]] = arith.extf %[[W2]]
// CHECK:             %[[W3:.+]] = vector.shuffle %[[WALL]], %[[WALL]] [3, 7, 11, 15, 19, 23, 27, 31]
// CHECK:             %[[W3F:.+]] = arith.extf %[[W3]]
// CHECK:             %[[XTF:.+]] = arith.extf %[[XT]]
// Tap 0 (q = p - 3).
// CHECK:             %[[TAP0:.+]] = scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK:               vector.load %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:             } else {
// CHECK:               scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK:                 scf.yield %[[ZERO]]
// CHECK:               } else {
// CHECK:                 %[[LOGICAL:.+]] = arith.shrui
// CHECK:                 %[[ROW:.+]] = arith.andi
// CHECK:                 %[[COL:.+]] = arith.addi %{{.*}}, %[[C256]]
// CHECK:                 %[[BLOCK:.+]] = memref.load %{{.*}}[%[[META]]#0, %[[LOGICAL]]] : memref<?x?xi32>
// CHECK:                 %[[BLOCKIDX:.+]] = arith.index_cast %[[BLOCK]]
// CHECK:                 vector.load %[[CACHE]][%[[BLOCKIDX]], %[[H]], %[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>, vector<8xbf16>
// CHECK:             %[[ACC0:.+]] = math.fma %[[W0F]], %[[TAP0]], %[[ZERO]] : vector<8xf32>
// CHECK:             %[[TAP1:.+]] = scf.if
// CHECK:             %[[ACC1:.+]] = math.fma %[[W1F]], %[[TAP1]], %[[ACC0]] : vector<8xf32>
// CHECK:             %[[TAP2:.+]] = scf.if
// CHECK:             %[[ACC2:.+]] = math.fma %[[W2F]], %[[TAP2]], %[[ACC1]] : vector<8xf32>
// CHECK-NEXT:        %[[ACC3:.+]] = math.fma %[[W3F]], %[[XTF]], %[[ACC2]] : vector<8xf32>
// CHECK-NEXT:        %[[RES:.+]] = arith.addf %[[ACC3]], %[[XTF]] : vector<8xf32>
// CHECK-NEXT:        %[[Y:.+]] = arith.truncf %[[RES]] : vector<8xf32> to vector<8xbf16>
// CHECK:             vector.store %[[Y]], %{{.*}}[%[[T]], %{{.*}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
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

// Bias, silu, no residual: the accumulator starts at the bias; silu is
// a * (1 / (1 + exp(-a))) in f32 (canonicalization puts the constant 1 on
// the right of the add), then the one truncf.
// CHECK-LABEL: func @conv_bias_silu
// CHECK:         %[[B:.+]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<1024xbf16>, vector<8xbf16>
// CHECK:         %[[BF:.+]] = arith.extf %[[B]]
// CHECK:         %[[ACC0:.+]] = math.fma %{{.*}}, %{{.*}}, %[[BF]] : vector<8xf32>
// CHECK:         math.fma
// CHECK:         math.fma
// CHECK:         %[[ACC:.+]] = math.fma
// CHECK-NEXT:    %[[NEG:.+]] = arith.negf %[[ACC]]
// CHECK-NEXT:    %[[E:.+]] = math.exp %[[NEG]]
// CHECK-NEXT:    %[[DEN:.+]] = arith.addf %[[E]], %{{.*}}
// CHECK-NEXT:    %[[SIG:.+]] = arith.divf %{{.*}}, %[[DEN]]
// CHECK-NEXT:    %[[S:.+]] = arith.mulf %[[ACC]], %[[SIG]]
// CHECK-NEXT:    arith.truncf %[[S]] : vector<8xf32> to vector<8xbf16>
func.func @conv_bias_silu(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                          %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                          %slots: memref<?xi64>, %x: memref<?x8x128xbf16>,
                          %w: memref<1024x4xbf16>, %b: memref<1024xbf16>,
                          %y: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %x, %w bias %b history %cache[k] layout #real step %step into %y
      activation silu {residual = false}
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !cache, memref<1024xbf16> -> memref<?x8x128xbf16>
  return
}

// Alignment from proof (issue 13's layout: kv_heads 4, head_dim 24, hidden
// 72, kernel 3; attn is 18 channels per head at column 48). The weights of
// head h start at element h*18*3: a multiple of 2 only, so the 24-element
// weight load claims 4 bytes; so do x (channel h*18 + c) and out. The cache
// column 48 + c and its static strides are multiples of 8: 16 bytes.
// CHECK-LABEL: func @conv_odd_widths
// CHECK:         vector.load %{{.*}}[%{{.*}}] {alignment = 4 : i64} : memref<216xbf16>, vector<24xbf16>
// CHECK:         vector.load %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<?x72xbf16>, vector<8xbf16>
// CHECK:         vector.load %{{.*}} {alignment = 16 : i64} : memref<?x4x3x128xbf16, strided<[1536, 384, 128, 1]>>, vector<8xbf16>
// CHECK:         vector.store %{{.*}} {alignment = 4 : i64} : memref<?x72xbf16>, vector<8xbf16>
// CHECK-NOT:     alignment = 16 : i64} : memref<216xbf16>
func.func @conv_odd_widths(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                           %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                           %slots: memref<?xi64>, %x: memref<?x72xbf16>,
                           %w: memref<72x3xbf16>, %y: memref<?x72xbf16>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 4, head_dim = 24, hidden = 72, kernel = 3, tp = 1> page_bytes 3072
      : memref<?xi8> -> memref<?x4x3x128xbf16, strided<[1536, 384, 128, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %x, %w history %cache[attn] layout #sconv.layout<kv_heads = 4, head_dim = 24, hidden = 72, kernel = 3, tp = 1> step %step into %y
      : memref<?x72xbf16>, memref<72x3xbf16>, memref<?x4x3x128xbf16, strided<[1536, 384, 128, 1]>> -> memref<?x72xbf16>
  return
}
