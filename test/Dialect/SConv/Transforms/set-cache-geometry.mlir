// RUN: inkling-opt %s --sconv-set-cache-geometry=block-size=16 | FileCheck %s --check-prefix=N16
// RUN: inkling-opt %s --sconv-set-cache-geometry="block-size=3 layers=2" | FileCheck %s --check-prefix=N3L2
// RUN: inkling-opt %s --sconv-set-cache-geometry | FileCheck %s --check-prefix=SAME
// The pipelines' block-size / cross-layers options run it first:
// RUN: inkling-opt %s --inkling-lower-to-cpu="block-size=16 cross-layers=2" \
// RUN:   --mlir-print-ir-after=sconv-set-cache-geometry -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPE
// RUN: inkling-opt %s --inkling-lower-to-nvvm="block-size=16 cross-layers=2" \
// RUN:   --mlir-print-ir-after=sconv-set-cache-geometry -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPE

// The engine's geometry, applied once: the bind's layout, page_bytes and
// cache type, and every use of the layout and cache type, follow.

#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!cache = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>

// N16: #[[L:.*]] = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1, block_size = 16>
// N16-LABEL: func.func @layer
// N16: sconv.bind %{{.*}} layout #[[L]] page_bytes 2048 : memref<?xi8> -> memref<?x2x16x32xbf16, strided<[1024, 512, 32, 1]>>
// N16: sconv.insert {{.*}} layout #[[L]] {{.*}} memref<?x2x16x32xbf16, strided<[1024, 512, 32, 1]>>
// N3L2: #[[L:.*]] = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1, block_size = 3>
// N3L2-LABEL: func.func @layer
// N3L2: sconv.bind %{{.*}} layout #[[L]] page_bytes 768 layers 2 : memref<?xi8> -> memref<?x2x3x32xbf16, strided<[384, 96, 32, 1]>>
// PIPE: IR Dump After SConvSetCacheGeometry
// PIPE: sconv.bind %{{.*}} page_bytes 4096 layers 2 : memref<?xi8> -> memref<?x2x16x32xbf16, strided<[2048, 512, 32, 1]>>
// SAME: #[[L:.*]] = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
// SAME-LABEL: func.func @layer
// SAME: sconv.bind %{{.*}} layout #[[L]] page_bytes 512 : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,
    %k: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x2x8xbf16>, !cache
  return
}
