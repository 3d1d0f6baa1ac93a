// The epilogue layer's GPU kernels (the fused K/V kernel with its k_norm
// and KV write, the ATTN and MLP kernels with their add and hidden-row
// RMSNorm) executed on the fake CUDA driver, served checked like the CPU
// nests (epilogues.mlir): KV rows at their attention slots, the rest of the
// KV caches untouched, sums and normed rows bit-exact.
// REQUIRES: fake-cuda-executes
//
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda --steps=10 --block-size=1 --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda --steps=10 --block-size=16 --pad-tokens=8 --json | FileCheck %s
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda --steps=10 --fusion=packed-inserts --json | FileCheck %s
//
// Unfused: each op its own kernel (13 a layer), the conv outputs y and the
// normed K in scratch buffers the launcher allocates on the device.
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda --steps=10 --block-size=1 --fusion=none --json | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda --steps=10 --block-size=16 --pad-tokens=8 --fusion=none --json | FileCheck %s --check-prefixes=CHECK,NONE
// NONE-DAG: "launches": 260,
//
// The scratch buffers are what the checker sees: a bundle whose launches
// bind the K conv's y, the V conv's y and the normed K to one buffer
// stores V's rows normed as K's (mutate_bundle.py scratch-alias).
// RUN: rm -rf %t && inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda \
// RUN:   --steps=1 --fusion=none --kernels-dir=%t/good > /dev/null
// RUN: cp -r %t/good %t/alias && %python %S/mutate_bundle.py scratch-alias %t/alias
// RUN: not inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda \
// RUN:   --steps=3 --fusion=none --kernels-from=%t/alias 2>&1 | FileCheck %s --check-prefix=ALIAS
// ALIAS: inkling-run: mismatch in step 0, layer 0: argument {{1[45]}} (kv_cache_{{k|v}})
// CHECK-DAG: "mismatches": 0,
// CHECK-DAG: "outputs_checked": {{[1-9][0-9]*}},
// CHECK-DAG: "kv_rows_stored": {{[1-9][0-9]*}},
//
// A corrupted KV row on the device is found.
// RUN: not inkling-run %inkling_src/examples/small_layer_epilogues.mlir --device=gpu --cuda-driver=%fake_cuda \
// RUN:   --steps=10 --inject-fault=kv:4:1 2>&1 | FileCheck %s --check-prefix=KV
// KV: inkling-run: mismatch in step 4, layer 1: argument 14 (kv_cache_k), block {{[0-9]+}}, row {{[0-9]+}} (attention slot {{[0-9]+}}, stored by token 0)
