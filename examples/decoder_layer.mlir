// One Inkling decoder layer's sconv work for one forward step, at the real
// model's layout (8 KV heads of 128, hidden 4096, kernel 4, no TP).
//
// The serving engine hands over the layer's cache allocation as raw bytes,
// the step metadata, and the four streams' inputs; the layer convolves each
// stream (residual on, no bias, no activation, as the reference model) and
// stores the step's tokens into the packed cache for later steps.
//
// `token_seq` gives each token's sequence (the runtime's step builder fills
// it), so that no kernel searches query_start_loc for it.
//
// The arguments are distinct engine buffers (`llvm.noalias`): that is what
// lets the fusion passes prove an insert commutes with the convs.
//
//   inkling-opt examples/decoder_layer.mlir --sconv-print-layouts -o /dev/null

#layout = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

func.func @decoder_layer(
    %buffer: memref<?xi8> {llvm.noalias},
    %qsl: memref<?xi32> {llvm.noalias}, %num_computed: memref<?xi32> {llvm.noalias},
    %block_table: memref<?x?xi32> {llvm.noalias}, %slots: memref<?xi64> {llvm.noalias},
    %token_seq: memref<?xi32> {llvm.noalias},
    %k: memref<?x8x128xbf16> {llvm.noalias}, %v: memref<?x8x128xbf16> {llvm.noalias},
    %attn: memref<?x4096xbf16> {llvm.noalias}, %mlp: memref<?x4096xbf16> {llvm.noalias},
    %wk: memref<1024x4xbf16> {llvm.noalias}, %wv: memref<1024x4xbf16> {llvm.noalias},
    %wattn: memref<4096x4xbf16> {llvm.noalias}, %wmlp: memref<4096x4xbf16> {llvm.noalias},
    %yk: memref<?x8x128xbf16> {llvm.noalias}, %yv: memref<?x8x128xbf16> {llvm.noalias},
    %yattn: memref<?x4096xbf16> {llvm.noalias}, %ymlp: memref<?x4096xbf16> {llvm.noalias}) {
  %cache = sconv.bind %buffer layout #layout page_bytes 131072
      : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %num_computed
      block_table %block_table slot_mapping %slots
      token_seq(%token_seq : memref<?xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>

  // K and V: straight out of the QKV projection.
  sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !cache -> memref<?x8x128xbf16>
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x8x128xbf16>, !cache
  sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !cache -> memref<?x8x128xbf16>
  sconv.insert %v into %cache[v] layout #layout step %step
      : memref<?x8x128xbf16>, !cache

  // Attention output and MLP output: the rank's hidden chunk [T, H*512].
  sconv.conv %attn, %wattn history %cache[attn] layout #layout
      step %step into %yattn
      : memref<?x4096xbf16>, memref<4096x4xbf16>, !cache -> memref<?x4096xbf16>
  sconv.insert %attn into %cache[attn] layout #layout step %step
      : memref<?x4096xbf16>, !cache
  sconv.conv %mlp, %wmlp history %cache[mlp] layout #layout
      step %step into %ymlp
      : memref<?x4096xbf16>, memref<4096x4xbf16>, !cache -> memref<?x4096xbf16>
  sconv.insert %mlp into %cache[mlp] layout #layout step %step
      : memref<?x4096xbf16>, !cache
  return
}
