// The layout of issue 13: kv_heads 4, head_dim 24, hidden 72, kernel 3 (attn
// and mlp 18 channels per head, the mlp stream at column 66, weights of
// head h at element 54h). Before the alignment came from proof, serving it
// died with SIGSEGV on a vmovdqa; now every output and cache row matches
// the full-history reference, in both fused forms and unfused.
//
// RUN: inkling-run %s --steps=40 --no-progress | FileCheck %s
// RUN: inkling-run %s --steps=40 --no-progress --fusion=none | FileCheck %s
// RUN: inkling-run %s --steps=40 --no-progress --fusion=packed-inserts | FileCheck %s
// RUN: inkling-run %s --steps=40 --no-progress --checked | FileCheck %s
// CHECK: mismatches 0 (

#layout = #sconv.layout<kv_heads = 4, head_dim = 24, hidden = 72, kernel = 3, tp = 1>
!cache = memref<?x4x3x128xbf16, strided<[1536, 384, 128, 1]>>
module attributes {inkling.num_layers = 2 : i64} {
  func.func @odd_layer(
      %buffer: memref<?xi8>, %qsl: memref<?xi32>, %num_computed: memref<?xi32>,
      %block_table: memref<?x?xi32>, %slots: memref<?xi64>,
      %k: memref<?x4x24xbf16>, %v: memref<?x4x24xbf16>,
      %attn: memref<?x72xbf16>, %mlp: memref<?x72xbf16>,
      %wk: memref<96x3xbf16>, %wv: memref<96x3xbf16>,
      %wattn: memref<72x3xbf16>, %wmlp: memref<72x3xbf16>,
      %bmlp: memref<72xbf16>,
      %yk: memref<?x4x24xbf16>, %yv: memref<?x4x24xbf16>,
      %yattn: memref<?x72xbf16>, %ymlp: memref<?x72xbf16>) {
    %cache = sconv.bind %buffer layout #layout page_bytes 3072
        : memref<?xi8> -> !cache
    %step = sconv.step query_start_loc %qsl num_computed %num_computed
        block_table %block_table slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
        : memref<?x4x24xbf16>, memref<96x3xbf16>, !cache -> memref<?x4x24xbf16>
    sconv.insert %k into %cache[k] layout #layout step %step
        : memref<?x4x24xbf16>, !cache
    sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
        : memref<?x4x24xbf16>, memref<96x3xbf16>, !cache -> memref<?x4x24xbf16>
    sconv.insert %v into %cache[v] layout #layout step %step
        : memref<?x4x24xbf16>, !cache
    sconv.conv %attn, %wattn history %cache[attn] layout #layout
        step %step into %yattn
        : memref<?x72xbf16>, memref<72x3xbf16>, !cache -> memref<?x72xbf16>
    sconv.insert %attn into %cache[attn] layout #layout step %step
        : memref<?x72xbf16>, !cache
    sconv.conv %mlp, %wmlp bias %bmlp history %cache[mlp] layout #layout
        step %step into %ymlp activation silu {residual = false}
        : memref<?x72xbf16>, memref<72x3xbf16>, !cache, memref<72xbf16>
          -> memref<?x72xbf16>
    sconv.insert %mlp into %cache[mlp] layout #layout step %step
        : memref<?x72xbf16>, !cache
    return
  }
}
