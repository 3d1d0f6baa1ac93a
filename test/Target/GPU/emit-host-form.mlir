// inkling-gpu-emit-host-form: beside each kernel's PTX, its host form, the
// same post-NVVM LLVM IR with the special registers read through the
// emulator and every global access reported to it first, with the mask of
// the kernel arguments the address derives from (the insert kernel's
// arguments: 0 the cache buffer, 1 the slots, 2 query_start_loc, 3 x).
// RUN: rm -rf %t && inkling-opt %s --inkling-lower-to-nvvm=fusion=none \
// RUN:   --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: FileCheck %s < %t/layer_k0_insert_k.host.ll
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// Without it (host-form=0): no host form, no manifest key.
// RUN: rm -rf %t.none && inkling-opt %s \
// RUN:   --inkling-lower-to-nvvm="fusion=none host-form=0" \
// RUN:   --inkling-gpu-write-kernels=dir=%t.none -o /dev/null
// RUN: ls %t.none | FileCheck %s --check-prefix=NONE
// RUN: FileCheck %s --check-prefix=NONE < %t.none/manifest.json

// Version 1, 4 arguments, each (first parameter, rank, element bytes).
// CHECK: @__inkling_emu_args_layer_k0_insert_k = constant [14 x i64] [i64 1, i64 4, i64 0, i64 1, i64 1, i64 5, i64 1, i64 8, i64 10, i64 1, i64 4, i64 15, i64 3, i64 2]
// CHECK-LABEL: define void @layer_k0_insert_k(
// CHECK-NOT: nvvm
// ctaid.x (the token), ctaid.y (the head), tid.x (the chunk):
// CHECK: call i32 @__inkling_emu_sreg(i32 6)
// CHECK: call i32 @__inkling_emu_sreg(i32 7)
// CHECK: call i32 @__inkling_emu_sreg(i32 0)
// A thread's own alloca is not global memory: not reported.
// CHECK: %[[A:[0-9]+]] = alloca [1 x i64]
// CHECK-NEXT: store [1 x i64] %{{[0-9]+}}, ptr %[[A]]
// The token's slot (argument 1), then query_start_loc[B] (argument 2):
// CHECK: %[[S:[0-9]+]] = call ptr @__inkling_emu_access(ptr %{{[0-9]+}}, i64 8, i64 2, i32 0)
// CHECK-NEXT: load i64, ptr %[[S]]
// CHECK: %[[Q:[0-9]+]] = call ptr @__inkling_emu_access(ptr %{{[0-9]+}}, i64 4, i64 4, i32 0)
// CHECK-NEXT: load i32, ptr %[[Q]]
// The 16-byte load of x (argument 3) and store into the cache (argument 0):
// CHECK: %[[X:[0-9]+]] = call ptr @__inkling_emu_access(ptr %{{[0-9]+}}, i64 16, i64 8, i32 0)
// CHECK-NEXT: load <8 x bfloat>, ptr %[[X]], align 16
// CHECK: %[[C:[0-9]+]] = call ptr @__inkling_emu_access(ptr %{{[0-9]+}}, i64 16, i64 1, i32 1)
// CHECK-NEXT: store <8 x bfloat> %{{[0-9]+}}, ptr %[[C]], align 16
// CHECK-LABEL: define void @__inkling_emu_entry_layer_k0_insert_k(ptr %0)
// CHECK: call void @layer_k0_insert_k(
// CHECK-NOT: __inkling_emu_unsupported

// MANIFEST: "file": "layer_k0_insert_k.ptx",
// MANIFEST: "host_form": "layer_k0_insert_k.host.ll",

// NONE-NOT: host.ll
// NONE-NOT: host_form

#l8 = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!c8 = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
    %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x8x128xbf16>) {
  %cache = sconv.bind %buffer layout #l8 page_bytes 131072 : memref<?xi8> -> !c8
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #l8 step %step : memref<?x8x128xbf16>, !c8
  return
}
