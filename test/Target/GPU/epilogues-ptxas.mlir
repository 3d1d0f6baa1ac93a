// The extended decoder layer (examples/decoder_layer_epilogues.mlir, issue
// #29) lowers for the GPU to three kernels: K/V with k_norm and the
// attention KV writes, ATTN and MLP each with the residual add and the
// hidden-row norm. ptxas (CUDA 13.0) accepts all three for sm_90, none with
// a stack frame or spills: the K/V kernel spreads a (token, head) row's 16
// chunks over 16 threads (block [16]) and reduces the sum of squares with
// warp shuffles (shfl.sync.bfly 1, 2, 4, 8, then lane 0's sum to all with
// shfl.sync.idx); the ATTN/MLP kernels run one block per token (block
// [256]: a head's 64 chunks on 32 lanes), the heads' sums through shared
// memory and a barrier (bar.sync) (docs/gpu.md, "Epilogues"). The rows are
// 16-byte accesses.
// REQUIRES: ptxas
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer_epilogues.mlir \
// RUN:   --inkling-lower-to-nvvm --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k0_fused_conv_kv_write_k_v.ptx -o %t/k0.cubin 2>&1 | FileCheck %s --check-prefix=KV
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k1_fused_conv_add_norm_attn.ptx -o %t/k1.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k2_fused_conv_add_norm_mlp.ptx -o %t/k2.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: FileCheck %s --check-prefix=PTX < %t/decoder_layer_k0_fused_conv_kv_write_k_v.ptx
// RUN: FileCheck %s --check-prefix=KVSYNC < %t/decoder_layer_k0_fused_conv_kv_write_k_v.ptx
// RUN: FileCheck %s --check-prefix=ROWSYNC < %t/decoder_layer_k1_fused_conv_add_norm_attn.ptx
// RUN: FileCheck %s --check-prefix=ROWSYNC < %t/decoder_layer_k2_fused_conv_add_norm_mlp.ptx
// RUN: FileCheck %s --check-prefix=BLOCKS < %t/manifest.json

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
// ROW: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// ROW: Used {{[0-9]+}} registers, used 1 barriers, 32 bytes smem

// The K/V row: 4 butterfly steps, then lane 0's sum; no barrier.
// KVSYNC-COUNT-4: shfl.sync.bfly.b32
// KVSYNC: shfl.sync.idx.b32
// KVSYNC-NOT: bar.sync
// A hidden row's head: 5 butterfly steps (32 lanes), lane 0's sum, then
// the barrier before the tree over the heads' sums in shared memory.
// ROWSYNC-COUNT-5: shfl.sync.bfly.b32
// ROWSYNC: shfl.sync.idx.b32
// ROWSYNC: st.shared.b32
// ROWSYNC: bar.sync 0
// ROWSYNC: ld.shared

// The launches: K/V a block per (token, head) row of 16 threads; ATTN and
// MLP a block per token of 256 threads.
// BLOCKS: "block": [16, 1, 1]
// BLOCKS-NEXT: "entry": "decoder_layer_k0_fused_conv_kv_write_k_v"
// BLOCKS: "block": [256, 1, 1]
// BLOCKS-NEXT: "entry": "decoder_layer_k1_fused_conv_add_norm_attn"
// BLOCKS: "block": [256, 1, 1]
// BLOCKS-NEXT: "entry": "decoder_layer_k2_fused_conv_add_norm_mlp"

// The norm's inverse root: a correctly rounded sqrt, then 1 / r correctly
// rounded (rcp.rn is IEEE's 1 / r), no approximate rsqrt
// (inkling-gpu-fma-to-llvm calls __nv_fsqrt_rn).
// PTX: .entry decoder_layer_k0_fused_conv_kv_write_k_v
// PTX-NOT: rsqrt.approx
// PTX-NOT: sqrt.approx
// PTX: sqrt.rn.f32
// PTX-NEXT: rcp.rn.f32
// PTX: st.global.v4.b32
