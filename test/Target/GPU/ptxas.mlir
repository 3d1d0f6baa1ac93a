// ptxas accepts every kernel of the decoder layer for sm_90 with no spills
// (registers per kernel are recorded in docs/gpu.md).
// REQUIRES: ptxas
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-write-kernels=dir=%t -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k0_conv_k.ptx -o %t/k0.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k1_insert_k.ptx -o %t/k1.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k2_conv_v.ptx -o %t/k2.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k3_insert_v.ptx -o %t/k3.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k4_conv_attn.ptx -o %t/k4.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k5_insert_attn.ptx -o %t/k5.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k6_conv_mlp.ptx -o %t/k6.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k7_insert_mlp.ptx -o %t/k7.cubin 2>&1 | FileCheck %s

// CHECK: Compiling entry function 'decoder_layer_k{{[0-7]}}_{{conv|insert}}_{{k|v|attn|mlp}}' for 'sm_90'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Used {{[0-9]+}} registers

// format=bin runs ptxas inside the pipeline: the bundle holds cubins.
// RUN: rm -rf %t.bin && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm="format=bin fusion=none" --inkling-write-kernels=dir=%t.bin -o /dev/null
// RUN: FileCheck %s --check-prefix=BIN < %t.bin/manifest.json
// BIN: "file": "decoder_layer_k0_conv_k.cubin",
// BIN-NEXT: "format": "cubin",
// BIN: "format": "cubin"

// The fused kernels (the pipeline's default conv-insert fusion; the
// packed-insert strategy) spill nothing either.
// RUN: rm -rf %t.fused && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm --inkling-write-kernels=dir=%t.fused -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t.fused/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx -o %t.fused/f.cubin 2>&1 | FileCheck %s --check-prefix=FUSED
// RUN: rm -rf %t.packed && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=packed-inserts --inkling-write-kernels=dir=%t.packed -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t.packed/decoder_layer_k1_insert_packed_k_v_attn_mlp.ptx -o %t.packed/p.cubin 2>&1 | FileCheck %s --check-prefix=FUSED
// FUSED: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
