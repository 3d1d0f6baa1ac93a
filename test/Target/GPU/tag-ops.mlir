// inkling-gpu-tag-ops: every sconv op with a step gets what it implements
// (op, streams, layout, other attributes, operand types) as FusedLoc
// metadata around its location, which the loop nest, the launch and the
// outlined kernel inherit; bind and step are left alone.
// RUN: inkling-opt %s --inkling-gpu-tag-ops --mlir-print-debuginfo | FileCheck %s

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>

// CHECK-LABEL: func.func @layer
// CHECK: sconv.bind {{.*}} loc(#[[BIND:loc[0-9]*]])
// CHECK: sconv.insert {{.*}} loc(#[[INSERT:loc[0-9]*]])
// CHECK: sconv.conv {{.*}} loc(#[[CONV:loc[0-9]*]])
// CHECK-DAG: #[[BIND]] = loc("{{.*}}tag-ops.mlir":{{[0-9]+}}:{{[0-9]+}})
// CHECK-DAG: #[[INSERT]] = loc(fused<{attributes = "{}", inkling.op = "sconv.insert", layout = "#sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>", signature = "memref<?x2x8xbf16>, {{.*}}", streams = ["k"]}>[
// CHECK-DAG: #[[CONV]] = loc(fused<{attributes = "{activation = #sconv<activation silu>, residual = false}", inkling.op = "sconv.conv", {{.*}}streams = ["k"]}>[
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                 %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                 %slots: memref<?xi64>, %x: memref<?x2x8xbf16>,
                 %w: memref<16x4xbf16>, %b: memref<16xbf16>,
                 %y: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #l page_bytes 1024
      : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[512, 128, 32, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %x into %cache[k] layout #l step %step
      : memref<?x2x8xbf16>, memref<?x2x4x32xbf16, strided<[512, 128, 32, 1]>>
  sconv.conv %x, %w bias %b history %cache[k] layout #l step %step into %y
      activation silu {residual = false}
      : memref<?x2x8xbf16>, memref<16x4xbf16>,
        memref<?x2x4x32xbf16, strided<[512, 128, 32, 1]>>, memref<16xbf16>
      -> memref<?x2x8xbf16>
  return
}
