// The executing fake CUDA driver (gpu-execute.mlir) on the feature-complete
// workload, and on bundles broken the way a GPU lowering stage could break
// them: each must fail.
// REQUIRES: fake-cuda-executes

// The feature-complete workload of workload.mlir (3 layers, every conv
// variant, silu through the host's expf for libdevice's __nv_expf, forks,
// preemption, copy-on-write pages copied on the device), checked.
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --device=gpu \
// RUN:   --cuda-driver=%fake_cuda --steps=600 --budget-mb=0.025 \
// RUN:   --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --json | FileCheck %s
// CHECK-DAG: "mismatches": 0,
// CHECK-DAG: "outputs_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "cache_values_checked": {{[1-9][0-9]*}},

// A bundle written with --kernels-dir and served again with --kernels-from
// is the same: 0 mismatches. Then each bug a GPU lowering stage could make
// (mutate_bundle.py) fails the run: a memcheck failure that names the
// kernel, block, thread and address, or a mismatch.
// RUN: rm -rf %t && %run_gpu --steps=5 --fusion=none --kernels-dir=%t/good > /dev/null
// RUN: cp -r %t/good %t/same && %run_gpu --steps=25 --fusion=none --kernels-from=%t/same | FileCheck %s
// RUN: cp -r %t/good %t/grid && %python %S/mutate_bundle.py grid-swap %t/grid
// RUN: not %run_gpu --steps=25 --fusion=none --kernels-from=%t/grid 2>&1 | FileCheck %s --check-prefix=MEMCHECK
// RUN: cp -r %t/good %t/guard && %python %S/mutate_bundle.py drop-guard %t/guard
// RUN: not %run_gpu --steps=25 --fusion=none --kernels-from=%t/guard 2>&1 | FileCheck %s --check-prefix=MEMCHECK
// MEMCHECK: CUDA_ERROR_ILLEGAL_ADDRESS (700): fake-cuda: memcheck: cuLaunchKernel decoder_layer_k{{[0-9]}}_{{[a-z_]+}}: thread ({{[0-9]+}}, 0, 0) of block ({{[0-9]+}}, {{[0-9]+}}, 0): {{[0-9]+}}-byte {{load|store}} at 0x
// RUN: cp -r %t/good %t/args && %python %S/mutate_bundle.py arg-swap %t/args
// RUN: not %run_gpu --steps=25 --fusion=none --kernels-from=%t/args 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: cp -r %t/good %t/tokens && %python %S/mutate_bundle.py tokens-arg %t/tokens
// RUN: not %run_gpu --steps=25 --fusion=none --kernels-from=%t/tokens 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: inkling-run: mismatch in step 0, layer 0:

// Checks only (INKLING_FAKE_CUDA_EXECUTE=0): nothing runs, so the checker
// finds the unwritten outputs.
// RUN: env INKLING_FAKE_CUDA_EXECUTE=0 not %run_gpu --steps=3 2>&1 | FileCheck %s --check-prefix=STALE
// STALE: inkling-run: mismatch in step 0, layer 0: output of stream k, sequence 0 {{.*}} position 0, head 0, channel 0: expected {{.*}}, found 0x0000
