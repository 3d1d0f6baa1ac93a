// RUN: inkling-opt %s --inkling-cpu-streaming-stores=min-iterations=4096 --split-input-file | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-streaming-stores=min-iterations=0 --split-input-file | FileCheck %s --check-prefix=NEVER

// One flag per nest, computed before it from its trip counts; every vector
// store in the nest (the inner loop's too) is chosen by it: non-temporal
// when the nest is large, as it was otherwise. Loads and scalar stores stay.
// CHECK-LABEL: func.func @nest
// CHECK-SAME:    (%[[T:.*]]: index
// CHECK:         arith.cmpi sle, %[[T]]
// CHECK:         arith.cmpi sle
// CHECK:         %[[C4096:.*]] = arith.constant 4096 : index
// CHECK:         %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %[[C4096]] : index
// CHECK:         scf.parallel (%[[I:.*]], %[[H:.*]]) =
// CHECK:           %[[V:.*]] = vector.load
// CHECK-NOT:       nontemporal
// CHECK:           scf.parallel
// CHECK:             scf.if %[[BIG]] {
// CHECK-NEXT:          vector.store %[[V]], %{{.*}}[%[[I]], %[[H]], %{{.*}}] {nontemporal = true} : memref<?x8x16xbf16>, vector<8xbf16>
// CHECK-NEXT:        } else {
// CHECK-NEXT:          vector.store %[[V]], %{{.*}}[%[[I]], %[[H]], %{{.*}}] : memref<?x8x16xbf16>, vector<8xbf16>
// CHECK-NEXT:        }
// CHECK:           memref.store
// CHECK-NOT:       nontemporal
// NEVER-LABEL: func.func @nest
// NEVER-NOT:     nontemporal
// NEVER-NOT:     scf.if
func.func @nest(%t: index, %x: memref<?x8x16xbf16>, %y: memref<?x8x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c15 = arith.constant 15 : index
  scf.parallel (%i, %h) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    %v = vector.load %x[%i, %h, %c0] : memref<?x8x16xbf16>, vector<8xbf16>
    scf.parallel (%c) = (%c0) to (%c2) step (%c1) {
      vector.store %v, %y[%i, %h, %c0] : memref<?x8x16xbf16>, vector<8xbf16>
    }
    %s = memref.load %x[%i, %h, %c15] : memref<?x8x16xbf16>
    memref.store %s, %y[%i, %h, %c15] : memref<?x8x16xbf16>
  }
  return
}

// -----

// A nest without vector stores gets no flag; stores outside any nest stay.
// CHECK-LABEL: func.func @no_vector_store
// CHECK-NOT:     arith.cmpi
// CHECK-NOT:     scf.if
// CHECK:         vector.store %{{.*}} : memref<16xbf16>, vector<8xbf16>
func.func @no_vector_store(%t: index, %x: memref<?xbf16>, %v: vector<8xbf16>, %z: memref<16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %s = memref.load %x[%i] : memref<?xbf16>
    memref.store %s, %x[%i] : memref<?xbf16>
  }
  vector.store %v, %z[%c0] : memref<16xbf16>, vector<8xbf16>
  return
}
