// ptxas accepts every kernel of the decoder layer for sm_90 (unfused, the
// default conv-insert fusion, and both kernels of packed-inserts) with no
// stack frame and no spills, and uses the registers docs/gpu.md's table
// states (ptxas of CUDA 13.0, the toolkit of this machine; another ptxas may
// allocate differently: then re-measure and update the table and this test
// together). The table's 16-byte access columns are the manifest's static
// counts, checked below as well.
// REQUIRES: ptxas
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k0_conv_k.ptx -o %t/k0.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K0
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k1_insert_k.ptx -o %t/k1.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K1
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k2_conv_v.ptx -o %t/k2.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K2
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k3_insert_v.ptx -o %t/k3.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K3
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k4_conv_attn.ptx -o %t/k4.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K4
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k5_insert_attn.ptx -o %t/k5.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K5
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k6_conv_mlp.ptx -o %t/k6.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K6
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k7_insert_mlp.ptx -o %t/k7.cubin 2>&1 | FileCheck %s --check-prefixes=CHECK,K7

// CHECK: Compiling entry function 'decoder_layer_k{{[0-7]}}_{{conv|insert}}_{{k|v|attn|mlp}}' for 'sm_90'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// K0: Used 56 registers
// K1: Used 20 registers
// K2: Used 60 registers
// K3: Used 20 registers
// K4: Used 56 registers
// K5: Used 20 registers
// K6: Used 56 registers
// K7: Used 20 registers

// RUN: FileCheck %s --check-prefix=V4 < %t/manifest.json
// V4: "name": "decoder_layer_k0_conv_k",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 8,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k1_insert_k",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 1,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k2_conv_v",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 11,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k3_insert_v",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 1,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k4_conv_attn",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 11,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k5_insert_attn",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 1,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k6_conv_mlp",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 11,
// V4-NEXT: "ptx_global_v4_stores": 1,
// V4: "name": "decoder_layer_k7_insert_mlp",
// V4: "ptx_global_b16_accesses": 0,
// V4-NEXT: "ptx_global_v4_loads": 1,
// V4-NEXT: "ptx_global_v4_stores": 1,

// format=bin runs ptxas inside the pipeline: the bundle holds cubins.
// RUN: rm -rf %t.bin && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm="format=bin fusion=none" --inkling-gpu-write-kernels=dir=%t.bin -o /dev/null
// RUN: FileCheck %s --check-prefix=BIN < %t.bin/manifest.json
// BIN: "file": "decoder_layer_k0_conv_k.cubin",
// BIN-NEXT: "format": "cubin",
// BIN: "format": "cubin"

// The fused kernels: the pipeline's default conv-insert (one kernel), and
// packed-inserts (a fused conv and one packed insert).
// RUN: rm -rf %t.fused && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm --inkling-gpu-write-kernels=dir=%t.fused -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t.fused/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx -o %t.fused/f.cubin 2>&1 | FileCheck %s --check-prefixes=FUSED,FUSED-REGS
// RUN: FileCheck %s --check-prefix=FUSED-V4 < %t.fused/manifest.json
// RUN: rm -rf %t.packed && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=packed-inserts --inkling-gpu-write-kernels=dir=%t.packed -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t.packed/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx -o %t.packed/c.cubin 2>&1 | FileCheck %s --check-prefixes=FUSED,PACKED-CONV
// RUN: %ptxas -arch=sm_90 -v %t.packed/decoder_layer_k1_insert_packed_k_v_attn_mlp.ptx -o %t.packed/p.cubin 2>&1 | FileCheck %s --check-prefixes=FUSED,PACKED-INSERT
// RUN: FileCheck %s --check-prefix=PACKED-V4 < %t.packed/manifest.json
// FUSED: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// FUSED-REGS: Used 72 registers
// PACKED-CONV: Used 72 registers
// PACKED-INSERT: Used 18 registers
// FUSED-V4: "name": "decoder_layer_k0_fused_conv_k_v_attn_mlp",
// FUSED-V4: "ptx_global_b16_accesses": 0,
// FUSED-V4-NEXT: "ptx_global_v4_loads": 30,
// FUSED-V4-NEXT: "ptx_global_v4_stores": 7,
// PACKED-V4: "name": "decoder_layer_k0_fused_conv_k_v_attn_mlp",
// PACKED-V4: "ptx_global_b16_accesses": 0,
// PACKED-V4-NEXT: "ptx_global_v4_loads": 30,
// PACKED-V4-NEXT: "ptx_global_v4_stores": 4,
// PACKED-V4: "name": "decoder_layer_k1_insert_packed_k_v_attn_mlp",
// PACKED-V4: "ptx_global_b16_accesses": 0,
// PACKED-V4-NEXT: "ptx_global_v4_loads": 3,
// PACKED-V4-NEXT: "ptx_global_v4_stores": 3,
