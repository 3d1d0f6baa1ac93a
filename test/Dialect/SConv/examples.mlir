// The bundled example verifies, round-trips, and derives its layout.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir | inkling-opt | FileCheck %s
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --sconv-print-layouts -o /dev/null | FileCheck %s --check-prefix=LAYOUT

// One cache bound, one step, then per stream its conv and its insert, each
// reading the stream's own input, in the order of the source.
// CHECK-LABEL: func.func @decoder_layer
// CHECK: %[[CACHE:.*]] = sconv.bind
// CHECK-NEXT: %[[STEP:.*]] = sconv.step
// CHECK-NEXT: sconv.conv %[[XK:[^,]+]], {{.*}} history %[[CACHE]][k] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.insert %[[XK]] into %[[CACHE]][k] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.conv %[[XV:[^,]+]], {{.*}} history %[[CACHE]][v] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.insert %[[XV]] into %[[CACHE]][v] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.conv %[[XA:[^,]+]], {{.*}} history %[[CACHE]][attn] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.insert %[[XA]] into %[[CACHE]][attn] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.conv %[[XM:[^,]+]], {{.*}} history %[[CACHE]][mlp] {{.*}} step %[[STEP]]
// CHECK-NEXT: sconv.insert %[[XM]] into %[[CACHE]][mlp] {{.*}} step %[[STEP]]
// CHECK-NEXT: return
// LAYOUT: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
// LAYOUT: head_size = 2048
