// inkling-run --threads: the layer's nests on OpenMP threads give the same
// checked results as on one thread (the checker compares every output and
// cache row with its own reference); the report says how many threads.
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=2 \
// RUN:   --min-parallel-iterations=1 --steps=60 --json --no-progress \
// RUN:   | FileCheck %s --check-prefix=TWO
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=60 --no-progress | FileCheck %s --check-prefix=ONE
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --threads=-1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --threads=5000 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --min-parallel-iterations=-3 2>&1 | FileCheck %s --check-prefix=MINITER

// TWO-DAG: "threads": 2,
// TWO-DAG: "check": true,
// TWO-DAG: "mismatches": 0,
// TWO-DAG: "outputs_checked": {{[1-9][0-9]*}},
// TWO-DAG: "cache_values_checked": {{[1-9][0-9]*}},

// ONE: 1 thread{{$}}
// ONE: mismatches 0 ({{[1-9][0-9]*}} outputs and {{[1-9][0-9]*}} cache values checked

// NEGATIVE: inkling-run: --threads=-1: expected 0 (every core) to 1024
// HUGE: inkling-run: --threads=5000: expected 0 (every core) to 1024
// MINITER: inkling-run: --min-parallel-iterations=-3: expected >= 0
