// RUN: inkling-opt %s --inkling-cpu-hoist-static-allocas --split-input-file | FileCheck %s

// A fixed-size buffer of a sequential nest: to the top of the function,
// out of both loops and the scf.if.
// CHECK-LABEL: func.func @sequential
// CHECK-NEXT:    %[[S:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4x32xbf16>
// CHECK:         scf.for
// CHECK:           scf.if
// CHECK-NOT:         memref.alloca
// CHECK:             vector.store %{{.*}}, %[[S]]
func.func @sequential(%n: index, %p: i1, %x: memref<?x32xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.if %p {
      %s = memref.alloca() {alignment = 64 : i64} : memref<4x32xbf16>
      %v = vector.load %x[%i, %c0] : memref<?x32xbf16>, vector<32xbf16>
      vector.store %v, %s[%c0, %c0] : memref<4x32xbf16>, vector<32xbf16>
    }
  }
  return
}

// -----

// Under OpenMP: to the top of the omp.parallel region (one buffer per
// thread), out of the wsloop and the alloca_scope convert-scf-to-openmp
// wraps each body in; not above the omp.parallel (shared by the threads).
// CHECK-LABEL: func.func @threads
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1
// CHECK-NEXT:    omp.parallel {
// CHECK-NEXT:      %[[S:.*]] = memref.alloca() : memref<16xf32>
// CHECK-NEXT:      omp.wsloop {
// CHECK:             memref.alloca_scope {
// CHECK-NOT:           memref.alloca()
// CHECK:               memref.store %{{.*}}, %[[S]]
func.func @threads(%n: index, %x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.alloca_scope {
          %s = memref.alloca() : memref<16xf32>
          %v = memref.load %x[%i] : memref<?xf32>
          memref.store %v, %s[%c0] : memref<16xf32>
        }
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Stays: a dynamic size (its operand is defined in the loop), an alloca
// already at the top of its scope, and one under an allocation scope this
// pass does not know (omp.task: its buffer is the task's own).
// CHECK-LABEL: func.func @stays
// CHECK:         scf.for
// CHECK-NEXT:      memref.alloca(%{{.*}}) : memref<?xf32>
// CHECK:         omp.task {
// CHECK-NEXT:      memref.alloca() : memref<8xf32>
func.func @stays(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %d = memref.alloca(%i) : memref<?xf32>
  }
  omp.task {
    %t = memref.alloca() : memref<8xf32>
    omp.terminator
  }
  return
}
