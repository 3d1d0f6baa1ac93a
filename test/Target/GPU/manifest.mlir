// inkling-gpu-write-kernels: one file per distinct kernel and manifest.json.
// Two identical layers share their kernels (dedupe key: op, streams,
// layout, attributes, operand types, ABI); a layer with another layout gets
// its own. (Unfused, so each op is a kernel of its own.)
// RUN: rm -rf %t && inkling-opt %s --inkling-lower-to-nvvm=fusion=none \
// RUN:   --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: FileCheck %s < %t/manifest.json
// RUN: FileCheck %s --check-prefix=ALIGN < %t/manifest.json
// RUN: ls %t | FileCheck %s --check-prefix=FILES

#l8 = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
#l2 = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>
!c8 = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

func.func @layer0(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
    %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x8x128xbf16>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l8 page_bytes 131072 : memref<?xi8> -> !c8
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %wk history %cache[k] layout #l8 step %step into %yk
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !c8 -> memref<?x8x128xbf16>
  sconv.insert %k into %cache[k] layout #l8 step %step : memref<?x8x128xbf16>, !c8
  return
}

// The same layer with its arguments in another order: same kernels, other
// host argument bindings.
func.func @layer1(%k: memref<?x8x128xbf16>, %buffer: memref<?xi8>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,
    %wk: memref<1024x4xbf16>, %yk: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l8 page_bytes 131072 : memref<?xi8> -> !c8
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %wk history %cache[k] layout #l8 step %step into %yk
      : memref<?x8x128xbf16>, memref<1024x4xbf16>, !c8 -> memref<?x8x128xbf16>
  sconv.insert %k into %cache[k] layout #l8 step %step : memref<?x8x128xbf16>, !c8
  return
}

// Another layout (tp = 2: 4 heads per rank): distinct kernels.
func.func @layer_tp2(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
    %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x4x128xbf16>) {
  %cache = sconv.bind %buffer layout #l2 page_bytes 65536
      : memref<?xi8> -> memref<?x4x4x2048xbf16, strided<[32768, 8192, 2048, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #l2 step %step
      : memref<?x4x128xbf16>, memref<?x4x4x2048xbf16, strided<[32768, 8192, 2048, 1]>>
  return
}

// FILES: layer0_k0_conv_k.host.ll
// FILES-NEXT: layer0_k0_conv_k.ptx
// FILES-NEXT: layer0_k1_insert_k.host.ll
// FILES-NEXT: layer0_k1_insert_k.ptx
// FILES-NEXT: layer_tp2_k0_insert_k.host.ll
// FILES-NEXT: layer_tp2_k0_insert_k.ptx
// FILES-NEXT: manifest.json
// FILES-NOT: layer1

// CHECK: "generator": "inkling-gpu-write-kernels",
// CHECK: "hosts": [
// CHECK: "host_args": [0, 2, 6, 1, 5, 3, 7],
// CHECK-NEXT: "kernel": "layer0_k0_conv_k"
// CHECK: "host_args": [0, 4, 1, 5],
// CHECK-NEXT: "kernel": "layer0_k1_insert_k"
// CHECK: "name": "layer0"
// CHECK: "host_args": [1, 3, 6, 2, 0, 4, 7],
// CHECK-NEXT: "kernel": "layer0_k0_conv_k"
// CHECK: "host_args": [1, 5, 2, 0],
// CHECK-NEXT: "kernel": "layer0_k1_insert_k"
// CHECK: "name": "layer1"
// CHECK: "kernel": "layer_tp2_k0_insert_k"
// CHECK: "name": "layer_tp2"

// The conv kernel: its arguments are the host's buffers, each a memref
// descriptor of 3 + 2 * rank parameters.
// CHECK: "kernels": [
// CHECK: "args": [
// CHECK: "params": 5,
// CHECK: "type": "memref<?xi8>"
// CHECK: "shape": [1024, 4],
// CHECK-NEXT: "strides": [4, 1],
// CHECK-NEXT: "type": "memref<1024x4xbf16>"
// CHECK: "attributes": "{activation = #sconv<activation none>, residual = true}",
// CHECK-NEXT: "block": [16, 1, 1],
// CHECK-NEXT: "entry": "layer0_k0_conv_k",
// CHECK-NEXT: "file": "layer0_k0_conv_k.ptx",
// CHECK-NEXT: "format": "ptx",
// CHECK-NEXT: "grid": ["T", 8, 1],
// CHECK-NEXT: "host": "layer0",
// CHECK: "layout": "#sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>",
// CHECK-NEXT: "name": "layer0_k0_conv_k",
// CHECK-NEXT: "op": "sconv.conv",
// CHECK-NEXT: "params": ["ptr", "ptr", "i64", "i64", "i64", "ptr", "ptr",
// CHECK: "ptx_global_b16_accesses": 0,
// CHECK-NEXT: "ptx_global_v4_loads": {{[0-9]+}},
// CHECK-NEXT: "ptx_global_v4_stores": 1,
// CHECK-NEXT: "streams": ["k"],
// CHECK-NEXT: "tokens_arg": 4
// CHECK: "name": "layer0_k1_insert_k",
// CHECK-NEXT: "op": "sconv.insert",
// CHECK: "ptx_global_b16_accesses": 0,
// CHECK-NEXT: "ptx_global_v4_loads": 1,
// CHECK-NEXT: "ptx_global_v4_stores": 1,
// CHECK: "block": [16, 1, 1],
// CHECK: "grid": ["T", 4, 1],
// CHECK: "layout": "#sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>",
// CHECK-NEXT: "name": "layer_tp2_k0_insert_k",
// CHECK: "target": {
// CHECK-NEXT: "chip": "sm_90",
// CHECK-NEXT: "features": "+ptx80",
// CHECK-NEXT: "format": "ptx",
// CHECK-NEXT: "opt_level": 3
// CHECK: "version": 1

// Each argument's base alignment, as the kernel's accesses assume it (and
// the launcher checks): 16 bytes for what the rows are read and written
// through with 16-byte vector accesses (the cache, weights, x, y), the
// element size for the metadata.
// ALIGN: "kernels": [
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "i8",
// ALIGN: "align": 4,
// ALIGN-NEXT: "element": "i32",
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "bf16",
// ALIGN: "type": "memref<1024x4xbf16>"
// ALIGN: "align": 4,
// ALIGN-NEXT: "element": "i32",
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "bf16",
// ALIGN: "align": 4,
// ALIGN-NEXT: "element": "i32",
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "bf16",
// ALIGN: "name": "layer0_k0_conv_k",
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "i8",
// ALIGN: "align": 8,
// ALIGN-NEXT: "element": "i64",
// ALIGN: "align": 16,
// ALIGN-NEXT: "element": "bf16",
// ALIGN: "name": "layer0_k1_insert_k",
