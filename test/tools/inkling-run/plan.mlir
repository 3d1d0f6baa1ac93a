// inkling-run serves through the runtime's cache plan (CachePlan.h): its
// buffers, offsets and block strides are the plan's views. --print-plan
// shows the plan; --plan-attention puts attention layers beside the sconv
// layers at the real layout (kv_heads 8, head_dim 128, hidden 4096,
// kernel 4: D 2048, sconv page 131072 bytes at N = 4).
//
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --print-plan \
// RUN:   | FileCheck %s --check-prefix=SCONV
// SCONV:      cache plan: per-layer layout, budget 67108864 bytes
// SCONV-NEXT: unified page 131072 bytes; a block of 2 layers 262144 bytes; 256 blocks (block 0 the null block); 2 tensors, 67108864 bytes
// SCONV-NEXT: tensor 0: 33554432 bytes, shared by layers.0.sconv
// SCONV-NEXT: tensor 1: 33554432 bytes, shared by layers.1.sconv
// SCONV-NEXT: layers.0.sconv (sconv): tensor 0 at byte 0, shape [256, 8, 4, 2048], strides [65536, 8192, 2048, 1] x 2 bytes; block size 4, page 131072 bytes, block stride 131072 bytes (none)
// SCONV-NEXT: layers.1.sconv (sconv): tensor 1 at byte 0, shape [256, 8, 4, 2048], strides [65536, 8192, 2048, 1] x 2 bytes; block size 4, page 131072 bytes, block stride 131072 bytes (none)
//
// Attention at block sizes 16 (page 65536) and 64 (page 262144, the
// largest): the sconv N scales 4 -> 8, attention 16 -> 64.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --print-plan \
// RUN:   --plan-attention=16,64 | FileCheck %s --check-prefix=MIXED
// MIXED:      unified page 262144 bytes; a block of 4 layers 1048576 bytes; 64 blocks (block 0 the null block); 4 tensors, 67108864 bytes
// MIXED:      layers.0.sconv (sconv): tensor 0 at byte 0, shape [64, 8, 8, 2048], strides [131072, 16384, 2048, 1] x 2 bytes; block size 8, page 262144 bytes, block stride 262144 bytes (scaled block size x2)
// MIXED:      layers.0.attn (attention): tensor 2 at byte 0, shape [64, 2, 64, 8, 128], strides [131072, 65536, 1024, 128, 1] x 2 bytes; block size 64, page 262144 bytes, block stride 262144 bytes (scaled block size x4)
// MIXED-NEXT: layers.1.attn (attention): tensor 3 at byte 0, shape [64, 2, 64, 8, 128], strides [131072, 65536, 1024, 128, 1] x 2 bytes; block size 64, page 262144 bytes, block stride 262144 bytes (none)
//
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --print-plan \
// RUN:   --cross-layer --plan-attention=16,64 | FileCheck %s --check-prefix=CROSS
// CROSS:      cache plan: cross-layer layout, budget 67108864 bytes
// CROSS:      tensor 0: 67108864 bytes, shared by layers.0.sconv layers.1.sconv layers.0.attn layers.1.attn
// CROSS-NEXT: layers.0.sconv (sconv): tensor 0 at byte 0, shape [64, 8, 8, 2048], strides [524288, 16384, 2048, 1]
// CROSS-NEXT: layers.1.sconv (sconv): tensor 0 at byte 262144, shape [64, 8, 8, 2048], strides [524288, 16384, 2048, 1]
// CROSS-NEXT: layers.0.attn (attention): tensor 0 at byte 524288, shape [64, 2, 64, 8, 128], strides [524288, 65536, 1024, 128, 1]
// CROSS-NEXT: layers.1.attn (attention): tensor 0 at byte 786432,
//
// Served through the plan, with and without cross-layer pages: the plan's
// blocks, every output and cache row checked.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=40 \
// RUN:   --token-budget=64 --budget-mb=4 --json | FileCheck %s --check-prefix=SERVE
// SERVE-DAG: "num_blocks": 16,
// SERVE-DAG: "page_bytes": 131072,
// SERVE-DAG: "cross_layer": false,
// SERVE-DAG: "mismatches": 0,
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=40 \
// RUN:   --token-budget=64 --budget-mb=4 --cross-layer --json \
// RUN:   | FileCheck %s --check-prefix=SERVE-CROSS
// SERVE-CROSS-DAG: "num_blocks": 16,
// SERVE-CROSS-DAG: "page_bytes": 262144,
// SERVE-CROSS-DAG: "cross_layer": true,
// SERVE-CROSS-DAG: "mismatches": 0,
//
// Bad input: one line naming the value.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --print-plan \
// RUN:   --budget-mb=0.4 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: inkling-run: --print-plan: cache budget of 419430 bytes is below one block per layer plus the null block: 2 blocks x 2 layers x 131072-byte page = 524288 bytes
// BUDGET-NOT: {{.}}
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --print-plan \
// RUN:   --plan-attention=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: inkling-run: --print-plan: attention spec 'layers.0.attn': block_size (0) must be >= 1
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --block-size=3 \
// RUN:   --print-plan --plan-attention=16 2>&1 | FileCheck %s --check-prefix=UNIFY
// UNIFY: inkling-run: --print-plan: cannot unify spec 'layers.0.attn' (page 65536 bytes, block size 16) with the largest page, of spec 'layers.0.sconv' (page 98304 bytes, block size 3): its page does not divide 98304 bytes, and it does not read through the block stride, so it cannot be padded
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir \
// RUN:   --plan-attention=16 2>&1 | FileCheck %s --check-prefix=ALONE
// ALONE: inkling-run: --plan-attention goes with --print-plan
// Serving: the plan's refusal, under the flag that set the budget.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir \
// RUN:   --budget-mb=0.4 2>&1 | FileCheck %s --check-prefix=SERVE-BUDGET
// SERVE-BUDGET: inkling-run: --budget-mb=0.4: cache budget of 419430 bytes is below one block per layer plus the null block: 2 blocks x 2 layers x 131072-byte page = 524288 bytes
// SERVE-BUDGET-NOT: {{.}}
