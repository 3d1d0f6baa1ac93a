// ptxas accepts every kernel of the decoder layer at block sizes N = 16 and
// N = 3 (W = 4) for sm_90 with no spills, unfused and fused.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed -e 's/kernel = 4, tp = 1>/kernel = 4, tp = 1, block_size = 16>/' \
// RUN:   -e 's/x8x4x2048xbf16, strided<\[65536, 8192/x8x16x2048xbf16, strided<[262144, 32768/' \
// RUN:   -e 's/page_bytes 131072/page_bytes 524288/' \
// RUN:   %inkling_src/examples/decoder_layer.mlir > %t/n16.mlir
// RUN: sed -e 's/kernel = 4, tp = 1>/kernel = 4, tp = 1, block_size = 3>/' \
// RUN:   -e 's/x8x4x2048xbf16, strided<\[65536, 8192/x8x3x2048xbf16, strided<[49152, 6144/' \
// RUN:   -e 's/page_bytes 131072/page_bytes 98304/' \
// RUN:   %inkling_src/examples/decoder_layer.mlir > %t/n3.mlir
// RUN: inkling-opt %t/n16.mlir --inkling-lower-to-nvvm=fusion=none \
// RUN:   --inkling-gpu-write-kernels=dir=%t/n16 -o /dev/null
// RUN: inkling-opt %t/n3.mlir --inkling-lower-to-nvvm=fusion=none \
// RUN:   --inkling-gpu-write-kernels=dir=%t/n3 -o /dev/null
// RUN: inkling-opt %t/n16.mlir --inkling-lower-to-nvvm \
// RUN:   --inkling-gpu-write-kernels=dir=%t/n16fused -o /dev/null
// RUN: inkling-opt %t/n3.mlir --inkling-lower-to-nvvm \
// RUN:   --inkling-gpu-write-kernels=dir=%t/n3fused -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t/n16/decoder_layer_k0_conv_k.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n16/decoder_layer_k1_insert_k.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n16/decoder_layer_k4_conv_attn.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n16/decoder_layer_k7_insert_mlp.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n3/decoder_layer_k0_conv_k.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n3/decoder_layer_k1_insert_k.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n3/decoder_layer_k6_conv_mlp.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n3/decoder_layer_k5_insert_attn.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n16fused/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx -o %t/a.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t/n3fused/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx -o %t/a.cubin 2>&1 | FileCheck %s

// CHECK: Compiling entry function 'decoder_layer_k{{[0-9]}}_{{conv|insert|fused_conv}}_{{[a-z_]+}}' for 'sm_90'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Used {{[0-9]+}} registers
