// The decoder layer's kernels at block sizes N != W = 4 (the engine's
// choice): N = 16 (a power of two: the block and row of a slot are a shift
// and a mask) and N = 3 (a division by a constant). The cache rows stay
// 16-byte loads and stores; the manifest names the layout with its N.
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
// RUN: FileCheck %s --check-prefix=INSERT16 < %t/n16/decoder_layer_k1_insert_k.ptx
// RUN: FileCheck %s --check-prefix=CONV16 < %t/n16/decoder_layer_k0_conv_k.ptx
// RUN: FileCheck %s --check-prefix=INSERT3 < %t/n3/decoder_layer_k1_insert_k.ptx
// RUN: FileCheck %s --check-prefix=CONV3 < %t/n3/decoder_layer_k6_conv_mlp.ptx
// RUN: FileCheck %s --check-prefix=FUSED16 < %t/n16fused/decoder_layer_k0_fused_conv_k_v_attn_mlp.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/n16/manifest.json

// The K insert at N = 16: block = slot >> 4 times the 524288-byte block
// stride (a mask after the shift), row = (slot & 15) * 4096 bytes.
// INSERT16-LABEL: .visible .entry decoder_layer_k1_insert_k(
// INSERT16-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// INSERT16: ld.global.v4.b32 {[[A:%r[0-9]+]], [[B:%r[0-9]+]], [[C:%r[0-9]+]], [[D:%r[0-9]+]]}
// INSERT16: and.b64 {{.*}}, -524288;
// INSERT16: and.b64 {{.*}}, 61440;
// INSERT16: st.global.v4.b32 [{{%rd[0-9]+}}], {[[A]], [[B]], [[C]], [[D]]};
// INSERT16-NOT: st.global
// INSERT16: ret;

// A conv at N = 16: each history tap's row is (q & 15) * 4096 bytes, read
// 16 bytes at a time.
// CONV16-LABEL: .visible .entry decoder_layer_k0_conv_k(
// CONV16-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// CONV16: and.b64 {{.*}}, 61440;
// CONV16: ld.global.v4.b32
// CONV16-NOT: st.global.{{[bu]}}16
// CONV16: st.global.v4.b32
// CONV16: ret;

// N = 3: the slot's block is a multiply-high by the inverse of 3.
// INSERT3-LABEL: .visible .entry decoder_layer_k1_insert_k(
// INSERT3: mul.hi.u64 {{.*}}, -6148914691236517205;
// INSERT3: ld.global.v4.b32
// INSERT3: st.global.v4.b32
// INSERT3-NOT: st.global

// CONV3-LABEL: .visible .entry decoder_layer_k6_conv_mlp(
// CONV3-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// CONV3: mul.hi.u64 {{.*}}, -6148914691236517205;
// CONV3: ld.global.v4.b32
// CONV3: st.global.v4.b32

// The fused kernel (conv and insert of the four streams) at N = 16.
// FUSED16-LABEL: .visible .entry decoder_layer_k0_fused_conv_k_v_attn_mlp(
// FUSED16-NOT: ld.global.{{(nc.)?}}{{[bu]}}16
// FUSED16: and.b64 {{.*}}, 61440;
// FUSED16: ld.global.v4.b32
// FUSED16: st.global.v4.b32

// MANIFEST: "layout": "#sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>"
