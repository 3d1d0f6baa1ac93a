// RUN: inkling-opt %s -sconv-fuse-inserts -split-input-file | FileCheck %s

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// Four adjacent inserts of one step become one packed insert, in head-row
// order whatever their order in the input.
// CHECK-LABEL: func @four_streams
// CHECK-NEXT: sconv.insert_packed %arg1, %arg0, %arg3, %arg2 into %{{.*}}[k, v, attn, mlp]
// CHECK-NEXT: return
func.func @four_streams(%v: !x, %k: !x, %m: !x, %a: !x, %c: !c, %s: !sconv.step) {
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.insert %m into %c[mlp] layout #l step %s : !x, !c
  sconv.insert %a into %c[attn] layout #l step %s : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// A packed insert absorbs a following insert.
// CHECK-LABEL: func @packed_and_single
// CHECK-NEXT: sconv.insert_packed %arg0, %arg1, %arg2 into %{{.*}}[k, v, mlp]
// CHECK-NEXT: return
func.func @packed_and_single(%k: !x, %v: !x, %m: !x, %c: !c, %s: !sconv.step) {
  sconv.insert_packed %k, %m into %c[k, mlp] layout #l step %s : !c, !x, !x
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// Different steps (different slots): not fused.
// CHECK-LABEL: func @different_steps
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: sconv.insert
// CHECK-NOT: sconv.insert_packed
func.func @different_steps(%k: !x, %v: !x, %c: !c, %s: !sconv.step, %t: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.insert %v into %c[v] layout #l step %t : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// Different caches: not fused.
// CHECK-LABEL: func @different_caches
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: sconv.insert
// CHECK-NOT: sconv.insert_packed
func.func @different_caches(%k: !x, %v: !x, %c: !c, %d: !c, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.insert %v into %d[v] layout #l step %s : !x, !c
  return
}

// -----

// Different layouts with the same cache type (H, N, D alike, streams not):
// not fused.
#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
#m = #sconv.layout<kv_heads = 2, head_dim = 4, hidden = 24, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
// CHECK-LABEL: func @different_layouts
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: sconv.insert
// CHECK-NOT: sconv.insert_packed
func.func @different_layouts(%k: memref<?x2x8xbf16>, %v: memref<?x2x4xbf16>,
                             %c: !c, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : memref<?x2x8xbf16>, !c
  sconv.insert %v into %c[v] layout #m step %s : memref<?x2x4xbf16>, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// The same stream twice: the second write wins, so the two stay apart and
// in order; the v insert joins the second run.
// CHECK-LABEL: func @same_stream_twice
// CHECK-NEXT: sconv.insert %arg0 into %{{.*}}[k]
// CHECK-NEXT: sconv.insert_packed %arg1, %arg2 into %{{.*}}[k, v]
// CHECK-NEXT: return
func.func @same_stream_twice(%k: !x, %k2: !x, %v: !x, %c: !c, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.insert %k2 into %c[k] layout #l step %s : !x, !c
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// Not adjacent: an op in between (here a write) keeps them apart; moving
// them together is sconv-defer-inserts' job, which checks legality.
// CHECK-LABEL: func @intervening_write
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: memref.store
// CHECK-NEXT: sconv.insert
func.func @intervening_write(%k: !x, %v: !x, %c: !c, %s: !sconv.step) {
  %i = arith.constant 0 : index
  %z = arith.constant 0.0 : bf16
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  memref.store %z, %v[%i, %i, %i] : !x
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  return
}
