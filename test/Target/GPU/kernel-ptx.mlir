// The PTX of the decoder layer's unfused kernels, as inkling-gpu-write-kernels
// writes them (no GPU, no ptxas needed).
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: FileCheck %s --check-prefix=INSERT < %t/decoder_layer_k1_insert_k.ptx
// RUN: FileCheck %s --check-prefix=INSERT-ATTN < %t/decoder_layer_k5_insert_attn.ptx
// RUN: FileCheck %s --check-prefix=CONV < %t/decoder_layer_k0_conv_k.ptx
// RUN: FileCheck %s --check-prefix=CONV < %t/decoder_layer_k6_conv_mlp.ptx

// The K insert: block (t, h) = (ctaid.x, ctaid.y), thread = 16-byte chunk
// (16 per 128-channel row). The row copy is one 16-byte load of x and one
// 16-byte store into the cache, never per-element bf16 accesses; the cache
// address goes through the block stride (65536 elements = 131072 bytes:
// (slot / 4) * 131072 as a shift and mask), the head stride (16384 bytes)
// and the row within the block ((slot % 4) * 4096 bytes).
// INSERT-LABEL: .visible .entry decoder_layer_k1_insert_k(
// Each descriptor's allocated pointer (unused by the kernel) declares the
// element size as its alignment, for checkers that see only the PTX.
// INSERT-NEXT: .param .u64 .ptr .align 1 decoder_layer_k1_insert_k_param_0,
// INSERT: .param .u64 .ptr .align 8 decoder_layer_k1_insert_k_param_5,
// INSERT: .param .u64 .ptr .align 4 decoder_layer_k1_insert_k_param_10,
// INSERT: .param .u64 .ptr .align 2 decoder_layer_k1_insert_k_param_15,
// INSERT: .maxntid 16, 1, 1
// INSERT-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// INSERT-NOT: st.global.{{[bu]}}16
// INSERT-DAG: %ctaid.x
// INSERT-DAG: %ctaid.y
// INSERT-DAG: %tid.x
// INSERT: ld.global.v4.b32 {[[A:%r[0-9]+]], [[B:%r[0-9]+]], [[C:%r[0-9]+]], [[D:%r[0-9]+]]}
// INSERT-NOT: .b16
// INSERT: and.b64 {{.*}}, -131072;
// INSERT: mul.wide.u32 {{.*}}, 16384;
// INSERT: and.b64 {{.*}}, 12288;
// INSERT: st.global.v4.b32 [{{%rd[0-9]+}}], {[[A]], [[B]], [[C]], [[D]]};
// INSERT-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// INSERT-NOT: st.global
// INSERT: ret;

// The attn insert: 64 threads cover a head's 512-channel row.
// INSERT-ATTN: .maxntid 64, 1, 1
// INSERT-ATTN-NOT: {{[bu]}}16
// INSERT-ATTN: ld.global.v4.b32
// INSERT-ATTN: st.global.v4.b32
// INSERT-ATTN-NOT: st.global

// A conv: history taps read through the block table and the block stride
// (physical block * 131072 bytes), 16-byte loads and one 16-byte store, and
// per lane the f32 chain of one fma per tap (4 taps x 8 lanes), rounded to
// bf16 once at the end.
// CONV: .maxntid {{16|64}}, 1, 1
// CONV-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// CONV: mul.wide.s32 {{.*}}, 131072;
// CONV: ld.global.v4.b32
// CONV-COUNT-32: fma.rn.f32
// CONV-NOT: fma.rn.f32
// CONV: cvt.rn.bf16x2.f32
// CONV: st.global.v4.b32
// CONV-NOT: st.global
