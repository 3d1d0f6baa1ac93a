// inkling-gpu-sink: a side-effect-free value the launch body uses is
// recomputed inside it, so the outlined kernel takes only the host
// function's buffers; the launch's own operands stay outside.
// RUN: inkling-opt %s --inkling-gpu-sink | FileCheck %s

// CHECK-LABEL: func.func @sink
// CHECK: %[[DIM:.*]] = memref.dim
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[DIM]],
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: memref.store %[[TWO]], %arg0[%[[B]]]
func.func @sink(%buf: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %buf, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %two, %buf[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
