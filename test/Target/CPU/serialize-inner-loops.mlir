// RUN: inkling-opt %s --inkling-cpu-serialize-inner-loops --split-input-file | FileCheck %s

// The chunk loops of a nest become scf.for; the (token, head) loop stays
// parallel, with its body otherwise unchanged.
// CHECK-LABEL: func.func @nest
// CHECK:         scf.parallel (%[[T:.*]], %[[H:.*]]) =
// CHECK-NOT:     scf.parallel
// CHECK:           scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[T]], %[[H]], %[[C]]]
// CHECK:           scf.for %[[D:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[T]], %[[H]], %[[D]]]
// CHECK-NOT:     scf.parallel
func.func @nest(%m: memref<?x8x16xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %h) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
      memref.store %f, %m[%i, %h, %c] : memref<?x8x16xf32>
    }
    scf.parallel (%d) = (%c8) to (%c16) step (%c1) {
      memref.store %f, %m[%i, %h, %d] : memref<?x8x16xf32>
    }
  }
  return
}

// -----

// Several dimensions and deeper nesting: each nested loop becomes a nest of
// scf.for, one per dimension; a lone scf.parallel is not nested and stays.
// CHECK-LABEL: func.func @deep
// CHECK:         scf.parallel (%{{.*}}) =
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               scf.for
// CHECK-NOT:     scf.parallel
// CHECK-LABEL: func.func @alone
// CHECK:         scf.parallel
func.func @deep(%m: memref<4x4x4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.parallel (%j, %k) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
      scf.parallel (%l) = (%c0) to (%c4) step (%c1) {
        memref.store %f, %m[%i, %j, %k, %l] : memref<4x4x4x4xf32>
      }
    }
  }
  return
}
func.func @alone(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %f, %m[%i] : memref<4xf32>
  }
  return
}
