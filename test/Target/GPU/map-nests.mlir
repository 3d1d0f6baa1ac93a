// inkling-gpu-map-nests: the outermost scf.parallel's dims go to blocks,
// the loops nested in it to threads (the 16-byte chunk: thread x), anything
// deeper runs sequentially.
// RUN: inkling-opt %s --inkling-gpu-map-nests | FileCheck %s

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
