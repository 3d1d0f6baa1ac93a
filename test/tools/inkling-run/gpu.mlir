// inkling-run --device=gpu without a GPU: the runtime's fake CUDA driver
// (host memory; copies, modules, and per launch the parameter count and
// sizes, .maxntid, the alignment of every vector-accessed argument and each
// descriptor's extent checked; kernels executed from their host form, which
// gpu-execute.mlir checks against the reference) takes the whole GPU path:
// the layer lowered to a kernel
// bundle, loaded, the step's metadata and inputs uploaded, the manifest's
// launches, the outputs downloaded. bench/gpu/run.sh runs the same command,
// checked, on a real GPU.
// REQUIRES: fake-cuda

// Default fusion (conv-insert, as on the CPU): one fused kernel, one launch
// per layer and step (2 layers x 30 steps).
// RUN: rm -rf %t && mkdir -p %t
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=30 --token-budget=64 --no-check \
// RUN:   --json --kernels-dir=%t/fused | FileCheck %s --check-prefix=FUSED
// FUSED-DAG: "device": "gpu (Inkling fake CUDA device, sm_90, driver 12.4)"
// FUSED-DAG: "launches": 60
// FUSED-DAG: "steps": 30
// FUSED-DAG: "transfers":
// FUSED-DAG: "device_kernels": 0,
// RUN: FileCheck %s --check-prefix=BUNDLE < %t/fused/manifest.json
// BUNDLE: "launches": [
// BUNDLE-NEXT: {
// BUNDLE-NEXT: "host_args":
// BUNDLE-NEXT: "kernel": "decoder_layer_k0_fused_conv_k_v_attn_mlp"
// BUNDLE-NEXT: }
// BUNDLE-NEXT: ],
// BUNDLE-NEXT: "name": "decoder_layer"

// Unfused: eight kernels a layer; checked mode adds the status argument.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=30 --token-budget=64 --no-check \
// RUN:   --fusion=none --checked | FileCheck %s --check-prefix=UNFUSED
// UNFUSED: fusion none, checked, gpu (Inkling fake CUDA device, sm_90, driver 12.4)
// UNFUSED: steps          30
// UNFUSED: mismatches     not checked (--no-check)
// UNFUSED: device         480 kernel launches, 0.000 s on the device (CUDA events);

// The feature-complete workload of workload.mlir (3 layers, every conv
// variant): copy-on-write pages are copied on the device, inside the cache
// allocations (the fake rejects any copy that leaves one).
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=1000 --budget-mb=0.025 \
// RUN:   --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --no-check --json \
// RUN:   | FileCheck %s --check-prefix=WORKLOAD
// WORKLOAD-DAG: "block_copies": {{[1-9][0-9]*}},
// WORKLOAD-DAG: "launches": 6000,
// WORKLOAD-DAG: "out_of_blocks_preemptions": {{[1-9][0-9]*}},
// WORKLOAD-DAG: "steps": 1000,

// Each failure is one line and exit 1: no driver, no device, a chip the
// backend does not know, a bundle the device cannot run, a failing launch.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%t/no-such-driver.so 2>&1 | FileCheck %s --check-prefix=NODRIVER
// NODRIVER: inkling-run: --device=gpu: no CUDA driver: {{.*}}no-such-driver.so could not be loaded (
// RUN: env INKLING_FAKE_CUDA_DEVICES=0 not inkling-run \
// RUN:   %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda 2>&1 | FileCheck %s --check-prefix=NODEVICE
// NODEVICE: inkling-run: --device=gpu: no CUDA device: device 0 requested, 0 present
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --gpu-chip=sm_999 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: inkling-run: GPU target sm_999: not a chip LLVM's NVPTX backend knows
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --gpu-chip=sm_100 2>&1 | FileCheck %s --check-prefix=NEWER
// NEWER: inkling-run: --device=gpu: cannot load the kernels (sm_100) on gpu ({{.*}}): kernel bundle: {{.*}}.ptx: cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209)
// RUN: env INKLING_FAKE_CUDA_FAIL=cuLaunchKernel not inkling-run \
// RUN:   %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=3 2>&1 | FileCheck %s --check-prefix=LAUNCH
// LAUNCH: inkling-run: step 0: the layer on gpu ({{.*}}): cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED (719)
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --replay=0 --outputs=%t 2>&1 | FileCheck %s --check-prefix=REPLAY
// REPLAY: inkling-run: --replay runs on the CPU; drop --device=gpu

// The step contract on the GPU path: padded steps (the kernels take the
// padded token dimension, token_seq and query_start_loc uploaded) and async
// scheduling; the fake checks every launch's parameters and extents.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=30 --token-budget=64 --no-check \
// RUN:   --pad-tokens=64 --async --json | FileCheck %s --check-prefix=CONTRACT
// CONTRACT-DAG: "async": true,
// CONTRACT-DAG: "launches": 60,
// CONTRACT-DAG: "pad_tokens": 64,
// CONTRACT-DAG: "padding_tokens": {{[1-9][0-9]*}},
// CONTRACT-DAG: "steps": 30,
