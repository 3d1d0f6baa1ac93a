// RUN: inkling-opt %s | inkling-opt | FileCheck %s
// RUN: inkling-opt %s --mlir-print-op-generic | inkling-opt | FileCheck %s

// Every example of the op and attribute descriptions, printed back in the
// custom form.

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

// CHECK: #[[LAYOUT:.+]] = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
// CHECK: #[[LAYOUT_N16:.+]] = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>
// CHECK: #[[LAYOUT_N1:.+]] = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 1>
// CHECK: #[[LAYOUT_TP2:.+]] = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>

// CHECK-LABEL: func @bind
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT]] page_bytes 131072 : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
func.func @bind(%buffer: memref<?xi8>) -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>> {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
      head_dim = 128, hidden = 4096, kernel = 4, tp = 1> page_bytes 131072
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return %cache : memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
}

// A page padded up to a unified page size: the block stride grows.
// CHECK-LABEL: func @bind_padded_static
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT]] page_bytes 262144 : memref<1048576xi8> -> memref<4x8x4x2048xbf16, strided<[131072, 8192, 2048, 1]>>
func.func @bind_padded_static(%buffer: memref<1048576xi8>) {
  %cache = sconv.bind %buffer layout #l page_bytes 262144
      : memref<1048576xi8> -> memref<4x8x4x2048xbf16, strided<[131072, 8192, 2048, 1]>>
  return
}

// The engine's block size N, independent of the kernel: printed only when
// it differs from the kernel (block_size = kernel prints as before).
// CHECK-LABEL: func @bind_block_size
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT_N16]] page_bytes 524288 : memref<?xi8> -> memref<?x8x16x2048xbf16, strided<[262144, 32768, 2048, 1]>>
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT]] page_bytes 131072 :
func.func @bind_block_size(%buffer: memref<?xi8>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
      head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>
      page_bytes 524288
      : memref<?xi8> -> memref<?x8x16x2048xbf16, strided<[262144, 32768, 2048, 1]>>
  %same = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
      head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 4>
      page_bytes 131072
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
  return
}

// Cross-layer pages: a block holds 32 layers' pages side by side.
// CHECK-LABEL: func @bind_cross_layer
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT]] page_bytes 4194304 layers 32 : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[2097152, 8192, 2048, 1]>>
// CHECK: sconv.bind %{{.*}} layout #[[LAYOUT_N1]] page_bytes 98304 layers 3 : memref<?xi8> -> memref<?x8x1x2048xbf16, strided<[49152, 2048, 2048, 1]>>
func.func @bind_cross_layer(%buffer: memref<?xi8>) {
  %cache = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
      head_dim = 128, hidden = 4096, kernel = 4, tp = 1> page_bytes 4194304
      layers 32
      : memref<?xi8> -> memref<?x8x4x2048xbf16, strided<[2097152, 8192, 2048, 1]>>
  %n1 = sconv.bind %buffer layout #sconv.layout<kv_heads = 8,
      head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 1,
      dtype = bf16> page_bytes 98304 layers 3
      : memref<?xi8> -> memref<?x8x1x2048xbf16, strided<[49152, 2048, 2048, 1]>>
  return
}

// CHECK-LABEL: func @step
// CHECK: sconv.step query_start_loc %{{.*}} num_computed %{{.*}} block_table %{{.*}} slot_mapping %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
func.func @step(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                %bt: memref<?x?xi32>, %slots: memref<?xi64>) -> !sconv.step {
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  return %step : !sconv.step
}

// The optional status buffer of the checked lowering.
// CHECK-LABEL: func @step_status
// CHECK: sconv.step query_start_loc %{{.*}} num_computed %{{.*}} block_table %{{.*}} slot_mapping %{{.*}} status %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
func.func @step_status(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                       %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                       %status: memref<5xi64>) -> !sconv.step {
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  return %step : !sconv.step
}

// The optional per-token sequence ids, alone and with a status buffer.
// CHECK-LABEL: func @step_token_seq
// CHECK: sconv.step query_start_loc %{{.*}} num_computed %{{.*}} block_table %{{.*}} slot_mapping %{{.*}} token_seq(%{{.*}} : memref<?xi32>) : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
// CHECK: sconv.step query_start_loc %{{.*}} num_computed %{{.*}} block_table %{{.*}} slot_mapping %{{.*}} token_seq(%{{.*}} : memref<16xi32>) status %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
func.func @step_token_seq(%qsl: memref<?xi32>, %nc: memref<?xi32>,
                          %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                          %seq: memref<?xi32>, %seq16: memref<16xi32>,
                          %status: memref<5xi64>) -> (!sconv.step, !sconv.step) {
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots token_seq(%seq : memref<?xi32>)
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  %checked = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots token_seq(%seq16 : memref<16xi32>)
      status %status
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>, memref<5xi64>
  return %step, %checked : !sconv.step, !sconv.step
}

