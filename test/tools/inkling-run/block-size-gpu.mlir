// The GPU path at the engine's block geometry, through the runtime's fake
// CUDA driver (every copy and every `.ptr` launch argument checked against
// the live allocations; kernels not run, so --no-check): block size N != W
// with cross-layer pages, layer l's cache argument l pages into the one
// allocation.
// REQUIRES: fake-cuda

// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --block-size=8 --cross-layer --steps=30 \
// RUN:   --token-budget=64 --no-check --json | FileCheck %s --check-prefix=FUSED
// FUSED-DAG: "device": "gpu (Inkling fake CUDA device, sm_90, driver 12.4)"
// FUSED-DAG: "block_size": 8,
// FUSED-DAG: "cross_layer": true,
// FUSED-DAG: "launches": 60,
// FUSED-DAG: "layer_page_bytes": 262144,

// Unfused, N = 3, three layers' pages per block.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --block-size=3 --fusion=none --cross-layer \
// RUN:   --layers=3 --steps=30 --token-budget=64 --no-check --json \
// RUN:   | FileCheck %s --check-prefix=UNFUSED
// UNFUSED-DAG: "block_size": 3,
// UNFUSED-DAG: "layers": 3,
// UNFUSED-DAG: "launches": 720,
// UNFUSED-DAG: "page_bytes": 294912,
