// RUN: inkling-opt %s --inkling-cpu-lower-to-loops=hoist-taps=true --canonicalize | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true checked=true" --canonicalize | FileCheck %s --check-prefix=CHECKED

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// hoist-taps (the CPU's form): per (t, h), before the chunk loop, each tap's
// source (q = p-3, p-2, p-1: in-step x, else 0 below position 0, else the
// cache row through the block table, its block id read there, only for a
// real token whose tap is a history one); per chunk, when q = p-3 is in the
// step (prefill), the taps are x[t-3], x[t-2], x[t-1] without selection,
// else each tap is selected from the sources chosen above. The weights of
// 8 channels (32 bf16) as 16 words of two taps each: tap 2m is word << 16,
// tap 2m+1 word & 0xffff0000 (the bits of extf). The fma chain and its
// order are those of the per-chunk form (conv.mlir).
// CHECK-LABEL: func @conv_real
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG:     %[[C16:.+]] = arith.constant dense<16> : vector<8xi32>
// CHECK-DAG:     %[[HIGH:.+]] = arith.constant dense<-65536> : vector<8xi32>
// CHECK:         %[[CACHE:.+]] = memref.reinterpret_cast
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECK:           %[[META:.+]]:3 = scf.if %[[REAL]] -> (index, index, index) {
// CHECK:           %[[P:.+]] = arith.addi %[[META]]#2, %{{.*}} : index
// Tap 0's source (q = p - 3).
// CHECK:           %[[Q0:.+]] = arith.subi %[[P]], %{{.*}} : index
// CHECK:           %[[PREFILL:.+]] = arith.cmpi sge, %[[Q0]], %[[META]]#2 : index
// CHECK:           %[[HIST0:.+]] = arith.andi %{{.*}}, %[[REAL]] : i1
// CHECK:           %[[LOGICAL:.+]] = arith.shrui %[[Q0]]
// CHECK:           %[[ROW:.+]] = arith.andi %[[Q0]]
// CHECK:           %[[BLOCK0:.+]] = scf.if %[[HIST0]] -> (index) {
// CHECK:             %[[ID:.+]] = memref.load %{{.*}}[%[[META]]#0, %[[LOGICAL]]] : memref<?x?xi32>
// CHECK:             %[[IDX:.+]] = arith.index_cast %[[ID]]
// CHECK:             scf.yield %[[IDX]] : index
// CHECK-COUNT-2:   memref.load %{{.*}} : memref<?x?xi32>
// CHECK:           scf.parallel (%[[CHUNK:.+]]) =
// CHECK-NOT:         memref<?x?xi32>
// CHECK:             %[[XT:.+]] = vector.load %{{.*}}[%[[T]], %{{.*}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:             scf.if %[[REAL]] {
// CHECK:             %[[WALL:.+]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<16384xbf16>, vector<32xbf16>
// CHECK:             %[[WORDS:.+]] = vector.bitcast %[[WALL]] : vector<32xbf16> to vector<16xi32>
// CHECK:             %[[P0:.+]] = vector.shuffle %[[WORDS]], %[[WORDS]] [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK:             %[[B0:.+]] = arith.shli %[[P0]], %[[C16]] : vector<8xi32>
// CHECK:             %[[W0F:.+]] = arith.bitcast %[[B0]] : vector<8xi32> to vector<8xf32>
// CHECK:             %[[B1:.+]] = arith.andi %[[P0]], %[[HIGH]] : vector<8xi32>
// CHECK:             %[[W1F:.+]] = arith.bitcast %[[B1]] : vector<8xi32> to vector<8xf32>
// CHECK:             %[[P2:.+]] = vector.shuffle %[[WORDS]], %[[WORDS]] [1, 3, 5, 7, 9, 11, 13, 15]
// CHECK:             %[[B2:.+]] = arith.shli %[[P2]], %[[C16]] : vector<8xi32>
// CHECK:             %[[W2F:.+]] = arith.bitcast %[[B2]] : vector<8xi32> to vector<8xf32>
// CHECK:             %[[B3:.+]] = arith.andi %[[P2]], %[[HIGH]] : vector<8xi32>
// CHECK:             %[[W3F:.+]] = arith.bitcast %[[B3]] : vector<8xi32> to vector<8xf32>
// CHECK:             %[[XTF:.+]] = arith.extf %[[XT]]
// CHECK:             %[[TAPS:.+]]:3 = scf.if %[[PREFILL]] -> (vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-COUNT-3:       vector.load %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:             } else {
// Tap 0 is not in the step there: the cache row chosen above, or 0.
// CHECK:               scf.if %[[HIST0]] -> (vector<8xf32>) {
// CHECK:                 %[[COL:.+]] = arith.addi %{{.*}}, %[[C256]]
// CHECK:                 vector.load %[[CACHE]][%[[BLOCK0]], %[[H]], %[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>, vector<8xbf16>
// CHECK:               } else {
// CHECK:                 scf.yield %[[ZERO]]
// CHECK:             %[[ACC0:.+]] = math.fma %[[W0F]], %[[TAPS]]#0, %[[ZERO]] : vector<8xf32>
// CHECK-NEXT:        %[[ACC1:.+]] = math.fma %[[W1F]], %[[TAPS]]#1, %[[ACC0]] : vector<8xf32>
// CHECK-NEXT:        %[[ACC2:.+]] = math.fma %[[W2F]], %[[TAPS]]#2, %[[ACC1]] : vector<8xf32>
// CHECK-NEXT:        %[[ACC3:.+]] = math.fma %[[W3F]], %[[XTF]], %[[ACC2]] : vector<8xf32>
// CHECK-NEXT:        %[[RES:.+]] = arith.addf %[[ACC3]], %[[XTF]] : vector<8xf32>
// CHECK-NEXT:        arith.truncf %[[RES]] : vector<8xf32> to vector<8xbf16>

// Checked mode keeps the per-chunk selection (each history tap checks and
// reports its block id): the block table is read in the chunk loop.
// CHECKED-LABEL: func @conv_real
// CHECKED:         scf.parallel (%{{.*}}, %{{.*}}) =
// CHECKED-NOT:       memref<?x?xi32>
// CHECKED:           scf.parallel (%{{.*}}) =
// CHECKED:             memref.load %{{.*}} : memref<?x?xi32>
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
