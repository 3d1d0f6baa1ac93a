// RUN: inkling-opt %s --sconv-lower-to-loops="checked=true" --canonicalize | FileCheck %s

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// With a status buffer: a slot is stored only when 0 <= slot < num_blocks*N
// and it is the token's own slot, block_table[b][p / N] * N + p % N (b and
// p from a binary search of query_start_loc); one lane per token (head 0,
// chunk 0) reports slot < -1 or slot >= the limit (kind 1), or another
// slot (kind 4): an atomic count, then the first report's kind, token,
// slot, limit.
// CHECK-LABEL: func @insert_status
// CHECK-SAME:    %[[STATUS:[a-z0-9]+]]: memref<5xi64>
// CHECK:         %[[BLOCKS:.+]] = memref.dim %{{.*}}, %{{.*}} : memref<?x8x4x2048xbf16
// CHECK:         %[[SLOTS:.+]] = arith.muli %[[BLOCKS]], %{{.*}} : index
// CHECK:         %[[LIMIT:.+]] = arith.index_cast %[[SLOTS]] : index to i64
// CHECK:         scf.parallel (%[[T:.+]], %[[H:.+]]) =
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECK:           scf.while
// CHECK:           %[[SLOT:.+]] = memref.load %{{.*}}[%[[T]]] : memref<?xi64>
// CHECK:           %[[NONNEG:.+]] = arith.cmpi sge, %[[SLOT]], %{{.*}} : i64
// CHECK:           %[[BELOW:.+]] = arith.cmpi slt, %[[SLOT]], %[[LIMIT]] : i64
// CHECK:           %[[INRANGE:.+]] = arith.andi %[[NONNEG]], %[[BELOW]] : i1
// A padding token reads no block table row for its own slot.
// CHECK:           %[[ASK:.+]] = arith.andi %{{.*}}, %[[REAL]] : i1
// CHECK:           %[[OWN:.+]] = scf.if %[[ASK]] -> (i64) {
// CHECK:             memref.load %{{.*}} : memref<?x?xi32>
// CHECK:             arith.muli %{{.*}}, %c4_i64 : i64
// CHECK:           } else {
// CHECK:             scf.yield %c-1_i64 : i64
// CHECK:           %[[EQ:.+]] = arith.cmpi eq, %[[SLOT]], %[[OWN]] : i64
// CHECK:           %[[MINE:.+]] = arith.andi %[[INRANGE]], %[[EQ]] : i1
// CHECK:           %[[VALID:.+]] = arith.andi %[[MINE]], %[[REAL]] : i1
// CHECK:           scf.parallel
// CHECK:             scf.if %{{.*}} {
// CHECK:               %[[OLD:.+]] = memref.atomic_rmw addi %{{.*}}, %[[STATUS]][%{{.*}}] : (i64, memref<5xi64>) -> i64
// CHECK:               %[[FIRST:.+]] = arith.cmpi eq, %[[OLD]], %{{.*}} : i64
// CHECK:               scf.if %[[FIRST]] {
// CHECK-COUNT-4:         memref.store %{{.*}}, %[[STATUS]]
// CHECK:             scf.if %{{.*}} {
// CHECK:               memref.atomic_rmw addi %{{.*}}, %[[STATUS]]
// CHECK:               memref.store %c4_i64, %[[STATUS]][%c1]
// CHECK:             scf.if %[[VALID]] {
// CHECK:               vector.store
func.func @insert_status(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                         %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                         %slots: memref<?xi64>, %status: memref<5xi64>,
                         %k: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, !cache
  return
}

