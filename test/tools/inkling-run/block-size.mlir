// The engine's block geometry on the bundled model at the real layout: a
// block size N independent of the kernel (W = 4) and cross-layer pages,
// served checked (every output and every cache row the next step reads,
// bit-exact against the full-history reference). The full matrix (N in
// {1, 3, 4, 8, 16, 32} x cross-layer x every fusion) is in docs/runtime.md.
// The sanitizer stage skips the two N = 32 runs (`%if !sanitized`: kernel
// work, no host path that the others miss).
//
// N = 1 < W-1 with cross-layer pages: the history spans three blocks; one
// allocation holds both layers' 32 KiB pages side by side.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=1 \
// RUN:   --cross-layer --steps=30 --token-budget=64 | FileCheck %s --check-prefix=N1
// N1: layout kv_heads 8, head_dim 128, hidden 4096, kernel 4, tp 1: H 8, N 1, D 2048, page 32768 bytes
// N1: cache 64 MiB: 1024 blocks of 2 layers' pages side by side (block stride 65536 bytes; block 0 null)
// N1: mismatches 0 ({{[1-9][0-9]*}} outputs and {{[1-9][0-9]*}} cache values checked
// N1: per sequence {{[1-3]}} blocks at most between steps (bound 3 = ceil((W-2)/N) + 1); bound during a step 9
//
// N = 32 (vLLM's AMD backend at W = 4), unfused kernels, one cache per layer.
// RUN: %if !sanitized %{ inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=32 \
// RUN:   --fusion=none --steps=30 --token-budget=64 --json | FileCheck %s --check-prefix=N32 %}
// N32-DAG: "block_size": 32,
// N32-DAG: "kernel": 4,
// N32-DAG: "cross_layer": false,
// N32-DAG: "page_bytes": 1048576,
// N32-DAG: "num_blocks": 32,
// N32-DAG: "mismatches": 0,
// N32-DAG: "outputs_checked": {{[1-9][0-9]*}},
// N32-DAG: "cache_values_checked": {{[1-9][0-9]*}},
// N32-DAG: "max_blocks_between_steps": 2,
//
// N = 3 (not a power of two), three layers' pages in a block, packed
// inserts.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=3 \
// RUN:   --cross-layer --layers=3 --fusion=packed-inserts --steps=30 \
// RUN:   --token-budget=64 --json | FileCheck %s --check-prefix=N3
// N3-DAG: "block_size": 3,
// N3-DAG: "cross_layer": true,
// N3-DAG: "layer_page_bytes": 98304,
// N3-DAG: "page_bytes": 294912,
// N3-DAG: "layers": 3,
// N3-DAG: "mismatches": 0,
// N3-DAG: "outputs_checked": {{[1-9][0-9]*}},
// N3-DAG: "cache_values_checked": {{[1-9][0-9]*}},
//
// The checker sees a corrupted cache value in a cross-layer allocation.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=8 \
// RUN:   --cross-layer --steps=30 --token-budget=64 --inject-fault=cache:10 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FAULT
// FAULT: inkling-run: mismatch after step 10, layer 0: cache of stream k
// The same at N = 3 (three layers' pages) and N = 32 (one cache per layer),
// on a layer >= 1 (a checker that skipped layers past 0 would miss them).
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=3 \
// RUN:   --cross-layer --layers=3 --steps=30 --token-budget=64 \
// RUN:   --inject-fault=cache:10:2 2>&1 | FileCheck %s --check-prefix=FAULT3
// FAULT3: inkling-run: mismatch after step 10, layer 2: cache of stream k, {{.*}} (block {{[0-9]+}}, row {{[0-2]}})
// RUN: %if !sanitized %{ not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=32 \
// RUN:   --fusion=none --steps=30 --token-budget=64 --inject-fault=cache:10:1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FAULT32 %}
// FAULT32: inkling-run: mismatch after step 10, layer 1: cache of stream k
// An output fault on layer 1, and a layer the run does not have.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --block-size=32 \
// RUN:   --steps=30 --token-budget=64 --inject-fault=output:10:1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FAULTOUT1
// FAULTOUT1: inkling-run: mismatch in step 10, layer 1: output of stream k
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir \
// RUN:   --steps=3 --inject-fault=cache:1:5 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FAULTLAYER
// FAULTLAYER: inkling-run: --inject-fault=cache:1:5: layer 5 of 3
//
// --list-ops shows the rewritten geometry.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=16 \
// RUN:   --list-ops | FileCheck %s --check-prefix=LIST
// LIST: @decoder_layer: layout kv_heads 8, head_dim 128, hidden 4096, kernel 4, tp 1, block_size 16, page_bytes 524288
//
// Bad block sizes: one line naming the value.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=-1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: inkling-run: --block-size=-1: expected a block size >= 1
// NEGATIVE-NOT: {{.}}
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=67108864 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE
// HUGE: inkling-run: --block-size=67108864: block size (67108864) is not valid for {{.*}}decoder_layer.mlir's layout: layout too large: the page of kv_heads (8), head_dim (128), hidden (4096), block_size (67108864) exceeds 2^40 bytes
// HUGE-NOT: {{.}}
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --cross-layer \
// RUN:   --replay=0 --outputs=%t 2>&1 | FileCheck %s --check-prefix=REPLAY
// REPLAY: inkling-run: --cross-layer serves a workload; --replay runs one layer's op (use --block-size for its geometry)
// REPLAY-NOT: {{.}}
//
// Cross-layer pages written in the IR (3 layers' pages per block stride)
// serve 3 layers, at the IR's block size or another.
// RUN: sed -e 's/page_bytes 131072/page_bytes 393216 layers 3/' \
// RUN:   -e 's/x8x4x2048xbf16, strided<\[65536, 8192/x8x4x2048xbf16, strided<[196608, 8192/' \
// RUN:   %inkling_src/examples/decoder_layer.mlir > %t.cross.mlir
// RUN: inkling-run %t.cross.mlir --steps=20 --token-budget=64 --json \
// RUN:   | FileCheck %s --check-prefix=IR
// IR-DAG: "block_size": 4,
// IR-DAG: "cross_layer": true,
// IR-DAG: "layers": 3,
// IR-DAG: "page_bytes": 393216,
// IR-DAG: "mismatches": 0,
// IR-DAG: "outputs_checked": {{[1-9][0-9]*}},
// IR-DAG: "cache_values_checked": {{[1-9][0-9]*}},
// RUN: inkling-run %t.cross.mlir --block-size=8 --steps=20 --token-budget=64 \
// RUN:   --json | FileCheck %s --check-prefix=IR8
// IR8-DAG: "block_size": 8,
// IR8-DAG: "cross_layer": true,
// IR8-DAG: "layers": 3,
// IR8-DAG: "layer_page_bytes": 262144,
// IR8-DAG: "page_bytes": 786432,
// IR8-DAG: "mismatches": 0,
// IR8-DAG: "outputs_checked": {{[1-9][0-9]*}},
// IR8-DAG: "cache_values_checked": {{[1-9][0-9]*}},
