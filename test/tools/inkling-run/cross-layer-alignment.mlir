// Cross-layer pages that are not a multiple of 16 bytes (issue 28, item 4):
// kv_heads 1, head_dim 1, hidden 1, kernel 2 (D 4, a page of 8N bytes).
// Layer l's cache starts at byte l * page of the one allocation, and the
// kernels need every base 16-byte aligned: the cache plan pads the page to
// 16 bytes (N = 1) or 32 (N = 3). An IR compiled for the padded page
// serves end to end; one whose bind holds the unpadded page is refused
// before the first step (it once served layer 0 of step 0, then stopped
// on "the data pointer is not 16-byte aligned").
//
// RUN: rm -rf %t && split-file %s %t
//
// The plan of the unpadded IR: 16-byte pages, layer 1 at byte 16.
// RUN: inkling-run %t/tiny.mlir --cross-layer --block-size=1 --print-plan \
// RUN:   --budget-mb=1 | FileCheck %s --check-prefix=PLAN
// PLAN: unified page 16 bytes; a block of 2 layers 32 bytes; 32768 blocks
// PLAN: layers.0.sconv (sconv): tensor 0 at byte 0, shape [32768, 1, 1, 4], strides [16, 4, 4, 1] x 2 bytes; block size 1, page 8 bytes, block stride 32 bytes (padded)
// PLAN: layers.1.sconv (sconv): tensor 0 at byte 16,
//
// Served at N = 1 and N = 3: --cross-layer pads the page the same way
// (sconv-set-cache-geometry), so the IR's bind and the plan agree and every
// layer's base is aligned.
// RUN: inkling-run %t/tiny.mlir --cross-layer --block-size=1 --steps=20 \
// RUN:   --token-budget=16 --no-progress | FileCheck %s --check-prefix=SERVE
// RUN: inkling-run %t/tiny.mlir --cross-layer --block-size=3 --steps=20 \
// RUN:   --token-budget=16 --no-progress | FileCheck %s --check-prefix=SERVE
//
// A bind that holds unpadded cross-layer pages itself is refused before the
// first step.
// RUN: not inkling-run %t/unpadded.mlir --steps=5 --token-budget=16 \
// RUN:   --no-progress 2>&1 | FileCheck %s --check-prefix=UNPADDED
// UNPADDED: inkling-run: {{.*}}unpadded.mlir: cross-layer pages of 8 bytes would start layer 1's cache at a base that is not 16-byte aligned
// UNPADDED-NOT: step 0
//
// Per layer the page stays (each layer's tensor is its own base): it serves.
// RUN: inkling-run %t/tiny.mlir --block-size=1 --steps=20 --token-budget=16 \
// RUN:   --no-progress | FileCheck %s --check-prefix=SERVE
//
// Compiled for the padded page, N = 1 and (the padding kept) N = 3: every
// output and cache row of both layers matches the full-history reference.
// RUN: inkling-run %t/padded.mlir --cross-layer --steps=20 --token-budget=16 \
// RUN:   --no-progress | FileCheck %s --check-prefix=SERVE
// RUN: inkling-run %t/padded.mlir --cross-layer --block-size=3 --steps=20 \
// RUN:   --token-budget=16 --no-progress | FileCheck %s --check-prefix=SERVE
// SERVE: mismatches 0 ({{[1-9][0-9]*}} outputs and {{[1-9][0-9]*}} cache values checked

//--- tiny.mlir
#layout = #sconv.layout<kv_heads = 1, head_dim = 1, hidden = 1, kernel = 2, tp = 1>
!cache = memref<?x1x2x4xbf16, strided<[8, 8, 4, 1]>>
module attributes {inkling.num_layers = 2 : i64} {
  func.func @tiny(
      %buffer: memref<?xi8>, %qsl: memref<?xi32>, %num_computed: memref<?xi32>,
      %block_table: memref<?x?xi32>, %slots: memref<?xi64>,
      %k: memref<?x1x1xbf16>, %wk: memref<1x2xbf16>, %yk: memref<?x1x1xbf16>) {
    %cache = sconv.bind %buffer layout #layout page_bytes 16
        : memref<?xi8> -> !cache
    %step = sconv.step query_start_loc %qsl num_computed %num_computed
        block_table %block_table slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
        : memref<?x1x1xbf16>, memref<1x2xbf16>, !cache -> memref<?x1x1xbf16>
    sconv.insert %k into %cache[k] layout #layout step %step
        : memref<?x1x1xbf16>, !cache
    return
  }
}

//--- unpadded.mlir
#layout = #sconv.layout<kv_heads = 1, head_dim = 1, hidden = 1, kernel = 2, tp = 1, block_size = 1>
!cache = memref<?x1x1x4xbf16, strided<[8, 4, 4, 1]>>
module attributes {inkling.num_layers = 2 : i64} {
  func.func @tiny(
      %buffer: memref<?xi8>, %qsl: memref<?xi32>, %num_computed: memref<?xi32>,
      %block_table: memref<?x?xi32>, %slots: memref<?xi64>,
      %k: memref<?x1x1xbf16>, %wk: memref<1x2xbf16>, %yk: memref<?x1x1xbf16>) {
    %cache = sconv.bind %buffer layout #layout page_bytes 16 layers 2
        : memref<?xi8> -> !cache
    %step = sconv.step query_start_loc %qsl num_computed %num_computed
        block_table %block_table slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
        : memref<?x1x1xbf16>, memref<1x2xbf16>, !cache -> memref<?x1x1xbf16>
    sconv.insert %k into %cache[k] layout #layout step %step
        : memref<?x1x1xbf16>, !cache
    return
  }
}

//--- padded.mlir
#layout = #sconv.layout<kv_heads = 1, head_dim = 1, hidden = 1, kernel = 2, tp = 1, block_size = 1>
!cache = memref<?x1x1x4xbf16, strided<[8, 4, 4, 1]>>
module attributes {inkling.num_layers = 2 : i64} {
  func.func @tiny(
      %buffer: memref<?xi8>, %qsl: memref<?xi32>, %num_computed: memref<?xi32>,
      %block_table: memref<?x?xi32>, %slots: memref<?xi64>,
      %k: memref<?x1x1xbf16>, %wk: memref<1x2xbf16>, %yk: memref<?x1x1xbf16>) {
    %cache = sconv.bind %buffer layout #layout page_bytes 16
        : memref<?xi8> -> !cache
    %step = sconv.step query_start_loc %qsl num_computed %num_computed
        block_table %block_table slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
        : memref<?x1x1xbf16>, memref<1x2xbf16>, !cache -> memref<?x1x1xbf16>
    sconv.insert %k into %cache[k] layout #layout step %step
        : memref<?x1x1xbf16>, !cache
    return
  }
}
