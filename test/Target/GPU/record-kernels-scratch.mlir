// inkling-gpu-record-kernels with a buffer the host allocates: the unfused
// k_norm's output, which the KV write reads. It becomes scratch buffer 0 of
// the host (host argument -1: -1 - its index), [T, 2, 8] with T the size of
// dim 0 of host argument 0, which the launcher allocates on the device. The
// KV write's grid is T of that buffer (its dim 0 folded to the alloc's size).
// RUN: inkling-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module( \
// RUN:   inkling-gpu-tag-ops, sconv-lower-to-loops, \
// RUN:   func.func(gpu-map-parallel-loops), convert-parallel-loops-to-gpu, \
// RUN:   canonicalize, lower-affine, inkling-gpu-sink, gpu-kernel-outlining, \
// RUN:   inkling-gpu-record-kernels)' | FileCheck %s

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!head = memref<?x2x8xbf16>
!kv = memref<?x8x2x8xbf16, strided<[128, 16, 8, 1]>>

// CHECK-LABEL: module attributes {gpu.container_module, inkling.kernels = [
// CHECK-SAME: host = "norm_then_write", host_args = [0, 1, -1]
// CHECK-SAME: name = "norm_then_write_k0_rms_norm_k", op = "sconv.rms_norm"
// CHECK-SAME: scratch = [{element = "bf16", element_bytes = 2 : i64, index = 0 : i64, shape = [-1, 2, 8], size_dim = 0 : i64, size_host_arg = 0 : i64, type = "memref<?x2x8xbf16>"}]
// CHECK-SAME: grid = ["T", 2, 1], host = "norm_then_write", host_args = [3, 2, -1]
// CHECK-SAME: name = "norm_then_write_k1_kv_write_k", op = "sconv.kv_write"
// CHECK-SAME: scratch = [{element = "bf16", element_bytes = 2 : i64, index = 0 : i64, shape = [-1, 2, 8], size_dim = 0 : i64, size_host_arg = 0 : i64, type = "memref<?x2x8xbf16>"}]
// CHECK-SAME: tokens_arg = 2
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

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!head = memref<?x2x8xbf16>

// The host's own code never runs (the launcher runs the launches), so it
// must not touch a scratch buffer.
func.func @host_reads_scratch(%y: !head, %w: memref<8xbf16>, %out: !head) {
  %c0 = arith.constant 0 : index
  %t = memref.dim %y, %c0 : !head
  %kn = memref.alloc(%t) : !head
  // expected-error @+1 {{passes a scratch buffer ('memref<?x2x8xbf16>') that the host function also uses in 'memref.copy'}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %kn
      : !head, memref<8xbf16> -> !head
  memref.copy %kn, %out : !head to !head
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!head = memref<?x2x8xbf16>

// Dim 0 must be a host argument's size, which the launcher knows.
func.func @size_from_memory(%y: !head, %w: memref<8xbf16>, %n: memref<1xindex>,
                            %out: !head) {
  %c0 = arith.constant 0 : index
  %t = memref.load %n[%c0] : memref<1xindex>
  %kn = memref.alloc(%t) : !head
  // expected-error @+1 {{passes a scratch buffer ('memref<?x2x8xbf16>') whose dim 0 is not the size of a dim of a host argument}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %kn
      : !head, memref<8xbf16> -> !head
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!head = memref<?x2x8xbf16>

// cuMemAlloc aligns to 256 bytes; a buffer that asks for more is refused.
func.func @overaligned(%y: !head, %w: memref<8xbf16>) {
  %c0 = arith.constant 0 : index
  %t = memref.dim %y, %c0 : !head
  %kn = memref.alloc(%t) {alignment = 4096} : !head
  // expected-error @+1 {{passes a scratch buffer aligned to 4096 bytes; the device allocates at 256}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %kn
      : !head, memref<8xbf16> -> !head
  return
}
