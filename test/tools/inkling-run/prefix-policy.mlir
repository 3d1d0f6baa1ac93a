// Prefix policies on issue 16's shared-prompt workload (every request
// begins with one of two shared prompts of up to 200 tokens). The report's
// prefix_hit_tokens_ideal is what an unbounded every-block cache would hit
// on the same arrivals, kept from the requests' own token chains. Targets:
// the default policy (snapshots) hits >= 90% of the ideal with peak_blocks
// <= 115% of the window policy's; with a cache point on every request,
// >= 98%; every-block hits the ideal. All outputs are checked.
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --json \
// RUN:   --shared-prefix-rate=1 --shared-prefixes=2 --min-prompt=200 \
// RUN:   --max-prompt=400 --steps=300 --preempt-rate=0 --fork-rate=0 \
// RUN:   --prefix-policy=window > %t.window.json
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --json \
// RUN:   --shared-prefix-rate=1 --shared-prefixes=2 --min-prompt=200 \
// RUN:   --max-prompt=400 --steps=300 --preempt-rate=0 --fork-rate=0 \
// RUN:   > %t.snapshots.json
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --json \
// RUN:   --shared-prefix-rate=1 --shared-prefixes=2 --min-prompt=200 \
// RUN:   --max-prompt=400 --steps=300 --preempt-rate=0 --fork-rate=0 \
// RUN:   --prefix-policy=every-block > %t.every.json
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --json \
// RUN:   --shared-prefix-rate=1 --shared-prefixes=2 --min-prompt=200 \
// RUN:   --max-prompt=400 --steps=300 --preempt-rate=0 --fork-rate=0 \
// RUN:   --prefix-policy=window --cache-point-rate=1 > %t.points-window.json
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --json \
// RUN:   --shared-prefix-rate=1 --shared-prefixes=2 --min-prompt=200 \
// RUN:   --max-prompt=400 --steps=300 --preempt-rate=0 --fork-rate=0 \
// RUN:   --cache-point-rate=1 > %t.points.json
// RUN: FileCheck %s --input-file=%t.snapshots.json
// RUN: %python -c "import json, sys; \
// RUN:   w, s, e, pw, p = [json.load(open(f)) for f in sys.argv[1:]]; \
// RUN:   hit = lambda r: r['prefix_hit_tokens'] / r['prefix_hit_tokens_ideal']; \
// RUN:   assert all(r['mismatches'] == 0 and r['outputs_checked'] > 0 \
// RUN:              for r in (w, s, e, pw, p)); \
// RUN:   assert hit(s) >= 0.90, hit(s); \
// RUN:   assert s['peak_blocks'] <= 1.15 * w['peak_blocks'], (s, w); \
// RUN:   assert hit(p) >= 0.98, hit(p); \
// RUN:   assert p['peak_blocks'] <= 1.15 * pw['peak_blocks'], (p, pw); \
// RUN:   assert hit(e) == 1.0 and hit(w) < 0.5, (hit(e), hit(w)); \
// RUN:   assert w['peak_snapshot_blocks'] == 0 < s['peak_snapshot_blocks']" \
// RUN:   %t.window.json %t.snapshots.json %t.every.json \
// RUN:   %t.points-window.json %t.points.json
//
// CHECK-DAG: "prefix_policy": "snapshots",
// CHECK-DAG: "snapshot_every": 8,
// CHECK-DAG: "prefix_hit_tokens": {{[1-9][0-9]*}},
// CHECK-DAG: "prefix_hit_tokens_ideal": {{[1-9][0-9]*}},
// CHECK-DAG: "peak_idle_blocks": {{[1-9][0-9]*}},
// CHECK-DAG: "peak_snapshot_blocks": {{[1-9][0-9]*}},
// CHECK-DAG: "baseline_peak_blocks": {{[1-9][0-9]*}},

// Bad values are named.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --prefix-policy=lru 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: --prefix-policy: prefix policy 'lru' is not one of window, snapshots, every-block
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --snapshot-every=0 2>&1 | FileCheck %s --check-prefix=EVERY
// EVERY: --snapshot-every=0 must be in [1, 2^20] blocks
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --cache-point-rate=1.5 2>&1 | FileCheck %s --check-prefix=RATE
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --cache-point-rate=-1 2>&1 | FileCheck %s --check-prefix=RATE
// RATE: --cache-point-rate={{.*}} is a probability in [0, 1]
