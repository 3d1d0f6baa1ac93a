// A feature-complete workload on the small layer (3 layers, every conv
// variant): arrivals, chunked prefill under a token budget, decode,
// speculative decoding with random acceptance, shared prompts (prefix-cache
// hits), random and out-of-blocks preemption, resume, forks with
// copy-on-write pages, finishes. Every output and cache row is checked.
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=1000 \
// RUN:   --budget-mb=0.025 --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --json | FileCheck %s
//
// CHECK: {
// CHECK-DAG: "check": true,
// CHECK-DAG: "mismatches": 0,
// CHECK-DAG: "outputs_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "cache_values_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "steps": 1000,
// CHECK-DAG: "layers": 3,
// CHECK-DAG: "tokens": {{[1-9][0-9]*}},
// CHECK-DAG: "block_copies": {{[1-9][0-9]*}},
// CHECK-DAG: "forks": {{[1-9][0-9]*}},
// CHECK-DAG: "prefix_hits": {{[1-9][0-9]*}},
// CHECK-DAG: "out_of_blocks_preemptions": {{[1-9][0-9]*}},
// CHECK-DAG: "resumes": {{[1-9][0-9]*}},
// CHECK-DAG: "finished": {{[1-9][0-9]*}},
// CHECK-DAG: "spec_accepted": {{[1-9][0-9]*}},
// CHECK-DAG: "prefill_tokens": {{[1-9][0-9]*}},
// CHECK-DAG: "peak_blocks": {{[1-9][0-9]*}},
// CHECK-DAG: "baseline_peak_blocks": {{[1-9][0-9]*}},
// CHECK-DAG: "tokens_per_s": {{[0-9.e+]+}}
// CHECK: }

// The same workload with each fusion strategy and in checked mode.
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.03 --fork-rate=0.05 --fusion=none --json \
// RUN:   | FileCheck %s --check-prefix=SHORT
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.03 --fork-rate=0.05 --fusion=packed-inserts --json \
// RUN:   | FileCheck %s --check-prefix=SHORT
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.03 --fork-rate=0.05 --fusion=conv-insert --checked \
// RUN:   --layers=2 --json | FileCheck %s --check-prefix=SHORT
// SHORT-DAG: "check": true,
// SHORT-DAG: "mismatches": 0,
// SHORT-DAG: "outputs_checked": {{[1-9][0-9]*}},
// SHORT-DAG: "cache_values_checked": {{[1-9][0-9]*}},
// SHORT-DAG: "steps": 300,

// --no-check serves the same steps without the reference.
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=100 \
// RUN:   --no-check --json | FileCheck %s --check-prefix=NOCHECK
// NOCHECK-DAG: "check": false,
// NOCHECK-DAG: "outputs_checked": 0,
// NOCHECK-DAG: "cache_values_checked": 0,
// NOCHECK-DAG: "steps": 100,
