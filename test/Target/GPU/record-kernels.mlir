// inkling-gpu-record-kernels, after the stages before it in
// inkling-lower-to-nvvm: each outlined kernel is renamed
// <host>_k<i>_<op>_<streams>, and the module's `inkling.kernels` records
// its host arguments (in kernel argument order), grid rule (T = dim 0 of
// the tokens argument) and block (one thread per 16-byte chunk: 8 channels
// of k here). The insert reads query_start_loc (argument 1) for qsl[B]:
// tokens at or past it are padding and store nothing.
// RUN: inkling-opt %S/tag-ops.mlir --pass-pipeline='builtin.module( \
// RUN:   inkling-gpu-tag-ops, sconv-lower-to-loops, \
// RUN:   func.func(gpu-map-parallel-loops), convert-parallel-loops-to-gpu, \
// RUN:   canonicalize, lower-affine, inkling-gpu-sink, gpu-kernel-outlining, \
// RUN:   inkling-gpu-record-kernels)' | FileCheck %s

// CHECK-LABEL: module attributes {gpu.container_module, inkling.kernels = [
// CHECK-SAME: block = [1, 1, 1], grid = ["T", 2, 1], host = "layer", host_args = [0, 4, 1, 5]
// CHECK-SAME: name = "layer_k0_insert_k", op = "sconv.insert"
// CHECK-SAME: streams = ["k"]
// CHECK-SAME: host_args = [0, 2, 6, 1, 5, 7, 3, 8]
// CHECK-SAME: name = "layer_k1_conv_k", op = "sconv.conv"
// CHECK: gpu.launch_func @layer_k0_insert_k::@layer_k0_insert_k
// CHECK-SAME: args(%arg0 : memref<?xi8>, %arg4 : memref<?xi64>, %arg1 : memref<?xi32>, %arg5 : memref<?x2x8xbf16>)
// CHECK: gpu.launch_func @layer_k1_conv_k::@layer_k1_conv_k
// CHECK: gpu.module @layer_k0_insert_k
// CHECK: gpu.module @layer_k1_conv_k
