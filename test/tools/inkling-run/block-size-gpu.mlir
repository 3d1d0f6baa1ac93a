// The GPU path at the engine's block geometry, through the runtime's fake
// CUDA driver (every copy and every `.ptr` launch argument checked against
// the live allocations; kernels not run, so --no-check): block size N != W
// with cross-layer pages, layer l's cache argument l pages into the one
// allocation.
// REQUIRES: fake-cuda

// RUN: rm -f %t.fused.log %t.unfused.log
// RUN: env INKLING_FAKE_CUDA_LAUNCH_LOG=%t.fused.log \
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --block-size=8 --cross-layer --steps=30 \
// RUN:   --token-budget=64 --no-check --json | FileCheck %s --check-prefix=FUSED
// The fake driver's launch log (allocation number + byte offset of every
// `.ptr` argument): the cache argument (parameters 0 and 1, the memref's
// pointers) of layer l is l layer pages (262144 bytes) into one allocation.
// RUN: FileCheck %s --check-prefix=FUSED-LOG < %t.fused.log
// FUSED-LOG: launch 0 [[K:[a-z0-9_]+]]: p0=a[[CACHE:[0-9]+]]+0 p1=a[[CACHE]]+0 p
// FUSED-LOG-NEXT: launch 1 [[K]]: p0=a[[CACHE]]+262144 p1=a[[CACHE]]+262144 p
// FUSED-LOG-NEXT: launch 2 [[K]]: p0=a[[CACHE]]+0 p1=a[[CACHE]]+0 p
// FUSED-LOG-NEXT: launch 3 [[K]]: p0=a[[CACHE]]+262144 p1=a[[CACHE]]+262144 p
// FUSED-DAG: "device": "gpu (Inkling fake CUDA device, sm_90, driver 12.4)"
// FUSED-DAG: "block_size": 8,
// FUSED-DAG: "cross_layer": true,
// FUSED-DAG: "launches": 60,
// FUSED-DAG: "layer_page_bytes": 262144,

// Unfused, N = 3, three layers' pages per block.
// RUN: env INKLING_FAKE_CUDA_LAUNCH_LOG=%t.unfused.log \
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --block-size=3 --fusion=none --cross-layer \
// RUN:   --layers=3 --steps=30 --token-budget=64 --no-check --json \
// RUN:   | FileCheck %s --check-prefix=UNFUSED
// Eight kernels a layer; layer l's at l x 98304 bytes into the allocation.
// RUN: FileCheck %s --check-prefix=UNFUSED-LOG < %t.unfused.log
// UNFUSED-LOG: launch 0 decoder_layer_k0_conv_k: p0=a[[CACHE:[0-9]+]]+0 p1=a[[CACHE]]+0 p
// UNFUSED-LOG: launch 7 decoder_layer_k7_insert_mlp: p0=a[[CACHE]]+0 p1=a[[CACHE]]+0 p
// UNFUSED-LOG-NEXT: launch 8 decoder_layer_k0_conv_k: p0=a[[CACHE]]+98304 p1=a[[CACHE]]+98304 p
// UNFUSED-LOG: launch 15 decoder_layer_k7_insert_mlp: p0=a[[CACHE]]+98304 p1=a[[CACHE]]+98304 p
// UNFUSED-LOG-NEXT: launch 16 decoder_layer_k0_conv_k: p0=a[[CACHE]]+196608 p1=a[[CACHE]]+196608 p
// UNFUSED-LOG: launch 23 decoder_layer_k7_insert_mlp: p0=a[[CACHE]]+196608 p1=a[[CACHE]]+196608 p
// UNFUSED-LOG-NEXT: launch 24 decoder_layer_k0_conv_k: p0=a[[CACHE]]+0 p1=a[[CACHE]]+0 p
// UNFUSED-DAG: "block_size": 3,
// UNFUSED-DAG: "layers": 3,
// UNFUSED-DAG: "launches": 720,
// UNFUSED-DAG: "page_bytes": 294912,
