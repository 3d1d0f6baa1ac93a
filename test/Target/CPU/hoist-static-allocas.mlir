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
// The scope, left without an allocation, is inlined.
// CHECK-LABEL: func.func @threads
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1
// CHECK-NEXT:    omp.parallel {
// CHECK-NEXT:      %[[S:.*]] = memref.alloca() : memref<16xf32>
// CHECK-NEXT:      omp.wsloop {
// CHECK-NEXT:        omp.loop_nest
// CHECK-NEXT:          memref.load
// CHECK-NEXT:          memref.store %{{.*}}, %[[S]]
// CHECK-NEXT:          omp.yield
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

// -----

// Alloca scopes: one holding only an intrinsic call (which has no
// memory-effect interface, but allocates nothing) and its results is
// inlined, as is one around a loop holding another; one holding a dynamic alloca, or an op that may allocate (an
// llvm.call of unknown effects), stays.
// CHECK-LABEL: func.func @scopes
// CHECK-NOT:     memref.alloca_scope {
// CHECK:         %[[R:.*]] = llvm.call_intrinsic "llvm.x86.avx512.fpclass.ps.512"
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      llvm.call_intrinsic
// CHECK:         vector.reduction <or>, %[[R]]
// CHECK:         memref.alloca_scope {
// CHECK-NEXT:      memref.alloca(%{{.*}}) : memref<?xf32>
// CHECK:         memref.alloca_scope {
// CHECK-NEXT:      llvm.call @opaque()
llvm.func @opaque()
func.func @scopes(%v: vector<16xf32>, %n: index) -> i1 {
  %c = llvm.mlir.constant(161 : i32) : i32
  %r = memref.alloca_scope -> (vector<16xi1>) {
    %f = llvm.call_intrinsic "llvm.x86.avx512.fpclass.ps.512"(%v, %c) : (vector<16xf32>, i32) -> vector<16xi1>
    memref.alloca_scope.return %f : vector<16xi1>
  }
  memref.alloca_scope {
    scf.for %i = %n to %n step %n {
      %g = llvm.call_intrinsic "llvm.x86.avx512.fpclass.ps.512"(%v, %c) : (vector<16xf32>, i32) -> vector<16xi1>
    }
  }
  %any = vector.reduction <or>, %r : vector<16xi1> into i1
  memref.alloca_scope {
    %d = memref.alloca(%n) : memref<?xf32>
  }
  memref.alloca_scope {
    llvm.call @opaque() : () -> ()
  }
  return %any : i1
}
