// One Inkling decoder layer's sconv work with the conv's neighbours in the
// model (issue #29), at the real model's layout: 8 KV heads of 128, hidden
// 4096, kernel 4, no TP, rms_norm_eps 1e-6, the attention layer's paged KV
// cache with blocks of 128 tokens (so the conv cache's block size is 16:
// vLLM's page unifier scales it to the attention page).
//
//   K:    conv (residual) -> k_norm (RMSNorm over head_dim, weight) ->
//         the attention layer's key cache at the attention slot mapping
//   V:    conv (residual) -> the value cache
//   ATTN: conv of the attention output -> h1 = residual + y ->
//         RMSNorm over the hidden row (post-attention norm) -> the MLP's
//         input
//   MLP:  conv of the MLP output -> h2 = h1 + y -> RMSNorm (the next
//         layer's input norm)
//
// The conv outputs y are buffers of this function (memref.alloc): nothing
// outside reads them, which is what lets sconv-fuse-epilogues drop them.
// With the default fusion the layer is three ops, three nests: one
// fused_conv_kv_write for K and V, one fused_conv_add_norm each for ATTN
// and MLP, all with the conv-cache inserts folded in:
//
//   inkling-opt examples/decoder_layer_epilogues.mlir --sconv-fuse
//
// The engine runs attention between the K/V work and the ATTN conv and the
// MLP between the two norms; here their outputs arrive as arguments
// (%attn, %mlp), as in decoder_layer.mlir. The arguments are distinct
// engine buffers (`llvm.noalias`).

#layout = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>

!cache = memref<?x8x16x2048xbf16, strided<[262144, 32768, 2048, 1]>>
!kv = memref<?x128x8x128xbf16, strided<[131072, 1024, 128, 1]>>
!head = memref<?x8x128xbf16>
!row = memref<?x4096xbf16>

func.func @decoder_layer(
    %buffer: memref<?xi8> {llvm.noalias},
    %qsl: memref<?xi32> {llvm.noalias}, %num_computed: memref<?xi32> {llvm.noalias},
    %block_table: memref<?x?xi32> {llvm.noalias}, %slots: memref<?xi64> {llvm.noalias},
    %token_seq: memref<?xi32> {llvm.noalias},
    %k: !head {llvm.noalias}, %v: !head {llvm.noalias},
    %attn: !row {llvm.noalias}, %mlp: !row {llvm.noalias},
    %wk: memref<1024x4xbf16> {llvm.noalias}, %wv: memref<1024x4xbf16> {llvm.noalias},
    %wattn: memref<4096x4xbf16> {llvm.noalias}, %wmlp: memref<4096x4xbf16> {llvm.noalias},
    %k_norm: memref<128xbf16> {llvm.noalias},
    %key_cache: !kv {llvm.noalias}, %value_cache: !kv {llvm.noalias},
    %attn_slots: memref<?xi64> {llvm.noalias},
    %residual: !row {llvm.noalias},
    %post_attn_norm: memref<4096xbf16> {llvm.noalias},
    %next_norm: memref<4096xbf16> {llvm.noalias},
    %h1: !row {llvm.noalias}, %mlp_in: !row {llvm.noalias},
    %h2: !row {llvm.noalias}, %next_in: !row {llvm.noalias}) {
  %cache = sconv.bind %buffer layout #layout page_bytes 524288
      : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %num_computed
      block_table %block_table slot_mapping %slots
      token_seq(%token_seq : memref<?xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  %c0 = arith.constant 0 : index
  %t = memref.dim %k, %c0 : !head
  %yk = memref.alloc(%t) : !head
  %yv = memref.alloc(%t) : !head
  %kn = memref.alloc(%t) : !head
  %yattn = memref.alloc(%t) : !row
  %ymlp = memref.alloc(%t) : !row

  // K and V: straight out of the QKV projection, into the attention cache.
  sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
      : !head, memref<1024x4xbf16>, !cache -> !head
  sconv.insert %k into %cache[k] layout #layout step %step : !head, !cache
  sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
      : !head, memref<1024x4xbf16>, !cache -> !head
  sconv.insert %v into %cache[v] layout #layout step %step : !head, !cache
  sconv.rms_norm %yk weight %k_norm eps 1.0e-06 layout #layout stream k
      into %kn : !head, memref<128xbf16> -> !head
  sconv.kv_write %kn into %key_cache slots %attn_slots layout #layout
      stream k : !head, !kv, memref<?xi64>
  sconv.kv_write %yv into %value_cache slots %attn_slots layout #layout
      stream v : !head, !kv, memref<?xi64>

  // Attention output: conv, residual add, post-attention norm.
  sconv.conv %attn, %wattn history %cache[attn] layout #layout step %step
      into %yattn : !row, memref<4096x4xbf16>, !cache -> !row
  sconv.insert %attn into %cache[attn] layout #layout step %step
      : !row, !cache
  sconv.add_rms_norm %yattn, %residual weight %post_attn_norm eps 1.0e-06
      layout #layout stream attn into %h1, %mlp_in
      : !row, !row, memref<4096xbf16> -> !row, !row

  // MLP output: conv, residual add, the next layer's input norm.
  sconv.conv %mlp, %wmlp history %cache[mlp] layout #layout step %step
      into %ymlp : !row, memref<4096x4xbf16>, !cache -> !row
  sconv.insert %mlp into %cache[mlp] layout #layout step %step
      : !row, !cache
  sconv.add_rms_norm %ymlp, %h1 weight %next_norm eps 1.0e-06
      layout #layout stream mlp into %h2, %next_in
      : !row, !row, memref<4096xbf16> -> !row, !row

  memref.dealloc %yk : !head
  memref.dealloc %yv : !head
  memref.dealloc %kn : !head
  memref.dealloc %yattn : !row
  memref.dealloc %ymlp : !row
  return
}
