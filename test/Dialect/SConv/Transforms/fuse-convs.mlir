// RUN: inkling-opt %s -sconv-fuse-convs -split-input-file | FileCheck %s

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// K and V convs of one step: one op, one loop nest.
// CHECK-LABEL: func @k_and_v
// CHECK-NEXT: sconv.fused_conv %arg0, %arg1 weights %arg2, %arg3 history %{{.*}}[k, v] layout #{{.*}} step %{{.*}} into %arg4, %arg5 :
// CHECK-NEXT: return
func.func @k_and_v(%k: !x {llvm.noalias}, %v: !x {llvm.noalias},
    %wk: !w {llvm.noalias}, %wv: !w {llvm.noalias}, %yk: !x {llvm.noalias},
    %yv: !x {llvm.noalias}, %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.conv %k, %wk history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  sconv.conv %v, %wv history %c[v] layout #l step %s into %yv : !x, !w, !c -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// Fused convs with insert merge the same way.
// CHECK-LABEL: func @with_inserts
// CHECK-NEXT: sconv.fused_conv %arg0, %arg1 weights {{.*}}[k, v] {{.*}} and_insert
// CHECK-NEXT: return
func.func @with_inserts(%k: !x {llvm.noalias}, %v: !x {llvm.noalias},
    %w: !w {llvm.noalias}, %yk: !x {llvm.noalias}, %yv: !x {llvm.noalias},
    %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.fused_conv %k weights %w history %c[k] layout #l step %s into %yk and_insert
      : !c, (!x), (!w) -> (!x)
  sconv.fused_conv %v weights %w history %c[v] layout #l step %s into %yv and_insert
      : !c, (!x), (!w) -> (!x)
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>
func.func private @attention(!x, !x)

// The second conv reads the first's output (through a call here, or
// directly): never fused.
// CHECK-LABEL: func @dependent
// CHECK-NEXT: sconv.conv %arg0
// CHECK-NEXT: sconv.conv %arg2
// CHECK-NEXT: call @attention
// CHECK-NEXT: sconv.conv %arg4
func.func @dependent(%k: !x {llvm.noalias}, %w: !w {llvm.noalias},
    %yk: !x {llvm.noalias}, %yv: !x {llvm.noalias}, %a: !x {llvm.noalias},
    %ya: !x {llvm.noalias}, %c: !c {llvm.noalias}, %s: !sconv.step) {
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  sconv.conv %yk, %w history %c[v] layout #l step %s into %yv : !x, !w, !c -> !x
  call @attention(%yv, %a) : (!x, !x) -> ()
  sconv.conv %a, %w history %c[attn] layout #l step %s into %ya : !x, !w, !c -> !x
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[?, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

// Different activation (first two), the same stream twice (second and
// third), different steps (fourth against the others): nothing fuses.
// CHECK-LABEL: func @incompatible
// CHECK-COUNT-4: sconv.conv
// CHECK-NOT: sconv.fused_conv
func.func @incompatible(%k: !x {llvm.noalias}, %v: !x {llvm.noalias},
    %w: !w {llvm.noalias}, %y1: !x {llvm.noalias}, %y2: !x {llvm.noalias},
    %y3: !x {llvm.noalias}, %y4: !x {llvm.noalias}, %c: !c {llvm.noalias},
    %s: !sconv.step, %t: !sconv.step) {
  sconv.conv %k, %w history %c[k] layout #l step %s into %y1 activation silu
      : !x, !w, !c -> !x
  sconv.conv %v, %w history %c[v] layout #l step %s into %y2 : !x, !w, !c -> !x
  sconv.conv %v, %w history %c[v] layout #l step %s into %y3 : !x, !w, !c -> !x
  sconv.conv %k, %w history %c[k] layout #l step %t into %y4 : !x, !w, !c -> !x
  return
}
