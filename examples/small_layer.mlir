// A small decoder layer for fast end-to-end runs and tests: kv_heads 2,
// head_dim 8, hidden 16, kernel 4 (H 2, D 32, a 512-byte page). Besides the
// reference model's convs (residual, no bias, no activation) the MLP conv
// has a bias and SiLU without the residual, so that inkling-run checks
// every variant of the op. Three layers, from the module attribute:
//
//   build/bin/inkling-run examples/small_layer.mlir

#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>

!cache = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>

module attributes {inkling.num_layers = 3 : i64} {
  func.func @small_layer(
      %buffer: memref<?xi8> {llvm.noalias},
      %qsl: memref<?xi32> {llvm.noalias}, %num_computed: memref<?xi32> {llvm.noalias},
      %block_table: memref<?x?xi32> {llvm.noalias}, %slots: memref<?xi64> {llvm.noalias},
      %k: memref<?x2x8xbf16> {llvm.noalias}, %v: memref<?x2x8xbf16> {llvm.noalias},
      %attn: memref<?x16xbf16> {llvm.noalias}, %mlp: memref<?x16xbf16> {llvm.noalias},
      %wk: memref<16x4xbf16> {llvm.noalias}, %wv: memref<16x4xbf16> {llvm.noalias},
      %wattn: memref<16x4xbf16> {llvm.noalias}, %wmlp: memref<16x4xbf16> {llvm.noalias},
      %bmlp: memref<16xbf16> {llvm.noalias},
      %yk: memref<?x2x8xbf16> {llvm.noalias}, %yv: memref<?x2x8xbf16> {llvm.noalias},
      %yattn: memref<?x16xbf16> {llvm.noalias}, %ymlp: memref<?x16xbf16> {llvm.noalias}) {
    %cache = sconv.bind %buffer layout #layout page_bytes 512
        : memref<?xi8> -> !cache
    %step = sconv.step query_start_loc %qsl num_computed %num_computed
        block_table %block_table slot_mapping %slots
        : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
    sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
        : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache -> memref<?x2x8xbf16>
    sconv.insert %k into %cache[k] layout #layout step %step
        : memref<?x2x8xbf16>, !cache
    sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
        : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache -> memref<?x2x8xbf16>
    sconv.insert %v into %cache[v] layout #layout step %step
        : memref<?x2x8xbf16>, !cache
    sconv.conv %attn, %wattn history %cache[attn] layout #layout
        step %step into %yattn
        : memref<?x16xbf16>, memref<16x4xbf16>, !cache -> memref<?x16xbf16>
    sconv.insert %attn into %cache[attn] layout #layout step %step
        : memref<?x16xbf16>, !cache
    sconv.conv %mlp, %wmlp bias %bmlp history %cache[mlp] layout #layout
        step %step into %ymlp activation silu {residual = false}
        : memref<?x16xbf16>, memref<16x4xbf16>, !cache, memref<16xbf16>
          -> memref<?x16xbf16>
    sconv.insert %mlp into %cache[mlp] layout #layout step %step
        : memref<?x16xbf16>, !cache
    return
  }
}
