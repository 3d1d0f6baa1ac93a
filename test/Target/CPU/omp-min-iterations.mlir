// RUN: inkling-opt %s --inkling-cpu-omp-min-iterations=min-iterations=64 --split-input-file | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-omp-min-iterations=min-iterations=1 --split-input-file | FileCheck %s --check-prefix=ALWAYS

// The team forks only when (ub0 - lb0) / s0 * (ub1 - lb1) / s1 >= 64, each
// trip count rounded up and clamped at 0 for an empty dimension.
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
// CHECK:         %[[FORK:.*]] = arith.cmpi sge, %[[P1]], %[[C64]]
// CHECK:         omp.parallel if(%[[FORK]])
// CHECK:           omp.wsloop
// ALWAYS-LABEL: func.func @nest
// ALWAYS-NOT:    if(
// ALWAYS:        omp.parallel {
func.func @nest(%t: index, %m: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i, %h) : index = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
        memref.store %f, %m[%i, %h] : memref<?x8xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// A region with something beside its wsloop, or bounds computed inside the
// region, or an `if` of its own, is left alone.
// CHECK-LABEL: func.func @other_work
// CHECK-NOT:     arith.cmpi
// CHECK:         omp.parallel {
// CHECK-LABEL: func.func @inner_bounds
// CHECK-NOT:     arith.cmpi sge
// CHECK:         omp.parallel {
// CHECK-LABEL: func.func @has_if
// CHECK-NOT:     arith.cmpi
// CHECK:         omp.parallel if(%{{.*}})
func.func @other_work(%t: index, %m: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    memref.store %f, %m[%c0] : memref<?xf32>
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%t) step (%c1) {
        memref.store %f, %m[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
func.func @inner_bounds(%m: memref<?xf32>) {
  %f = arith.constant 1.0 : f32
  omp.parallel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %d = memref.dim %m, %c0 : memref<?xf32>
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%d) step (%c1) {
        memref.store %f, %m[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
func.func @has_if(%t: index, %m: memref<?xf32>, %cond: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  omp.parallel if(%cond) {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%t) step (%c1) {
        memref.store %f, %m[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
