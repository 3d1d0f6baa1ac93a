// The extended decoder layer unfused (--fusion=none): 13 kernels, the
// conv outputs y and the normed K in 5 scratch buffers of the host (the
// launcher allocates them: docs/gpu.md, "Scratch buffers"). The unfused
// epilogue kernels take the fused kernels' rows across threads: k_norm
// (sconv.rms_norm) a block of 16 threads per (token, head) row, reduced by
// warp shuffles; each add_rms_norm one block of 256 threads per token, the
// heads' sums through shared memory and a barrier. ptxas accepts them for
// sm_90 without a stack frame or spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && inkling-opt %inkling_src/examples/decoder_layer_epilogues.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k4_rms_norm_k.ptx -o %t/k4.cubin 2>&1 | FileCheck %s --check-prefix=NORM
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k5_kv_write_k.ptx -o %t/k5.cubin 2>&1 | FileCheck %s --check-prefix=WRITE
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k9_add_rms_norm_attn.ptx -o %t/k9.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: %ptxas -arch=sm_90 -v %t/decoder_layer_k12_add_rms_norm_mlp.ptx -o %t/k12.cubin 2>&1 | FileCheck %s --check-prefix=ROW
// RUN: FileCheck %s --check-prefix=NORMSYNC < %t/decoder_layer_k4_rms_norm_k.ptx
// RUN: FileCheck %s --check-prefix=ROWSYNC < %t/decoder_layer_k9_add_rms_norm_attn.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// NORM: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NORM: Used {{[0-9]+}} registers, used 0 barriers
// WRITE: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// ROW: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// ROW: Used {{[0-9]+}} registers, used 1 barriers, 32 bytes smem

// NORMSYNC-COUNT-4: shfl.sync.bfly.b32
// NORMSYNC: shfl.sync.idx.b32
// NORMSYNC-NOT: bar.sync
// ROWSYNC-COUNT-5: shfl.sync.bfly.b32
// ROWSYNC: shfl.sync.idx.b32
// ROWSYNC: bar.sync 0

// The kernels read y through scratch buffers -1 .. -5 (hosts come first:
// the keys are sorted).
// MANIFEST: "host_args": [-1, 14, -3],
// MANIFEST-NEXT: "kernel": "decoder_layer_k4_rms_norm_k"
// MANIFEST: "scratch": [
// MANIFEST-COUNT-5: "type": "memref<?x{{8x128|4096}}xbf16>"
// MANIFEST: "kernels": [
// MANIFEST: "entry": "decoder_layer_k3_insert_v"
// MANIFEST: "block": [16, 1, 1]
// MANIFEST-NEXT: "entry": "decoder_layer_k4_rms_norm_k"
// MANIFEST: "entry": "decoder_layer_k8_insert_attn"
// MANIFEST: "block": [256, 1, 1]
// MANIFEST-NEXT: "entry": "decoder_layer_k9_add_rms_norm_attn"
// MANIFEST: "entry": "decoder_layer_k11_insert_mlp"
// MANIFEST: "block": [256, 1, 1]
// MANIFEST-NEXT: "entry": "decoder_layer_k12_add_rms_norm_mlp"
// MANIFEST-NOT: "entry"
