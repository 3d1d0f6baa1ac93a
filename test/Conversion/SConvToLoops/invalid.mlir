// RUN: inkling-opt %s --sconv-lower-to-loops -split-input-file -verify-diagnostics

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

// The step metadata must be visible to the lowering.
func.func @step_argument(%k: memref<?x8x128xbf16>,
                         %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                         %step: !sconv.step) {
  // expected-error @+1 {{'sconv.insert' op cannot be lowered: its step operand is not produced by a visible 'sconv.step' op (e.g. it is a block argument)}}
  sconv.insert %k into %cache[k] layout #l step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

func.func @conv_step_argument(%k: memref<?x8x128xbf16>, %w: memref<1024x4xbf16>,
                              %y: memref<?x8x128xbf16>,
                              %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                              %step: !sconv.step) {
  // expected-error @+1 {{'sconv.conv' op cannot be lowered: its step operand is not produced by a visible 'sconv.step' op}}
  sconv.conv %k, %w history %cache[k] layout #l step %step into %y
      : memref<?x8x128xbf16>, memref<1024x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  return
}

// -----

// The status buffer of the checked lowering holds at least 5 words.
func.func @short_status(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                        %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                        %status: memref<4xi64>) {
  // expected-error @+1 {{'sconv.step' op operand 'status': expected at least 5 entries (count, kind, token, value, limit), found 4}}
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<4xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

// The fused ops need a visible step too.
func.func @packed_step_argument(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                                %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                                %step: !sconv.step) {
  // expected-error @+1 {{'sconv.insert_packed' op cannot be lowered: its step operand is not produced by a visible 'sconv.step' op}}
  sconv.insert_packed %k, %v into %cache[k, v] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, memref<?x8x128xbf16>, memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

func.func @fused_conv_step_argument(%k: memref<?x8x128xbf16>, %w: memref<1024x4xbf16>,
                                    %y: memref<?x8x128xbf16>,
                                    %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                                    %step: !sconv.step) {
  // expected-error @+1 {{'sconv.fused_conv' op cannot be lowered: its step operand is not produced by a visible 'sconv.step' op}}
  sconv.fused_conv %k weights %w history %cache[k] layout #l step %step into %y and_insert
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (memref<?x8x128xbf16>)
  return
}
