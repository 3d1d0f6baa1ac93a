// decoder_layer_epilogues.mlir at the size of small_layer.mlir, for fast
// end-to-end runs and tests of the epilogues (issue #29): kv_heads 2,
// head_dim 8, hidden 16, kernel 4 (H 2, D 32, N 4, a 512-byte page), and
// the attention layer's paged KV cache in blocks of 8 tokens (its K and V
// page, 2 * 8 * 2 * 8 * 2 bytes, is the conv cache's page: an attention
// block is two conv blocks).
//
//   K:    conv -> k_norm -> the key cache at the attention slots
//   V:    conv -> the value cache
//   ATTN: conv -> h1 = residual + y -> RMSNorm
//   MLP:  conv -> h2 = h1 + y -> RMSNorm (the MLP path reads the ATTN
//         path's h1: one argument, written by one op, read by a later one)
//
//   build/bin/inkling-run examples/small_layer_epilogues.mlir

#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>

!cache = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
!kv = memref<?x8x2x8xbf16, strided<[128, 16, 8, 1]>>
!head = memref<?x2x8xbf16>
!row = memref<?x16xbf16>

func.func @small_layer_epilogues(
    %buffer: memref<?xi8> {llvm.noalias},
    %qsl: memref<?xi32> {llvm.noalias}, %num_computed: memref<?xi32> {llvm.noalias},
    %block_table: memref<?x?xi32> {llvm.noalias}, %slots: memref<?xi64> {llvm.noalias},
    %k: !head {llvm.noalias}, %v: !head {llvm.noalias},
    %attn: !row {llvm.noalias}, %mlp: !row {llvm.noalias},
    %wk: memref<16x4xbf16> {llvm.noalias}, %wv: memref<16x4xbf16> {llvm.noalias},
    %wattn: memref<16x4xbf16> {llvm.noalias}, %wmlp: memref<16x4xbf16> {llvm.noalias},
    %k_norm: memref<8xbf16> {llvm.noalias},
    %key_cache: !kv {llvm.noalias}, %value_cache: !kv {llvm.noalias},
    %attn_slots: memref<?xi64> {llvm.noalias},
    %residual: !row {llvm.noalias},
    %post_attn_norm: memref<16xbf16> {llvm.noalias},
    %next_norm: memref<16xbf16> {llvm.noalias},
    %h1: !row {llvm.noalias}, %mlp_in: !row {llvm.noalias},
    %h2: !row {llvm.noalias}, %next_in: !row {llvm.noalias}) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %num_computed
      block_table %block_table slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  %c0 = arith.constant 0 : index
  %t = memref.dim %k, %c0 : !head
  %yk = memref.alloc(%t) : !head
  %yv = memref.alloc(%t) : !head
  %kn = memref.alloc(%t) : !head
  %yattn = memref.alloc(%t) : !row
  %ymlp = memref.alloc(%t) : !row

  sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
      : !head, memref<16x4xbf16>, !cache -> !head
  sconv.insert %k into %cache[k] layout #layout step %step : !head, !cache
  sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
      : !head, memref<16x4xbf16>, !cache -> !head
  sconv.insert %v into %cache[v] layout #layout step %step : !head, !cache
  sconv.rms_norm %yk weight %k_norm eps 1.0e-06 layout #layout stream k
      into %kn : !head, memref<8xbf16> -> !head
  sconv.kv_write %kn into %key_cache slots %attn_slots layout #layout
      stream k : !head, !kv, memref<?xi64>
  sconv.kv_write %yv into %value_cache slots %attn_slots layout #layout
      stream v : !head, !kv, memref<?xi64>

  sconv.conv %attn, %wattn history %cache[attn] layout #layout step %step
      into %yattn : !row, memref<16x4xbf16>, !cache -> !row
  sconv.insert %attn into %cache[attn] layout #layout step %step
      : !row, !cache
  sconv.add_rms_norm %yattn, %residual weight %post_attn_norm eps 1.0e-06
      layout #layout stream attn into %h1, %mlp_in
      : !row, !row, memref<16xbf16> -> !row, !row

  sconv.conv %mlp, %wmlp history %cache[mlp] layout #layout step %step
      into %ymlp : !row, memref<16x4xbf16>, !cache -> !row
  sconv.insert %mlp into %cache[mlp] layout #layout step %step
      : !row, !cache
  sconv.add_rms_norm %ymlp, %h1 weight %next_norm eps 1.0e-06
      layout #layout stream mlp into %h2, %next_in
      : !row, !row, memref<16xbf16> -> !row, !row

  memref.dealloc %yk : !head
  memref.dealloc %yv : !head
  memref.dealloc %kn : !head
  memref.dealloc %yattn : !row
  memref.dealloc %ymlp : !row
  return
}
