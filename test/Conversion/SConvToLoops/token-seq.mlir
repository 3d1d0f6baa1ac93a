// RUN: inkling-opt %s --sconv-lower-to-loops --canonicalize --cse | FileCheck %s
// RUN: inkling-opt %s --sconv-lower-to-loops="checked=true" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=CHECKED

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// With token_seq, a real token's sequence is one load (no search over
// query_start_loc, no loop before the chunk loop); its first token and
// num_computed are loaded from that entry. A padding token (t >= qsl[B])
// loads none of it, stores nothing into the cache, and its outputs are its
// inputs.
// CHECK-LABEL: func @fused_token_seq
// CHECK-SAME:    %[[QSL:[a-z0-9]+]]: memref<?xi32>, %[[NC:[a-z0-9]+]]: memref<?xi32>, %{{[a-z0-9]+}}: memref<?x?xi32>, %[[SLOTS:[a-z0-9]+]]: memref<?xi64>, %[[SEQ:[a-z0-9]+]]: memref<?xi32>,
// CHECK-SAME:    %[[K:[a-z0-9]+]]: memref<?x8x128xbf16>
// CHECK-SAME:    %[[YK:[a-z0-9]+]]: memref<?x8x128xbf16>, %{{[a-z0-9]+}}: memref<?x8x128xbf16>)
// CHECK-NOT:     scf.while
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[LAST:.+]] = memref.load %[[QSL]][%{{.*}}] : memref<?xi32>
// CHECK:           %[[LASTIDX:.+]] = arith.index_cast %[[LAST]]
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %[[LASTIDX]] : index
// CHECK:           %[[META:.+]]:3 = scf.if %[[REAL]] -> (index, index, index) {
// CHECK-NEXT:        %[[B:.+]] = memref.load %[[SEQ]][%[[T]]] : memref<?xi32>
// CHECK-NEXT:        %[[BIDX:.+]] = arith.index_cast %[[B]] : i32 to index
// CHECK-NEXT:        %[[START:.+]] = memref.load %[[QSL]][%[[BIDX]]] : memref<?xi32>
// CHECK-NEXT:        %[[STARTIDX:.+]] = arith.index_cast %[[START]]
// CHECK-NEXT:        %[[COMPUTED:.+]] = memref.load %[[NC]][%[[BIDX]]] : memref<?xi32>
// CHECK-NEXT:        %[[COMPUTEDIDX:.+]] = arith.index_cast %[[COMPUTED]]
// CHECK-NEXT:        scf.yield %[[BIDX]], %[[STARTIDX]], %[[COMPUTEDIDX]]
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %{{.*}}, %{{.*}}, %{{.*}} : index, index, index
// CHECK-NEXT:      {{^ *[}]$}}
// CHECK:           %[[SLOT:.+]] = memref.load %[[SLOTS]][%[[T]]] : memref<?xi64>
// CHECK:           %[[STORED:.+]] = arith.cmpi sge, %[[SLOT]], %{{.*}} : i64
// CHECK:           %[[VALID:.+]] = arith.andi %[[STORED]], %[[REAL]] : i1
// CHECK:           scf.parallel (%[[CH:.+]]) =
// CHECK:             %[[XK:.+]] = vector.load %[[K]][%[[T]], %[[H]], %[[COL:.+]]] {alignment = 16 : i64}
// CHECK-NEXT:        scf.if %[[REAL]] {
// CHECK:               scf.if %[[VALID]] {
// CHECK-NEXT:            vector.store %[[XK]]
// CHECK:               vector.store %{{.*}}, %[[YK]][%[[T]], %[[H]], %[[COL]]]
// CHECK-NEXT:        } else {
// CHECK-NEXT:          vector.store %[[XK]], %[[YK]][%[[T]], %[[H]], %[[COL]]]
// CHECK-NEXT:        {{^ *[}]$}}
// CHECK-NOT:     scf.while
// CHECK:         return
func.func @fused_token_seq(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                           %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                           %slots: memref<?xi64>, %seq: memref<?xi32>,
                           %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                           %wk: memref<1024x4xbf16>, %wv: memref<1024x4xbf16>,
                           %yk: memref<?x8x128xbf16>, %yv: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots token_seq(%seq : memref<?xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.fused_conv %k, %v weights %wk, %wv history %cache[k, v] layout #real
      step %step into %yk, %yv and_insert
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// Checked: an entry that is not below B, or whose sequence does not hold
// the token (qsl[b] <= t < qsl[b+1]), is reported once per token (head 0)
// as kind 5 with the token, the entry and B; the token is then treated as
// padding (its output is its input; nothing is read through the entry).
// CHECKED-LABEL: func @conv_token_seq_checked
// CHECKED-SAME:    %[[QSL:[a-z0-9]+]]: memref<?xi32>, %[[NC:[a-z0-9]+]]: memref<?xi32>, %{{[a-z0-9]+}}: memref<?x?xi32>, %{{[a-z0-9]+}}: memref<?xi64>, %[[SEQ:[a-z0-9]+]]: memref<?xi32>, %[[STATUS:[a-z0-9]+]]: memref<5xi64>
// CHECKED-DAG:     %[[C5:.+]] = arith.constant 5 : i64
// CHECKED-DAG:     %[[B:.+]] = memref.dim %[[NC]], %{{.*}} : memref<?xi32>
// CHECKED-NOT:     scf.while
// CHECKED:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECKED:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECKED:           %[[META:.+]]:4 = scf.if %[[REAL]] -> (i1, index, index, index) {
// CHECKED:             %[[ENTRY:.+]] = memref.load %[[SEQ]][%[[T]]] : memref<?xi32>
// CHECKED:             %[[IDX:.+]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECKED:             %[[INRANGE:.+]] = arith.cmpi ult, %[[IDX]], %[[B]] : index
// CHECKED:             %[[SAFE:.+]] = arith.select %[[INRANGE]], %[[IDX]], %{{.*}} : index
// CHECKED:             memref.load %[[QSL]][%[[SAFE]]]
// CHECKED:             memref.load %[[QSL]][%{{.*}}]
// CHECKED:             %[[HOLDS:.+]] = arith.andi
// CHECKED:             %[[OK:.+]] = arith.andi %[[INRANGE]], %[[HOLDS]] : i1
// CHECKED:             memref.atomic_rmw addi %{{.*}}, %[[STATUS]]
// CHECKED:               memref.store %[[C5]], %[[STATUS]]
// CHECKED:             memref.load %[[NC]][%[[SAFE]]]
// CHECKED:             scf.yield %[[OK]], %[[SAFE]], %{{.*}}, %{{.*}} : i1, index, index, index
// CHECKED:           } else {
// CHECKED:             scf.yield %false
// CHECKED:           scf.parallel
// CHECKED:             scf.if %[[META]]#0 {
// CHECKED:             } else {
// CHECKED-NOT:     scf.while
// CHECKED:         return
func.func @conv_token_seq_checked(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,
    %seq: memref<?xi32>, %status: memref<5xi64>, %k: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots token_seq(%seq : memref<?xi32>)
      status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  sconv.conv %k, %wk history %cache[k] layout #real step %step into %yk
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !cache -> memref<?x8x128xbf16>
  return
}

// A checked insert with token_seq takes each real token's sequence (for its
// own slot, block_table[b][p / N] * N + p % N) from the entry, not from a
// search; a bad entry stores nothing (the step's convs report it).
// CHECKED-LABEL: func @insert_token_seq_checked
// CHECKED-SAME:    %[[SEQ:[a-z0-9]+]]: memref<?xi32>, %{{[a-z0-9]+}}: memref<5xi64>
// CHECKED-NOT:     scf.while
// CHECKED:         scf.parallel (%[[T:.+]], %{{.+}}) =
// CHECKED:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECKED:           %[[META:.+]]:4 = scf.if %[[REAL]] -> (i1, index, index, index) {
// CHECKED:             memref.load %[[SEQ]][%[[T]]] : memref<?xi32>
// CHECKED:           %[[ASK:.+]] = arith.andi %{{.*}}, %[[META]]#0 : i1
// CHECKED:           scf.if %[[ASK]] -> (i64) {
// CHECKED:             memref.load %{{.*}}[%[[META]]#1, %{{.*}}] : memref<?x?xi32>
// CHECKED:           arith.andi %{{.*}}, %[[META]]#0 : i1
// CHECKED-NOT:     scf.while
// CHECKED:         return
func.func @insert_token_seq_checked(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,
    %seq: memref<?xi32>, %status: memref<5xi64>, %k: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots token_seq(%seq : memref<?xi32>)
      status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  sconv.insert %k into %cache[k] layout #real step %step
      : memref<?x8x128xbf16>, !cache
  return
}
