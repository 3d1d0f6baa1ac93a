// A layer with the conv's neighbours fused (issue #29): the K/V path's
// k_norm and attention KV write, the ATTN/MLP paths' residual add and
// hidden-row RMSNorm (examples/small_layer_epilogues.mlir). inkling-run
// serves it checked: every KV row stored at its token's attention slot
// (from inkling-run's attention block table) against
// runtime/lib/EpilogueReference.cpp, every other row of the KV caches
// unchanged (poisoned), every sum and normed row bit-exact; every fusion,
// block sizes 1 and 16. The real layout (decoder_layer_epilogues.mlir) is
// served the same way (docs/inkling-run.md), too slow to compile for CI.
//
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=1 --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=16 --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=1 --fusion=none --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=16 --fusion=none --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=1 --fusion=conv-insert --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=16 --fusion=conv-insert --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=1 --fusion=packed-inserts --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --block-size=16 --fusion=packed-inserts --json | FileCheck %s
// Padding tokens (their attention slots -1: nothing stored; their sums and
// norms checked like any row) and async scheduling.
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 --pad-tokens=8 --async --json | FileCheck %s
// CHECK-DAG: "mismatches": 0,
// CHECK-DAG: "outputs_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "kv_rows_stored": {{[1-9][0-9]*}},
// CHECK-DAG: "kv_values_checked": {{[1-9][0-9]*}},
//
// The roles the layer ABI derives from the ops, and the epilogues each
// conv's replay unit holds.
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --list-ops | FileCheck %s --check-prefix=OPS
// OPS: argument 13: k norm_weight : memref<8xbf16>
// OPS: argument 14: k kv_cache : memref<?x8x2x8xbf16, strided<[128, 16, 8, 1]>>
// OPS: argument 16: attn_slot_mapping : memref<?xi64>
// OPS: argument 17: attn residual : memref<?x16xbf16>
// OPS: argument 20: attn sum : memref<?x16xbf16>
// OPS: op 0: sconv.conv [k]
// OPS-NEXT: epilogue [k]: rms_norm, kv_write -> kv_cache_k
// OPS: op 6: sconv.conv [mlp]
// OPS-NEXT: epilogue [mlp]: add, rms_norm -> sum_mlp, normed_mlp
//
// The checker can fail: one value of a stored KV row, one normed value.
// RUN: not inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 \
// RUN:   --inject-fault=kv:4:1 2>&1 | FileCheck %s --check-prefix=KV
// KV: inkling-run: mismatch in step 4, layer 1: argument 14 (kv_cache_k), block {{[0-9]+}}, row {{[0-9]+}} (attention slot {{[0-9]+}}, stored by token 0), head 0, channel 1: expected 0x{{[0-9a-f]+}} ({{.*}}) (runtime/lib/EpilogueReference.cpp), found
// KV: mismatches 1
// RUN: not inkling-run %inkling_src/examples/small_layer_epilogues.mlir --steps=12 \
// RUN:   --inject-fault=normed:3 2>&1 | FileCheck %s --check-prefix=NORMED
// NORMED: inkling-run: mismatch in step 3, layer 0: argument 21 (normed_attn), token 0, head 0, channel 3: expected
// NORMED: mismatches 1
//
// Already-fused IR (sconv.fused_conv_kv_write, sconv.fused_conv_add_norm)
// has the same roles and is served the same way.
// RUN: rm -rf %t && mkdir -p %t
// RUN: inkling-opt %inkling_src/examples/small_layer_epilogues.mlir --sconv-fuse -o %t/fused.mlir
// RUN: inkling-run %t/fused.mlir --list-ops | FileCheck %s --check-prefix=FUSED-OPS
// FUSED-OPS: op 0: sconv.fused_conv_kv_write [k, v]
// FUSED-OPS-NEXT: epilogue [k]: rms_norm, kv_write -> kv_cache_k
// FUSED-OPS-NEXT: epilogue [v]: kv_write -> kv_cache_v
// FUSED-OPS: op 2: sconv.fused_conv_add_norm [mlp]
// FUSED-OPS-NEXT: epilogue [mlp]: add, rms_norm -> sum_mlp, normed_mlp
// RUN: inkling-run %t/fused.mlir --steps=12 --json | FileCheck %s
//
// IR whose epilogues the host cannot drive: one line naming the op.
// RUN: sed -e 's/sconv.kv_write %yv into/sconv.kv_write %v into/' \
// RUN:   %inkling_src/examples/small_layer_epilogues.mlir > %t/input-rows.mlir
// RUN: not inkling-run %t/input-rows.mlir 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: input-rows.mlir:{{[0-9]+}}:3: error: the x operand of sconv.kv_write is not the output of an earlier sconv.conv (or its sconv.rms_norm); a layer call drives epilogues of the layer's convs
// RUN: sed -e 's/into %kn :/into %k :/' \
// RUN:   %inkling_src/examples/small_layer_epilogues.mlir > %t/norm-out.mlir
// RUN: not inkling-run %t/norm-out.mlir 2>&1 | FileCheck %s --check-prefix=NORM
// NORM: norm-out.mlir:{{[0-9]+}}:3: error: the out operand of sconv.rms_norm is an argument of @small_layer_epilogues; a layer call drives a head-row norm whose rows sconv.kv_write stores (a buffer of the function)
