// RUN: inkling-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule. Each diagnostic names the offending value and
// says what was expected and what was found.

//===----------------------------------------------------------------------===//
// #sconv.layout
//===----------------------------------------------------------------------===//

// expected-error @+1 {{invalid sconv layout: tp (16) exceeds kv_heads (8): every rank needs at least one whole KV head}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 16>}

// -----

// expected-error @+1 {{invalid sconv layout: kv_heads (6) is not divisible by tp (4)}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 6, head_dim = 128, hidden = 3072, kernel = 4, tp = 4>}

// -----

// expected-error @+1 {{invalid sconv layout: hidden (4100) is not divisible by kv_heads (8)}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4100, kernel = 4, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: element type 'f16' is not supported: the sconv cache holds bf16}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, dtype = f16>}

// -----

// expected-error @+1 {{invalid sconv layout: kv_heads must be >= 1, got 0}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 0, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: head_dim must be >= 1, got -2}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = -2, hidden = 4096, kernel = 4, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: hidden must be >= 1, got 0}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 0, kernel = 4, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: kernel must be >= 1, got 0}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 0, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: tp must be >= 1, got 0}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 0>}

// -----

// expected-error @+1 {{invalid sconv layout: layout too large}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 1, head_dim = 4611686018427387904, hidden = 1, kernel = 4, tp = 1>}

// -----

// expected-error @+1 {{invalid sconv layout: block_size must be >= 1, got 0}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 0>}

// -----

// expected-error @+1 {{invalid sconv layout: block_size must be >= 1, got -3}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = -3>}

// -----

// The page H*N*D*2 grows with N: 8 * 2^26 * 2048 * 2 bytes is 2^41.
// expected-error @+1 {{invalid sconv layout: layout too large: the page of kv_heads (8), head_dim (128), hidden (4096), block_size (67108864) exceeds 2^40 bytes}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 67108864>}

// -----

// expected-error @+1 {{expected 'block_size' or 'dtype' (once each, in that order), found 'dtype'}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, dtype = bf16, dtype = bf16>}

// -----

// expected-error @+1 {{expected 'block_size' or 'dtype' (once each, in that order), found 'block_size'}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, dtype = bf16, block_size = 8>}

// -----

