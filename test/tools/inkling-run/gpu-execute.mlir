// The GPU kernels executed without a GPU: the fake CUDA driver runs each
// kernel's host form (its LLVM IR after the NVVM lowering) over the launch
// grid, threads in a seeded shuffle, every global access checked against the
// live allocations and its argument's extent, every byte's writers and
// readers tracked; inkling-run checks every output and cache row against the
// reference. The bundled example's layout, small workloads.
// REQUIRES: fake-cuda-executes

// Every fusion, block size, cross-layer pages, padding, async scheduling and
// checked mode: 0 mismatches, and something was checked. The sanitizer
// stage (ASan+UBSan, ~5x slower at emulating) runs the four without
// `%if !sanitized`: every fusion, cross-layer pages, checked mode, padding.
// RUN: %run_gpu --steps=25 | FileCheck %s
// RUN: %run_gpu --steps=25 --fusion=none | FileCheck %s
// RUN: %if !sanitized %{ %run_gpu --steps=25 --fusion=packed-inserts | FileCheck %s %}
// RUN: %if !sanitized %{ %run_gpu --steps=25 --block-size=1 | FileCheck %s %}
// RUN: %if !sanitized %{ %run_gpu --steps=25 --block-size=3 --fusion=none | FileCheck %s %}
// RUN: %if !sanitized %{ %run_gpu --steps=25 --block-size=8 --cross-layer | FileCheck %s %}
// RUN: %run_gpu --steps=25 --block-size=16 --cross-layer --fusion=packed-inserts | FileCheck %s
// RUN: %if !sanitized %{ %run_gpu --steps=25 --pad-tokens=16 | FileCheck %s %}
// RUN: %if !sanitized %{ %run_gpu --steps=25 --async --fusion=none | FileCheck %s %}
// RUN: %if !sanitized %{ %run_gpu --steps=25 --checked | FileCheck %s %}
// RUN: %run_gpu --steps=25 --checked --fusion=none --pad-tokens=8 | FileCheck %s
// RUN: %if !sanitized %{ env INKLING_FAKE_CUDA_ORDER=reverse %run_gpu --steps=25 | FileCheck %s %}
// CHECK-DAG: "mismatches": 0,
// CHECK-DAG: "outputs_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "cache_values_checked": {{[1-9][0-9]*}},
