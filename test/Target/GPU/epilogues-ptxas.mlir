// The extended decoder layer (examples/decoder_layer_epilogues.mlir, issue
// #29) lowers for the GPU to three kernels: K/V with k_norm and the
// attention KV writes, ATTN and MLP each with the residual add and the
// hidden-row norm. ptxas (CUDA 13.0) accepts all three for sm_90; the K/V
// kernel has no stack frame and no spills. The ATTN/MLP kernels still
// spill: each runs a token's whole hidden row in one thread (grid [T],
// block [1]); the block-per-token form with workgroup memory is not built
// (docs/gpu.md, "Epilogues"). The K/V kernel's rows are 16-byte accesses.
// REQUIRES: ptxas
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer_epilogues.mlir \
// RUN:   --inkling-lower-to-nvvm --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k0_fused_conv_kv_write_k_v.ptx -o %t/k0.cubin 2>&1 | FileCheck %s --check-prefix=KV
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k1_fused_conv_add_norm_attn.ptx -o %t/k1.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k2_fused_conv_add_norm_mlp.ptx -o %t/k2.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: FileCheck %s --check-prefix=PTX < %t/decoder_layer_k0_fused_conv_kv_write_k_v.ptx

// FILES: decoder_layer_k0_fused_conv_kv_write_k_v.host.ll
// FILES-NEXT: decoder_layer_k0_fused_conv_kv_write_k_v.ptx
// FILES-NEXT: decoder_layer_k1_fused_conv_add_norm_attn.host.ll
// FILES-NEXT: decoder_layer_k1_fused_conv_add_norm_attn.ptx
// FILES-NEXT: decoder_layer_k2_fused_conv_add_norm_mlp.host.ll
// FILES-NEXT: decoder_layer_k2_fused_conv_add_norm_mlp.ptx
// FILES-NEXT: manifest.json

// KV: Compiling entry function 'decoder_layer_k0_fused_conv_kv_write_k_v' for 'sm_90'
// KV: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// KV: Used {{[0-9]+}} registers

// ROW: Compiling entry function 'decoder_layer_k{{[12]}}_fused_conv_add_norm_{{attn|mlp}}' for 'sm_90'

// The norm's inverse root: a correctly rounded sqrt, then 1 / r correctly
// rounded (rcp.rn is IEEE's 1 / r), no approximate rsqrt
// (inkling-gpu-fma-to-llvm calls __nv_fsqrt_rn).
// PTX: .entry decoder_layer_k0_fused_conv_kv_write_k_v
// PTX-NOT: rsqrt.approx
// PTX-NOT: sqrt.approx
// PTX: sqrt.rn.f32
// PTX-NEXT: rcp.rn.f32
// PTX: st.global.v4.b32
