// Fusion inside the pipeline (its `fusion` option, default conv-insert as on
// the CPU) makes the decoder layer one fused_conv (all four streams' convs,
// and their inserts); packed-inserts gives a fused_conv and one
// insert_packed. Each is one kernel whose block has one thread per 16-byte
// chunk of the packed row (16 + 16 + 64 + 64 = 160), every row moved with
// 16-byte accesses. IR fused beforehand (sconv-fuse) through the pipeline
// without fusion gives the same bundle.
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: FileCheck %s --check-prefix=FUSED < %t/manifest.json
// RUN: FileCheck %s --check-prefix=FUSED-PTX < %t/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx
// RUN: rm -rf %t.prefused && inkling-opt %inkling_src/examples/decoder_layer.mlir --sconv-fuse \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-gpu-write-kernels=dir=%t.prefused -o /dev/null
// RUN: diff %t/manifest.json %t.prefused/manifest.json
// RUN: rm -rf %t.packed && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=packed-inserts --inkling-gpu-write-kernels=dir=%t.packed -o /dev/null
// RUN: FileCheck %s --check-prefix=PACKED < %t.packed/manifest.json
// RUN: FileCheck %s --check-prefix=PACKED-PTX < %t.packed/decoder_layer_k1_insert_packed_k_v_attn_mlp.ptx

// All 18 arguments of the layer (token_seq included) go to the one kernel.
// FUSED: "launches": [
// FUSED-NEXT: {
// FUSED-NEXT: "host_args": [{{([0-9]+, ){17}[0-9]+}}],
// FUSED-NEXT: "kernel": "decoder_layer_k0_fused_conv_k_v_attn_mlp"
// FUSED-NEXT: }
// FUSED-NEXT: ],
// FUSED: "attributes": "{activation = #sconv<activation none>, insert, residual = true}",
// FUSED-NEXT: "block": [160, 1, 1],
// FUSED: "grid": ["T", 8, 1],
// FUSED: "op": "sconv.fused_conv",
// FUSED: "ptx_global_b16_accesses": 0,
// FUSED: "streams": ["k", "v", "attn", "mlp"],
// FUSED-NOT: "name":

// FUSED-PTX: .maxntid 160, 1, 1
// FUSED-PTX-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// FUSED-PTX-NOT: st.global.{{[bu]}}16
// FUSED-PTX: fma.rn.f32
// FUSED-PTX: st.global.v4.b32

// PACKED: "kernel": "decoder_layer_k0_fused_conv_k_v_attn_mlp"
// PACKED: "kernel": "decoder_layer_k1_insert_packed_k_v_attn_mlp"
// PACKED: "block": [160, 1, 1],
// PACKED: "op": "sconv.insert_packed",

// PACKED-PTX: .maxntid 160, 1, 1
// PACKED-PTX-NOT: {{[bu]}}16
// PACKED-PTX: ld.global.v4.b32
// PACKED-PTX: st.global.v4.b32
