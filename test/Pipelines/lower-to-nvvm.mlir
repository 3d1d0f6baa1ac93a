// The decoder layer through inkling-lower-to-nvvm without fusion: one kernel
// per loop nest (4 convs, 4 inserts), serialized to PTX, launched with grid (T, 8, 1) and
// a block of one thread per 16-byte chunk of the stream's row (16 for K/V,
// 64 for the attn/mlp chunks of a head). No GPU needed.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm="chip=sm_90 features=+ptx80 opt-level=3 format=isa fusion=none" \
// RUN:   | FileCheck %s

// The module keeps each kernel's ABI for inkling-gpu-write-kernels.
// CHECK: module attributes {gpu.container_module, inkling.kernels = [{
// CHECK-SAME: args = [{
// CHECK-SAME: grid = ["T", 8, 1]
// CHECK-SAME: host = "decoder_layer"
// The conv reads token_seq (host argument 5) for each token's sequence.
// CHECK-SAME: host_args = [0, 10, 1, 5, 2, 6, 3, 14]
// CHECK-SAME: name = "decoder_layer_k0_conv_k", op = "sconv.conv"
// CHECK-SAME: params = ["ptr", "ptr", "i64", "i64", "i64",

// The host function launches the outlined kernels in program order; the
// grid's x is the token count, a dim of the host's %k argument (index
// constants are not kernel arguments: only the host's buffers are).
// CHECK-LABEL: llvm.func @decoder_layer(
// CHECK: gpu.launch_func @decoder_layer_k0_conv_k::@decoder_layer_k0_conv_k blocks in ({{%.*}}, {{%.*}}, {{%.*}}) threads in ({{%.*}}, {{%.*}}, {{%.*}}) : i64 args(
// CHECK: gpu.launch_func @decoder_layer_k1_insert_k::@decoder_layer_k1_insert_k
// CHECK: gpu.launch_func @decoder_layer_k2_conv_v::@decoder_layer_k2_conv_v
// CHECK: gpu.launch_func @decoder_layer_k3_insert_v::@decoder_layer_k3_insert_v
// CHECK: gpu.launch_func @decoder_layer_k4_conv_attn::@decoder_layer_k4_conv_attn
// CHECK: gpu.launch_func @decoder_layer_k5_insert_attn::@decoder_layer_k5_insert_attn
// CHECK: gpu.launch_func @decoder_layer_k6_conv_mlp::@decoder_layer_k6_conv_mlp
// CHECK: gpu.launch_func @decoder_layer_k7_insert_mlp::@decoder_layer_k7_insert_mlp
// CHECK-NOT: gpu.launch_func

// Every kernel is a PTX object for sm_90.
// CHECK-COUNT-8: gpu.binary @decoder_layer_k{{[0-7]}}_{{conv|insert}}_{{k|v|attn|mlp}}  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80"{{.*}}>, properties = {{.*}}assembly =
// CHECK-NOT: gpu.module
