// RUN: inkling-opt %s --inkling-cpu-streaming-stores=min-iterations=4096 --split-input-file | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-streaming-stores=min-iterations=0 --split-input-file | FileCheck %s --check-prefix=NEVER

// One flag per nest, computed before it from its trip counts, chooses
// between a copy of the nest whose vector stores (the inner loop's too) are
// non-temporal and the nest as it was. Loads and scalar stores stay.
// CHECK-LABEL: func.func @nest
// CHECK-SAME:    (%[[T:.*]]: index
// CHECK:         arith.cmpi sle, %[[T]]
// CHECK:         arith.cmpi sle
// CHECK:         %[[C4096:.*]] = arith.constant 4096 : index
// CHECK:         %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %[[C4096]] : index
// CHECK-NOT:     extract_aligned_pointer
// CHECK:         scf.if %[[BIG]] {
// CHECK:           scf.parallel (%[[I:.*]], %[[H:.*]]) =
// CHECK:             %[[V:.*]] = vector.load
// CHECK:             scf.parallel
// CHECK-NEXT:          vector.store %[[V]], %{{.*}}[%[[I]], %[[H]], %{{.*}}] {nontemporal = true} : memref<?x8x16xbf16>, vector<8xbf16>
// CHECK:             memref.store
// CHECK:         } else {
// CHECK:           scf.parallel (%[[I2:.*]], %[[H2:.*]]) =
// CHECK:             %[[V2:.*]] = vector.load
// CHECK:             scf.parallel
// CHECK-NEXT:          vector.store %[[V2]], %{{.*}}[%[[I2]], %[[H2]], %{{.*}}] : memref<?x8x16xbf16>, vector<8xbf16>
// CHECK:             memref.store
// CHECK-NOT:     nontemporal
// CHECK:         return
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

// A line store (inkling.line_aligned, from the loop lowering): the copy
// runs only when its memref's base (aligned pointer + offset x 2 bytes) is
// a multiple of 64 at run time, and claims 64-byte alignment; the other
// store streams with the alignment it had.
// CHECK-LABEL: func.func @line
// CHECK-SAME:    (%[[T:.*]]: index, %[[X:.*]]: memref<?x8x32xbf16>, %[[Y:.*]]: memref<?x8x32xbf16>, %[[Z:.*]]: memref<?x8x32xbf16>)
// CHECK:         %[[BIG:.*]] = arith.cmpi sge
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK:         %{{.*}}, %[[OFF:.*]], %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %[[Y]]
// CHECK:         %[[BYTES:.*]] = arith.muli %[[OFF]], %c2
// CHECK:         %[[ADDR:.*]] = arith.addi %[[P]], %[[BYTES]]
// CHECK:         %[[MIS:.*]] = arith.andi %[[ADDR]], %c63
// CHECK:         %[[ALIGNED:.*]] = arith.cmpi eq, %[[MIS]], %c0
// CHECK:         %[[STREAM:.*]] = arith.andi %[[BIG]], %[[ALIGNED]] : i1
// CHECK-NOT:     extract_aligned_pointer
// CHECK:         scf.if %[[STREAM]] {
// CHECK:           vector.store %{{.*}}, %[[Y]]{{.*}} {alignment = 64 : i64, inkling.line_aligned, nontemporal = true} : memref<?x8x32xbf16>, vector<32xbf16>
// CHECK:           vector.store %{{.*}}, %[[Z]]{{.*}} {alignment = 16 : i64, nontemporal = true} : memref<?x8x32xbf16>, vector<32xbf16>
// CHECK:         } else {
// CHECK:           vector.store %{{.*}}, %[[Y]]{{.*}} {alignment = 16 : i64, inkling.line_aligned} : memref<?x8x32xbf16>, vector<32xbf16>
// CHECK:           vector.store %{{.*}}, %[[Z]]{{.*}} {alignment = 16 : i64} : memref<?x8x32xbf16>, vector<32xbf16>
func.func @line(%t: index, %x: memref<?x8x32xbf16>, %y: memref<?x8x32xbf16>, %z: memref<?x8x32xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %h) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    %v = vector.load %x[%i, %h, %c0] {alignment = 16 : i64} : memref<?x8x32xbf16>, vector<32xbf16>
    vector.store %v, %y[%i, %h, %c0] {alignment = 16 : i64, inkling.line_aligned} : memref<?x8x32xbf16>, vector<32xbf16>
    vector.store %v, %z[%i, %h, %c0] {alignment = 16 : i64} : memref<?x8x32xbf16>, vector<32xbf16>
  }
  return
}

// -----

// A nest without vector stores is not copied; stores outside any nest stay.
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

// -----

// A scratch buffer of the nest (a memref.alloca in it, read back at once)
// keeps ordinary stores in the streaming copy; the output's store streams.
// CHECK-LABEL: func.func @scratch
// CHECK:         scf.if
// CHECK:           %[[S:.*]] = memref.alloca() : memref<8xbf16>
// CHECK:           vector.store %{{.*}}, %[[S]][%{{.*}}] : memref<8xbf16>, vector<8xbf16>
// CHECK:           vector.store %{{.*}} {nontemporal = true} : memref<?x8xbf16>, vector<8xbf16>
// CHECK:         } else {
func.func @scratch(%t: index, %x: memref<?x8xbf16>, %y: memref<?x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %s = memref.alloca() : memref<8xbf16>
    %v = vector.load %x[%i, %c0] : memref<?x8xbf16>, vector<8xbf16>
    vector.store %v, %s[%c0] : memref<8xbf16>, vector<8xbf16>
    %w = vector.load %s[%c0] : memref<8xbf16>, vector<8xbf16>
    vector.store %w, %y[%i, %c0] : memref<?x8xbf16>, vector<8xbf16>
    scf.reduce
  }
  return
}

// -----

// A nest's own inkling.stream_min_iterations replaces the option (here 1:
// every non-empty step streams); a store marked inkling.cached_store stays
// ordinary in the streaming copy.
// CHECK-LABEL: func.func @own_threshold
// CHECK:         arith.muli
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %[[ONE]] : index
// CHECK:         scf.if %[[BIG]]
// CHECK:           vector.store %{{.*}} {nontemporal = true} : memref<?x8xbf16>, vector<8xbf16>
// CHECK:           vector.store %{{.*}} {inkling.cached_store} : memref<?x8xbf16>, vector<8xbf16>
// CHECK:         } else {
// NEVER-LABEL: func.func @own_threshold
// NEVER-NOT:     nontemporal
func.func @own_threshold(%t: index, %x: memref<?x8xbf16>, %y: memref<?x8xbf16>, %z: memref<?x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %v = vector.load %x[%i, %c0] : memref<?x8xbf16>, vector<8xbf16>
    vector.store %v, %y[%i, %c0] : memref<?x8xbf16>, vector<8xbf16>
    vector.store %v, %z[%i, %c0] {inkling.cached_store} : memref<?x8xbf16>, vector<8xbf16>
    scf.reduce
  } {inkling.stream_min_iterations = 1 : i64}
  return
}
