// Admission under pressure (issue 30): a pool of 20 blocks, prompts of
// 64-400 tokens in chunks of 64, a request a step. With the runtime's
// admission query (the default, --watermark=0.01: the running sequences'
// next steps and 1% of the pool stay free) nothing runs out of blocks; the
// old rule of thumb (--watermark=-1) preempts and recomputes prefill.
// Every output is checked in both.
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --budget-mb=0.03 \
// RUN:   --steps=200 --max-batch=32 --arrival-rate=1 --preempt-rate=0 \
// RUN:   --fork-rate=0 --min-prompt=64 --max-prompt=400 --max-chunk=64 \
// RUN:   --json | FileCheck %s --check-prefix=QUERY
// QUERY: {
// QUERY-DAG: "admissions_deferred": {{[1-9][0-9]*}},
// QUERY-DAG: "mismatches": 0,
// QUERY-DAG: "out_of_blocks_preemptions": 0,
// QUERY-DAG: "recomputed_tokens": 0,
// QUERY-DAG: "watermark": 0.01
// QUERY: }
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --budget-mb=0.03 \
// RUN:   --steps=200 --max-batch=32 --arrival-rate=1 --preempt-rate=0 \
// RUN:   --fork-rate=0 --min-prompt=64 --max-prompt=400 --max-chunk=64 \
// RUN:   --watermark=-1 --json | FileCheck %s --check-prefix=THUMB
// THUMB: {
// THUMB-DAG: "mismatches": 0,
// THUMB-DAG: "out_of_blocks_preemptions": {{[1-9][0-9]*}},
// THUMB-DAG: "recomputed_tokens": {{[1-9][0-9]*}},
// THUMB: }
//
// The text report says it too.
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --budget-mb=0.03 \
// RUN:   --steps=50 --preempt-rate=0 --fork-rate=0 --no-check \
// RUN:   | FileCheck %s --check-prefix=TEXT
// TEXT: admission      watermark 0.01 of the pool; {{[0-9]+}} admissions deferred; 0 prefill tokens recomputed after preemptions
//
// A watermark outside [0, 1] is refused.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --watermark=2 \
// RUN:   2>&1 | FileCheck %s --check-prefix=BAD
// BAD: --watermark=2: expected a number in
