// inkling-gpu-write-kernels with a scratch buffer: the host lists it once
// (`scratch`, in index order) and its launches bind it as host argument
// -1 - index; the launcher allocates it (runtime/lib/Cuda.cpp).
// RUN: rm -rf %t && inkling-opt %s --inkling-lower-to-nvvm \
// RUN:   --inkling-gpu-write-kernels=dir=%t -o /dev/null
// RUN: FileCheck %s < %t/manifest.json

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!head = memref<?x2x8xbf16>
!kv = memref<?x8x2x8xbf16, strided<[128, 16, 8, 1]>>

// CHECK-LABEL: "hosts": [
// CHECK:      "launches": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "host_args": [0, 1, -1],
// CHECK-NEXT:     "kernel": "norm_then_write_k0_rms_norm_k"
// CHECK-NEXT:   },
// CHECK-NEXT:   {
// CHECK-NEXT:     "host_args": [3, 2, -1],
// CHECK-NEXT:     "kernel": "norm_then_write_k1_kv_write_k"
// CHECK-NEXT:   }
// CHECK-NEXT: ],
// CHECK-NEXT: "name": "norm_then_write",
// CHECK-NEXT: "scratch": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "element": "bf16",
// CHECK-NEXT:     "element_bytes": 2,
// CHECK-NEXT:     "shape": [-1, 2, 8],
// CHECK-NEXT:     "size_dim": 0,
// CHECK-NEXT:     "size_host_arg": 0,
// CHECK-NEXT:     "type": "memref<?x2x8xbf16>"
// CHECK-NEXT:   }
// CHECK-NEXT: ]
func.func @norm_then_write(%y: !head, %w: memref<8xbf16>, %kv: !kv,
                           %slots: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %t = memref.dim %y, %c0 : !head
  %kn = memref.alloc(%t) : !head
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %kn
      : !head, memref<8xbf16> -> !head
  sconv.kv_write %kn into %kv slots %slots layout #l stream k
      : !head, !kv, memref<?xi64>
  memref.dealloc %kn : !head
  return
}
