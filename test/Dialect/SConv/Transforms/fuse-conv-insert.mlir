// RUN: inkling-opt %s -sconv-fuse-conv-insert -split-input-file | FileCheck %s

// Function arguments are `llvm.noalias` (distinct engine buffers) unless a
// case says otherwise.

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// Insert after its conv, and insert before its conv: both fold in, at the
// conv's place, keeping the conv's attributes.
// CHECK-LABEL: func @after_and_before
// CHECK-NEXT: sconv.fused_conv %arg0 weights %arg2 history %{{.*}}[k] layout #{{.*}} step %{{.*}} into %arg3 and_insert activation silu
// CHECK-NEXT: sconv.fused_conv %arg1 weights %arg2 history %{{.*}}[v] layout #{{.*}} step %{{.*}} into %arg4 and_insert :
// CHECK-NEXT: return
func.func @after_and_before(%k: !x {llvm.noalias}, %v: !x {llvm.noalias},
    %w: !w {llvm.noalias}, %yk: !x {llvm.noalias}, %yv: !x {llvm.noalias},
    %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk activation silu
      : !x, !w, !c -> !x
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  sconv.conv %v, %w history %c[v] layout #l step %s into %yv : !x, !w, !c -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// Different input, different stream, different step: nothing to fold.
// CHECK-LABEL: func @no_partner
// CHECK-SAME: (%[[K:[^:]+]]: {{.*}}, %[[K2:[^:]+]]: {{.*}}, %[[W:[^:]+]]: {{.*}}, %[[YK:[^:]+]]: {{.*}}, %[[C:[^:]+]]: {{.*}}, %[[S:[^:]+]]: {{.*}}, %[[T:[^:]+]]: {{.*}})
// CHECK-NOT: sconv.fused_conv
// CHECK-NEXT: sconv.conv %[[K]], %[[W]] history %[[C]][k] layout #{{.*}} step %[[S]] into %[[YK]]
// CHECK-NEXT: sconv.insert %[[K2]] into %[[C]][k] {{.*}} step %[[S]]
// CHECK-NEXT: sconv.insert %[[K]] into %[[C]][v] {{.*}} step %[[S]]
// CHECK-NEXT: sconv.insert %[[K]] into %[[C]][k] {{.*}} step %[[T]]
// CHECK-NEXT: return
func.func @no_partner(%k: !x {llvm.noalias}, %k2: !x {llvm.noalias},
    %w: !w {llvm.noalias}, %yk: !x {llvm.noalias}, %c: !c {llvm.noalias},
    %s: !sconv.step, %t: !sconv.step) {
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  sconv.insert %k2 into %c[k] layout #l step %s : !x, !c
  sconv.insert %k into %c[v] layout #l step %s : !x, !c
  sconv.insert %k into %c[k] layout #l step %t : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// The input is overwritten between conv and insert: the insert stores the
// new values, the conv read the old ones; not folded.
// CHECK-LABEL: func @intervening_write
// CHECK: sconv.conv
// CHECK: memref.store
// CHECK: sconv.insert
func.func @intervening_write(%k: !x {llvm.noalias}, %w: !w {llvm.noalias},
    %yk: !x {llvm.noalias}, %c: !c {llvm.noalias}, %s: !sconv.step) {
  %i = arith.constant 0 : index
  %z = arith.constant 0.0 : bf16
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  memref.store %z, %k[%i, %i, %i] : !x
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>
func.func private @opaque()

// An op with unknown effects between them: not folded.
// CHECK-LABEL: func @unknown_effects
// CHECK: sconv.conv
// CHECK: call @opaque
// CHECK: sconv.insert
func.func @unknown_effects(%k: !x {llvm.noalias}, %w: !w {llvm.noalias},
    %yk: !x {llvm.noalias}, %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  call @opaque() : () -> ()
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  return
}
