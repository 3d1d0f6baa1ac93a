// RUN: inkling-opt %s -sconv-defer-inserts -split-input-file | FileCheck %s

// Function arguments may alias each other unless marked `llvm.noalias` (the
// serving engine's buffers are distinct): most cases below mark them.

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// An insert moves past a conv of the same step and cache (the conv reads
// only history), to the terminator.
// CHECK-LABEL: func @past_conv
// CHECK-NEXT: sconv.conv
// CHECK-NEXT: sconv.conv
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: return
func.func @past_conv(%k: !x {llvm.noalias}, %v: !x {llvm.noalias}, %w: memref<16x4xbf16> {llvm.noalias}, %yk: !x {llvm.noalias}, %yv: !x {llvm.noalias},
                     %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk
      : !x, memref<16x4xbf16>, !c -> !x
  sconv.conv %v, %w history %c[v] layout #l step %s into %yv
      : !x, memref<16x4xbf16>, !c -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
func.func private @attention(!x)

// A call has unknown effects: the insert stops before it.
// CHECK-LABEL: func @stops_at_unknown_effects
// CHECK-NEXT: sconv.conv
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: call @attention
func.func @stops_at_unknown_effects(%k: !x {llvm.noalias}, %w: memref<16x4xbf16> {llvm.noalias}, %yk: !x {llvm.noalias},
                                    %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk
      : !x, memref<16x4xbf16>, !c -> !x
  call @attention(%yk) : (!x) -> ()
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// A conv of another step may read what this step writes.
// CHECK-LABEL: func @stops_at_other_step
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: sconv.conv
func.func @stops_at_other_step(%k: !x {llvm.noalias}, %w: memref<16x4xbf16> {llvm.noalias}, %yk: !x {llvm.noalias}, %c: !c {llvm.noalias},
                               %s: !sconv.step, %t: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.conv %k, %w history %c[k] layout #l step %t into %yk
      : !x, memref<16x4xbf16>, !c -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// A write to the insert's input: moving the insert would store the new value.
// CHECK-LABEL: func @stops_at_write_to_input
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: memref.store
func.func @stops_at_write_to_input(%k: !x {llvm.noalias}, %c: !c {llvm.noalias}, %s: !sconv.step) {
  %i = arith.constant 0 : index
  %z = arith.constant 0.0 : bf16
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  memref.store %z, %k[%i, %i, %i] : !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// A write to the step's slot mapping changes where the insert stores.
// CHECK-LABEL: func @stops_at_write_to_metadata
// CHECK: sconv.insert
// CHECK-NEXT: memref.store
func.func @stops_at_write_to_metadata(%k: !x {llvm.noalias}, %c: !c {llvm.noalias}, %qsl: memref<?xi32> {llvm.noalias},
    %nc: memref<?xi32> {llvm.noalias}, %bt: memref<?x?xi32> {llvm.noalias}, %sm: memref<?xi64>) {
  %i = arith.constant 0 : index
  %m = arith.constant -1 : i64
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %sm : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  memref.store %m, %sm[%i] : memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// A write to another buffer that may alias the cache stops the motion;
// `llvm.noalias` arguments are known distinct.
// CHECK-LABEL: func @may_alias
// CHECK: sconv.insert
// CHECK-NEXT: memref.copy
// CHECK-LABEL: func @no_alias
// CHECK: memref.copy
// CHECK-NEXT: sconv.insert
// CHECK-NEXT: return
func.func @may_alias(%k: !x {llvm.noalias}, %buf: memref<?xi8>,
                     %src: memref<?xi8>, %other: memref<?xi8>,
                     %s: !sconv.step) {
  %c = sconv.bind %buf layout #l page_bytes 512 : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  sconv.insert %k into %c[k] layout #l step %s : !x, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  memref.copy %src, %other : memref<?xi8> to memref<?xi8>
  return
}
func.func @no_alias(%k: !x {llvm.noalias}, %buf: memref<?xi8> {llvm.noalias},
                    %src: memref<?xi8>, %other: memref<?xi8> {llvm.noalias},
                    %s: !sconv.step) {
  %c = sconv.bind %buf layout #l page_bytes 512 : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  sconv.insert %k into %c[k] layout #l step %s : !x, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  memref.copy %src, %other : memref<?xi8> to memref<?xi8>
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!x = memref<?x2x8xbf16>

// Two views of one buffer are not the same cache value: a conv through the
// second view may read what the insert writes, so the insert stays.
// CHECK-LABEL: func @aliasing_view
// CHECK: sconv.insert
// CHECK-NEXT: sconv.conv
func.func @aliasing_view(%k: !x {llvm.noalias}, %w: memref<16x4xbf16> {llvm.noalias},
                         %yk: !x {llvm.noalias}, %buf: memref<?xi8> {llvm.noalias},
                         %s: !sconv.step) {
  %c1 = sconv.bind %buf layout #l page_bytes 512 : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  %c2 = sconv.bind %buf layout #l page_bytes 512 : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  sconv.insert %k into %c1[k] layout #l step %s : !x, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  sconv.conv %k, %w history %c2[k] layout #l step %s into %yk
      : !x, memref<16x4xbf16>, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>> -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>

// Inserts keep their order and gather in front of the first blocker.
// CHECK-LABEL: func @gather
// CHECK-NEXT: sconv.conv %{{.*}}[k]
// CHECK-NEXT: sconv.conv %{{.*}}[v]
// CHECK-NEXT: sconv.insert %{{.*}}[k]
// CHECK-NEXT: sconv.insert %{{.*}}[v]
// CHECK-NEXT: return
func.func @gather(%k: !x {llvm.noalias}, %v: !x {llvm.noalias}, %w: memref<16x4xbf16> {llvm.noalias}, %yk: !x {llvm.noalias}, %yv: !x {llvm.noalias},
                  %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk
      : !x, memref<16x4xbf16>, !c -> !x
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  sconv.conv %v, %w history %c[v] layout #l step %s into %yv
      : !x, memref<16x4xbf16>, !c -> !x
  return
}