// The parameters are written in a fixed order.
// expected-error @+1 {{expected 'head_dim'}}
func.func private @f() attributes {l = #sconv.layout<kv_heads = 8, hidden = 4096, head_dim = 128, kernel = 4, tp = 1>}

// -----

//===----------------------------------------------------------------------===//
// sconv.bind
//===----------------------------------------------------------------------===//

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_cross_layer_stride(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op attribute 'page_bytes': the block stride of 262144 bytes cannot hold layers (3) pages of 131072 bytes}}
  %c = sconv.bind %buffer layout #l page_bytes 262144 layers 3
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[131072, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_cross_layer_count(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op attribute 'layers': expected a layer count in [1, 2^20], found 0}}
  %c = sconv.bind %buffer layout #l page_bytes 131072 layers 0
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>
func.func @bind_block_size_type(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op result 'cache': expected 'memref<?x8x16x2048xbf16, strided<[262144, 32768, 2048, 1]>>'}}
  %c = sconv.bind %buffer layout #l page_bytes 524288
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[262144, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_buffer_type(%buffer: memref<?xi16>) {
  // expected-error @+1 {{'sconv.bind' op operand 'buffer': expected a contiguous memref<?xi8>, found 'memref<?xi16>'}}
  %c = sconv.bind %buffer layout #l page_bytes 131072
      : memref<?xi16> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_page_too_small(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op attribute 'page_bytes': page_bytes (65536) is smaller than the layout's page of 131072 bytes (H*N*D*2)}}
  %c = sconv.bind %buffer layout #l page_bytes 65536
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[32768, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_page_odd(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op attribute 'page_bytes': page_bytes (131073) is not a multiple of the element size (2 bytes)}}
  %c = sconv.bind %buffer layout #l page_bytes 131073
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_result_stride(%buffer: memref<?xi8>) {
  // expected-error @+1 {{'sconv.bind' op result 'cache': expected 'memref<?x8x4x2048xbf16, strided<[131072, 8192, 2048, 1]>>' (the block count may be static when the buffer size is), found 'memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>'}}
  %c = sconv.bind %buffer layout #l page_bytes 262144
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @bind_result_blocks(%buffer: memref<1048576xi8>) {
  // expected-error @+1 {{'sconv.bind' op result 'cache': expected 'memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>'}}
  %c = sconv.bind %buffer layout #l page_bytes 131072
      : memref<1048576xi8> -> memref<9x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sconv.step
//===----------------------------------------------------------------------===//

func.func @step_qsl_type(%qsl: memref<?xi64>, %nc: memref<?xi32>,
                         %bt: memref<?x?xi32>, %sm: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'query_start_loc': expected a rank-1 memref of i32 (memref<?xi32>), found 'memref<?xi64>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<?xi64>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  return
}

// -----

func.func @step_num_computed_type(%qsl: memref<?xi32>, %nc: memref<?xindex>,
                                  %bt: memref<?x?xi32>, %sm: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'num_computed': expected a rank-1 memref of i32 (memref<?xi32>), found 'memref<?xindex>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<?xi32>, memref<?xindex>, memref<?x?xi32>, memref<?xi64>
  return
}

// -----

func.func @step_block_table_rank(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                                 %bt: memref<?xi32>, %sm: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'block_table': expected a rank-2 memref of i32 (memref<?x?xi32>), found 'memref<?xi32>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi64>
  return
}

// -----

func.func @step_slot_mapping_type(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                                  %bt: memref<?x?xi32>, %sm: memref<?xi32>) {
  // expected-error @+1 {{'sconv.step' op operand 'slot_mapping': expected a rank-1 memref of i64 (memref<?xi64>), found 'memref<?xi32>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi32>
  return
}

// -----

func.func @step_token_seq_type(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                               %bt: memref<?x?xi32>, %sm: memref<?xi64>,
                               %seq: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'token_seq': expected a rank-1 memref of i32 (memref<?xi32>), found 'memref<?xi64>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      token_seq(%seq : memref<?xi64>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  return
}

// -----

func.func @step_token_seq_rank(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                               %bt: memref<?x?xi32>, %sm: memref<?xi64>,
                               %seq: memref<?x?xi32>) {
  // expected-error @+1 {{'sconv.step' op operand 'token_seq': expected a rank-1 memref of i32 (memref<?xi32>), found 'memref<?x?xi32>'}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      token_seq(%seq : memref<?x?xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  return
}

// -----

func.func @step_qsl_size(%qsl: memref<3xi32>, %nc: memref<3xi32>,
                         %bt: memref<3x8xi32>, %sm: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'query_start_loc': expected 4 entries (B + 1 for B = 3 sequences in 'num_computed'), found 3}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<3xi32>, memref<3xi32>, memref<3x8xi32>, memref<?xi64>
  return
}

// -----

func.func @step_block_table_rows(%qsl: memref<4xi32>, %nc: memref<3xi32>,
                                 %bt: memref<2x8xi32>, %sm: memref<?xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'block_table': expected 3 rows (one per sequence in 'num_computed'), found 2}}
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<4xi32>, memref<3xi32>, memref<2x8xi32>, memref<?xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sconv.insert
//===----------------------------------------------------------------------===//

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_cache_shape(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x1024xbf16, strided<[?, 4096, 1024, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': expected shape [?, 8, 4, 2048], found [?, 8, 4, 1024]}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x1024xbf16, strided<[?, 4096, 1024, 1]>>
  return
}

// -----

// A cache bound at another block size than the op's layout says.
#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 8>
func.func @insert_cache_block_size(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': block size N (dim 2 = 4) differs from the layout's block_size (8)}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_cache_rank(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x2048xbf16>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': expected shape [?, 8, 4, 2048], found [?, 2048]}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x2048xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_cache_element(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': expected element type 'bf16', found 'f16'}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_cache_strides(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 2048, 16384, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': expected strides [?, 8192, 2048, 1], found [?, 2048, 16384, 1]}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 2048, 16384, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_cache_block_stride(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[32768, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'cache': block stride 32768 is smaller than the page of H*N*D = 65536 elements}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[32768, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_x_width(%k: memref<?x8x64xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'x': expected shape [?, 8, 128], found [?, 8, 64]}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x64xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_x_flat_width(%a: memref<?x2048xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'x': expected shape [?, 4096], found [?, 2048]}}
  sconv.insert %a into %cache[attn] layout #l step %step
      : memref<?x2048xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_x_rank(%k: memref<?xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'x': expected shape [T, 8, 512] or [T, 4096] for stream 'mlp', found [?]}}
  sconv.insert %k into %cache[mlp] layout #l step %step
      : memref<?xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_x_element(%k: memref<?x8x128xf32>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'x': expected element type 'bf16', found 'f32'}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xf32>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_x_rows_not_contiguous(%k: memref<?x8x128xbf16, strided<[?, 256, 1]>>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert' op operand 'x': expected strides [?, 128, 1], found [?, 256, 1]}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16, strided<[?, 256, 1]>>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_too_few_slots(%k: memref<16x8x128xbf16>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %sm: memref<8xi64>,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<8xi64>
  // expected-error @+1 {{'sconv.insert' op operand 'slot_mapping': holds 8 slots for 16 tokens}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<16x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_too_few_token_seq(%k: memref<16x8x128xbf16>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %sm: memref<?xi64>,
    %seq: memref<8xi32>, %w: memref<1024x4xbf16>, %y: memref<16x8x128xbf16>,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %sm
      token_seq(%seq : memref<8xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  // expected-error @+1 {{'sconv.conv' op operand 'token_seq': holds 8 entries for 16 tokens}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<16x8x128xbf16>, memref<1024x4xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<16x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @insert_unknown_stream(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{expected a stream (k, v, attn or mlp), found 'q'}}
  sconv.insert %k into %cache[q] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sconv.conv
//===----------------------------------------------------------------------===//

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_weights_shape(%k: memref<?x8x128xbf16>, %w: memref<1024x3xbf16>,
    %y: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'weights': expected shape [1024, 4], found [1024, 3]}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x8x128xbf16>, memref<1024x3xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_weights_element(%k: memref<?x8x128xbf16>, %w: memref<1024x4xf32>,
    %y: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'weights': expected element type 'bf16', found 'f32'}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x8x128xbf16>, memref<1024x4xf32>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_bias_shape(%a: memref<?x4096xbf16>, %w: memref<4096x4xbf16>,
    %b: memref<1024xbf16>, %y: memref<?x4096xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'bias': expected shape [4096], found [1024]}}
  sconv.conv %a, %w bias %b history %cache[attn] layout #l step %step into %y
      : memref<?x4096xbf16>, memref<4096x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, memref<1024xbf16>
        -> memref<?x4096xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_out_shape(%a: memref<?x4096xbf16>, %w: memref<4096x4xbf16>,
    %y: memref<?x8x512xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'out': expected the shape of 'x' ('memref<?x4096xbf16>'), found 'memref<?x8x512xbf16>'}}
  sconv.conv %a, %w history %cache[attn] layout #l step %step into %y
      : memref<?x4096xbf16>, memref<4096x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x512xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_in_place(%k: memref<?x8x128xbf16>, %w: memref<1024x4xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'out' must not be operand 'x'}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %k
      : memref<?x8x128xbf16>, memref<1024x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  return
}

// -----

// The same buffer through memref.cast is still x.
#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_in_place_through_cast(%k: memref<?x8x128xbf16>, %w: memref<1024x4xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  %static = memref.cast %k : memref<?x8x128xbf16> to memref<4x8x128xbf16>
  %y = memref.cast %static : memref<4x8x128xbf16> to memref<?x8x128xbf16>
  // expected-error @+1 {{'sconv.conv' op operand 'out' must not be operand 'x'}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x8x128xbf16>, memref<1024x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @fused_out_is_input_through_cast(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  %yv = memref.cast %k : memref<?x8x128xbf16> to memref<?x8x128xbf16, strided<[1024, 128, 1]>>
  %y = memref.cast %yv : memref<?x8x128xbf16, strided<[1024, 128, 1]>> to memref<?x8x128xbf16>
  // expected-error @+1 {{'sconv.fused_conv' op operand 'outs[1]' must not be an input}}
  sconv.fused_conv %k, %v weights %wk, %wk history %cache[k, v] layout #l step %step
      into %yk, %y
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @conv_cache_layout_mismatch(%k: memref<?x4x128xbf16>, %w: memref<512x4xbf16>,
    %y: memref<?x4x128xbf16>, %step: !sconv.step,
    %cache: memref<?x4x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.conv' op operand 'cache': expected shape [?, 8, 4, 2048], found [?, 4, 4, 2048]}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x4x128xbf16>, memref<512x4xbf16>,
        memref<?x4x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x4x128xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sconv.insert_packed
//===----------------------------------------------------------------------===//

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @packed_count(%k: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert_packed' op expected one input per stream, found 1 inputs for 2 streams}}
  sconv.insert_packed %k into %cache[k, v] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @packed_same_stream_twice(%k: memref<?x8x128xbf16>, %k2: memref<?x8x128xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert_packed' op attribute 'streams': stream 'k' appears twice}}
  sconv.insert_packed %k, %k2 into %cache[k, k] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<?x8x128xbf16>, memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @packed_input_shape(%k: memref<?x8x128xbf16>, %a: memref<?x8x128xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert_packed' op operand 'inputs[1]': expected shape [?, 8, 512], found [?, 8, 128]}}
  sconv.insert_packed %k, %a into %cache[k, attn] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<?x8x128xbf16>, memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @packed_token_counts(%k: memref<4x8x128xbf16>, %v: memref<5x8x128xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.insert_packed' op operand 'inputs[1]': expected 4 tokens like 'inputs[0]', found 5}}
  sconv.insert_packed %k, %v into %cache[k, v] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<4x8x128xbf16>, memref<5x8x128xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sconv.fused_conv
//===----------------------------------------------------------------------===//

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @fused_counts(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>, %yv: memref<?x8x128xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.fused_conv' op expected one input, weight, output (and bias, when biases are given) per stream; found 2 inputs, 1 weights, 0 biases, 2 outputs for 2 streams}}
  sconv.fused_conv %k, %v weights %wk history %cache[k, v] layout #l step %step
      into %yk, %yv
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>), (memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @fused_same_stream(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>, %yv: memref<?x8x128xbf16>,
    %step: !sconv.step, %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.fused_conv' op attribute 'streams': stream 'v' appears twice}}
  sconv.fused_conv %k, %v weights %wk, %wk history %cache[v, v] layout #l step %step
      into %yk, %yv
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @fused_weights(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %wv: memref<1024x2xbf16>, %yk: memref<?x8x128xbf16>,
    %yv: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.fused_conv' op operand 'weights[1]': expected shape [1024, 4], found [1024, 2]}}
  sconv.fused_conv %k, %v weights %wk, %wv history %cache[k, v] layout #l step %step
      into %yk, %yv
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x2xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @fused_out_is_input(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>, %step: !sconv.step,
    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>) {
  // expected-error @+1 {{'sconv.fused_conv' op operand 'outs[1]' must not be an input}}
  sconv.fused_conv %k, %v weights %wk, %wk history %cache[k, v] layout #l step %step
      into %yk, %k
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  return
}
