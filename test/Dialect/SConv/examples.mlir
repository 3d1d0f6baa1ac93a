// The bundled example verifies, round-trips, and derives its layout.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir | inkling-opt | FileCheck %s
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --sconv-print-layouts -o /dev/null | FileCheck %s --check-prefix=LAYOUT

// CHECK-LABEL: func.func @decoder_layer
// CHECK-COUNT-4: sconv.conv
// CHECK-NOT: sconv.conv
// LAYOUT: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
// LAYOUT: head_size = 2048
