// The mapping step of inkling-lower-to-nvvm is upstream's
// gpu-map-parallel-loops (outermost-first): the outermost scf.parallel's
// dims go to blocks, the loops nested in it to threads (the 16-byte chunk:
// thread x), anything deeper runs sequentially. It replaced
// inkling-gpu-map-nests, which mapped the same on every nest the sconv
// lowering emits (all nested scf.parallel ops are direct children).
// RUN: inkling-opt %s --pass-pipeline='builtin.module(func.func(gpu-map-parallel-loops))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @nest
// CHECK: processor = sequential
// CHECK: processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x, {{.*}}>, #gpu.loop_dim_map<processor = block_y, {{.*}}>]}
func.func @nest(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%t, %h) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
      scf.parallel (%d) = (%c0) to (%c8) step (%c1) {
        scf.reduce
      }
      scf.reduce
    }
    scf.reduce
  }
  return
}

// Upstream maps only scf.parallel ops directly in a mapped loop's body: one
// under an scf.if stays unmapped (convert-parallel-loops-to-gpu then keeps
// it a loop inside each thread). The sconv lowering never emits that shape.
// CHECK-LABEL: func.func @guarded
// CHECK: scf.if
// CHECK: scf.parallel
// CHECK-NOT: mapping
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_x, {{.*}}>]}
func.func @guarded(%n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%t) = (%c0) to (%n) step (%c1) {
    scf.if %p {
      scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}