// CHECK-LABEL: func @insert
// CHECK: sconv.insert %{{.*}} into %{{.*}}[k] layout #[[LAYOUT]] step %{{.*}} : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
// CHECK: sconv.insert %{{.*}} into %{{.*}}[mlp] layout #[[LAYOUT]] step %{{.*}} : memref<?x4096xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
// A token stride larger than the row: K sliced out of a fused QKV output.
// CHECK: sconv.insert %{{.*}} into %{{.*}}[v] layout #[[LAYOUT]] step %{{.*}} : memref<?x8x128xbf16, strided<[3072, 128, 1], offset: ?>>
func.func @insert(%k: memref<?x8x128xbf16>, %mlp: memref<?x4096xbf16>,
                  %vslice: memref<?x8x128xbf16, strided<[3072, 128, 1], offset: ?>>,
                  %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                  %step: !sconv.step) {
  sconv.insert %k into %cache[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
      step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  sconv.insert %mlp into %cache[mlp] layout #l step %step
      : memref<?x4096xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  sconv.insert %vslice into %cache[v] layout #l step %step
      : memref<?x8x128xbf16, strided<[3072, 128, 1], offset: ?>>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// CHECK-LABEL: func @conv
// CHECK: sconv.conv %{{.*}}, %{{.*}} history %{{.*}}[k] layout #[[LAYOUT]] step %{{.*}} into %{{.*}} : memref<?x8x128xbf16>, memref<1024x4xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
// CHECK: sconv.conv %{{.*}}, %{{.*}} bias %{{.*}} history %{{.*}}[attn] layout #[[LAYOUT]] step %{{.*}} into %{{.*}} activation silu {residual = false} : memref<?x4096xbf16>, memref<4096x4xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, memref<4096xbf16> -> memref<?x4096xbf16>
func.func @conv(%k: memref<?x8x128xbf16>, %wk: memref<1024x4xbf16>,
                %yk: memref<?x8x128xbf16>, %a: memref<?x4096xbf16>,
                %wa: memref<4096x4xbf16>, %ba: memref<4096xbf16>,
                %ya: memref<?x4096xbf16>,
                %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                %step: !sconv.step) {
  sconv.conv %k, %wk history %cache[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
      step %step into %yk
      : memref<?x8x128xbf16>, memref<1024x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>> -> memref<?x8x128xbf16>
  sconv.conv %a, %wa bias %ba history %cache[attn] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
      step %step into %ya
      activation silu {residual = false}
      : memref<?x4096xbf16>, memref<4096x4xbf16>,
        memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<4096xbf16> -> memref<?x4096xbf16>
  return
}

// The explicit default dtype is the same attribute as the implicit one; a
// tp = 2 rank holds 4 of the 8 heads with the same D.
// CHECK-LABEL: func @layout_forms
// CHECK: sconv.insert %{{.*}} into %{{.*}}[k] layout #[[LAYOUT]] step %{{.*}} :
// CHECK: sconv.insert %{{.*}} into %{{.*}}[k] layout #[[LAYOUT_TP2]] step %{{.*}} : memref<?x4x128xbf16>, memref<?x4x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
func.func @layout_forms(%k: memref<?x8x128xbf16>, %k2: memref<?x4x128xbf16>,
                        %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                        %cache2: memref<?x4x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                        %step: !sconv.step) {
  sconv.insert %k into %cache[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, dtype = bf16>
      step %step
      : memref<?x8x128xbf16>, memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  sconv.insert %k2 into %cache2[k] layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2, dtype = bf16>
      step %step
      : memref<?x4x128xbf16>, memref<?x4x4x2048xbf16, strided<[?, 8192, 2048, 1]>>
  return
}

// CHECK-LABEL: func @insert_packed
// CHECK: sconv.insert_packed %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}}[k, v, attn, mlp] layout #[[LAYOUT]] step %{{.*}} : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, memref<?x8x128xbf16>, memref<?x8x128xbf16>, memref<?x4096xbf16>, memref<?x4096xbf16>
// CHECK: sconv.insert_packed %{{.*}}, %{{.*}} into %{{.*}}[mlp, k] layout
func.func @insert_packed(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                         %attn: memref<?x4096xbf16>, %mlp: memref<?x4096xbf16>,
                         %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                         %step: !sconv.step) {
  sconv.insert_packed %k, %v, %attn, %mlp into %cache[k, v, attn, mlp]
      layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
      step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<?x8x128xbf16>, memref<?x8x128xbf16>, memref<?x4096xbf16>,
        memref<?x4096xbf16>
  sconv.insert_packed %mlp, %k into %cache[mlp, k] layout #l step %step
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        memref<?x4096xbf16>, memref<?x8x128xbf16>
  return
}

// CHECK-LABEL: func @fused_conv
// CHECK: sconv.fused_conv %{{.*}}, %{{.*}} weights %{{.*}}, %{{.*}} history %{{.*}}[k, v] layout #[[LAYOUT]] step %{{.*}} into %{{.*}}, %{{.*}} and_insert : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, (memref<?x8x128xbf16>, memref<?x8x128xbf16>), (memref<1024x4xbf16>, memref<1024x4xbf16>) -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
// CHECK: sconv.fused_conv %{{.*}} weights %{{.*}} biases %{{.*}} history %{{.*}}[attn] layout #[[LAYOUT]] step %{{.*}} into %{{.*}} activation silu {residual = false} : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>, (memref<?x4096xbf16>), (memref<4096x4xbf16>), (memref<4096xbf16>) -> (memref<?x4096xbf16>)
func.func @fused_conv(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                      %wk: memref<1024x4xbf16>, %wv: memref<1024x4xbf16>,
                      %yk: memref<?x8x128xbf16>, %yv: memref<?x8x128xbf16>,
                      %a: memref<?x4096xbf16>, %wa: memref<4096x4xbf16>,
                      %ba: memref<4096xbf16>, %ya: memref<?x4096xbf16>,
                      %cache: memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
                      %step: !sconv.step) {
  sconv.fused_conv %k, %v weights %wk, %wv history %cache[k, v]
      layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
      step %step into %yk, %yv and_insert
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>)
        -> (memref<?x8x128xbf16>, memref<?x8x128xbf16>)
  sconv.fused_conv %a weights %wa biases %ba history %cache[attn] layout #l
      step %step into %ya activation silu {residual = false}
      : memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>,
        (memref<?x4096xbf16>), (memref<4096x4xbf16>), (memref<4096xbf16>)
        -> (memref<?x4096xbf16>)
  return
}
