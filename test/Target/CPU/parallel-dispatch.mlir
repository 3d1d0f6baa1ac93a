// RUN: inkling-opt %s --inkling-cpu-parallel-dispatch=min-iterations=64 --split-input-file | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-parallel-dispatch=min-iterations=1 --split-input-file | FileCheck %s --check-prefix=ALWAYS

// One flag per nest from its trip counts (rounded up, 0 for an empty
// dimension); under it a call of the parallel copy, else a call of the
// nest as scf.for loops (inner parallel loops too), with the same body;
// each outlined into a private function that LLVM may not inline. The
// constants a copy uses are cloned into it, not passed: an intrinsic's
// immediate operand must be a constant in its function.
// CHECK-LABEL: func.func private @nest_threaded0
// CHECK-SAME:    (%[[M:[^:]*]]: memref<?x8x16xf32>, %{{[^:]*}}: index)
// CHECK-SAME:    attributes {passthrough = ["noinline"]}
// CHECK:         %[[F:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         scf.parallel (%[[I:.*]], %[[H:.*]]) =
// CHECK-NEXT:      scf.parallel (%[[C:.*]]) =
// CHECK-NEXT:        memref.store %[[F]], %[[M]][%[[I]], %[[H]], %[[C]]]
// CHECK-LABEL: func.func private @nest_sequential0
// CHECK-SAME:    (%[[SM:[^:]*]]: memref<?x8x16xf32>, %[[ST:[^:]*]]: index)
// CHECK-SAME:    attributes {passthrough = ["noinline"]}
// CHECK:         %[[SF:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[SC0:.*]] = arith.constant 0 : index
// CHECK:         %[[SC1:.*]] = arith.constant 1 : index
// CHECK:         %[[SC8:.*]] = arith.constant 8 : index
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for %[[SI:.*]] = %[[SC0]] to %[[ST]] step %[[SC1]] {
// CHECK-NEXT:      scf.for %[[SH:.*]] = %[[SC0]] to %[[SC8]] step %[[SC1]] {
// CHECK-NEXT:        scf.for %[[SC:.*]] =
// CHECK-NEXT:          memref.store %[[SF]], %[[SM]][%[[SI]], %[[SH]], %[[SC]]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func @nest
// CHECK-SAME:    (%[[T:.*]]: index
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[C8:.*]] = arith.constant 8 : index
// CHECK:         %[[SPAN0:.*]] = arith.subi %[[T]], %[[C0]]
// CHECK:         %[[EMPTY0:.*]] = arith.cmpi sle, %[[T]], %[[C0]]
// CHECK:         %[[TRIPS0:.*]] = arith.ceildivsi %[[SPAN0]], %[[C1]]
// CHECK:         %[[N0:.*]] = arith.select %[[EMPTY0]], %{{.*}}, %[[TRIPS0]]
// CHECK:         %[[P0:.*]] = arith.muli %{{.*}}, %[[N0]]
// CHECK:         %[[SPAN1:.*]] = arith.subi %[[C8]], %[[C0]]
// CHECK:         %[[EMPTY1:.*]] = arith.cmpi sle, %[[C8]], %[[C0]]
// CHECK:         %[[TRIPS1:.*]] = arith.ceildivsi %[[SPAN1]], %[[C1]]
// CHECK:         %[[N1:.*]] = arith.select %[[EMPTY1]], %{{.*}}, %[[TRIPS1]]
// CHECK:         %[[P1:.*]] = arith.muli %[[P0]], %[[N1]]
// CHECK:         %[[C64:.*]] = arith.constant 64 : index
// CHECK:         %[[BIG:.*]] = arith.cmpi sge, %[[P1]], %[[C64]]
// CHECK:         scf.if %[[BIG]] {
// CHECK-NEXT:      func.call @nest_threaded0(%arg1, %[[T]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @nest_sequential0(%arg1, %[[T]])
// CHECK-NEXT:    }
// CHECK-NEXT:    return
// ALWAYS-NOT:    func.func private
// ALWAYS-LABEL: func.func @nest
// ALWAYS-NOT:    scf.if
// ALWAYS-NOT:    scf.for
func.func @nest(%t: index, %m: memref<?x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %h) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    scf.parallel (%c) = (%c0) to (%c16) step (%c1) {
      memref.store %f, %m[%i, %h, %c] : memref<?x8x16xf32>
    }
  }
  return
}

// -----

// Two nests, two flags, two pairs of outlined copies with names of their
// own; code outside the nests stays where it was.
// CHECK-LABEL: func.func private @two_threaded0
// CHECK-LABEL: func.func private @two_sequential0
// CHECK-LABEL: func.func private @two_threaded1
// CHECK-LABEL: func.func private @two_sequential1
// CHECK-LABEL: func.func @two
// CHECK:         scf.if
// CHECK-NEXT:      call @two_threaded0
// CHECK-NEXT:    } else {
// CHECK-NEXT:      call @two_sequential0
// CHECK:         memref.store {{.*}}[%{{.*}}] : memref<4xf32>
// CHECK:         scf.if
// CHECK-NEXT:      call @two_threaded1
// CHECK-NEXT:    } else {
// CHECK-NEXT:      call @two_sequential1
// CHECK-NOT:     scf.if
func.func @two(%t: index, %m: memref<?xf32>, %z: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    memref.store %f, %m[%i] : memref<?xf32>
  }
  memref.store %f, %z[%c0] : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    memref.store %f, %m[%i] : memref<?xf32>
  }
  return
}