// A history tap reads the block table only inside its width, and the cache
// only for 0 <= block id < num_blocks; otherwise it reads 0 and reports.
// CHECK-LABEL: func @conv_status
// CHECK:         %[[WIDTH:.+]] = memref.dim %{{.*}}, %c1 : memref<?x?xi32>
// CHECK:         %[[INTABLE:.+]] = arith.cmpi ult, %{{.*}}, %[[WIDTH]] : index
// CHECK:         %[[ID:.+]] = scf.if %[[INTABLE]] -> (i64) {
// CHECK:           memref.load %{{.*}} : memref<?x?xi32>
// CHECK:         %[[GE:.+]] = arith.cmpi sge, %[[ID]], %{{.*}} : i64
// CHECK:         %[[LT:.+]] = arith.cmpi slt, %[[ID]], %{{.*}} : i64
// CHECK:         %[[OK:.+]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK:         memref.atomic_rmw addi
// CHECK:         memref.atomic_rmw addi
// CHECK:         scf.if %[[OK]] -> (vector<8xf32>) {
// CHECK:           vector.load {{.*}} : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>, vector<8xbf16>
// CHECK:         } else {
// CHECK:           scf.yield %cst
func.func @conv_status(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                       %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                       %slots: memref<?xi64>, %status: memref<?xi64>,
                       %k: memref<?x8x128xbf16>, %w: memref<1024x4xbf16>,
                       %y: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<?xi64>
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !cache -> memref<?x8x128xbf16>
  return
}

// Without a status buffer: cf.assert with a message.
// CHECK-LABEL: func @insert_assert
// CHECK:         cf.assert %{{.*}}, "sconv.insert (checked): a slot_mapping entry is below -1 or addresses a block at or beyond the cache's num_blocks"
// CHECK-NOT:     memref.atomic_rmw
func.func @insert_assert(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                         %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                         %slots: memref<?xi64>, %k: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, !cache
  return
}

// The fused ops guard their slots like sconv.insert: a fused conv with
// and_insert reports a bad slot once per token and stream (head 0, the
// stream's chunk 0: the count of the separate inserts), stores only valid
// slots, and still guards its history taps; without a status buffer the
// reports are asserts naming the fused op.
// CHECK-LABEL: func @fused_status
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK:           %[[REAL:.+]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK:           %[[SLOT:.+]] = memref.load %{{.*}} : memref<?xi64>
// CHECK:           %[[NONNEG:.+]] = arith.cmpi sge, %[[SLOT]], %{{.*}} : i64
// CHECK:           %[[BELOW:.+]] = arith.cmpi slt, %[[SLOT]], %{{.*}} : i64
// CHECK:           %[[INRANGE:.+]] = arith.andi %[[NONNEG]], %[[BELOW]] : i1
// CHECK:           %[[EQ:.+]] = arith.cmpi eq, %[[SLOT]], %{{.*}} : i64
// CHECK:           %[[MINE:.+]] = arith.andi %[[INRANGE]], %[[EQ]] : i1
// CHECK:           %[[VALID:.+]] = arith.andi %[[MINE]], %[[REAL]] : i1
// CHECK:           scf.parallel
// CHECK:             memref.atomic_rmw addi
// CHECK:             memref.atomic_rmw addi
// CHECK:             scf.if %[[VALID]] {
// CHECK:               vector.store
// CHECK:             memref.atomic_rmw addi
func.func @fused_status(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                        %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                        %slots: memref<?xi64>, %status: memref<5xi64>,
                        %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                        %w: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>,
                        %yv: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  sconv.fused_conv %k, %v weights %w, %w history %cache[k, v] layout #l
      step %step into %yk, %yv and_insert
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// CHECK-LABEL: func @packed_assert
// CHECK:         cf.assert %{{.*}}, "sconv.insert_packed (checked): a slot_mapping entry is below -1 or addresses a block at or beyond the cache's num_blocks"
// CHECK:         vector.store
// CHECK:         cf.assert
// CHECK:         vector.store
func.func @packed_assert(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                         %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                         %slots: memref<?xi64>, %k: memref<?x8x128xbf16>,
                         %v: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert_packed %k, %v into %cache[k, v] layout #l step %step
      : !cache, memref<?x8x128xbf16>, memref<?x8x128xbf16>
  return
}
