// The bundled model at the real layout (kv_heads 8, head_dim 128, hidden
// 4096, kernel 4), a short run: the text report.
//
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=30 \
// RUN:   --token-budget=64 | FileCheck %s
//
// CHECK: inkling-run: {{.*}}decoder_layer.mlir @decoder_layer, 2 layers, fusion default
// CHECK: layout kv_heads 8, head_dim 128, hidden 4096, kernel 4, tp 1: H 8, N 4, D 2048, page 131072 bytes
// CHECK: cache 64 MiB: 256 blocks per layer
// CHECK: steps 30
// CHECK: mismatches 0 ({{[1-9][0-9]*}} outputs and {{[1-9][0-9]*}} cache values checked against the full-history reference: bit-exact)
// CHECK: peak blocks {{[0-9]+}} (window-only) vs {{[0-9]+}} (allocate-the-whole-chunk)
// CHECK: time compile
// CHECK: throughput

// The argument roles and the ops (the --replay indices).
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --list-ops \
// RUN:   | FileCheck %s --check-prefix=LIST
// LIST: @decoder_layer: layout kv_heads 8, head_dim 128, hidden 4096, kernel 4, tp 1, block_size 4, page_bytes 131072
// LIST: argument 0: cache : memref<?xi8>
// LIST: argument 5: token_seq : memref<?xi32>
// LIST: argument 6: k input : memref<?x8x128xbf16>
// LIST: argument 17: mlp output : memref<?x4096xbf16>
// LIST: op 0: sconv.conv [k]
// LIST: op 7: sconv.insert [mlp]
