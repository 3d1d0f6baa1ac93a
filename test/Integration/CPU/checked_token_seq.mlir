// RUN: inkling-opt %s --inkling-lower-to-cpu="checked=true" | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// The checked lowering with token_seq: an entry that is not below B, or
// whose sequence does not hold the token, is reported (kind 5: token, entry,
// B) and the token's output is its input, as for padding; padding tokens
// are never checked. Layout: H = 1, k = [0, 3), kernel 2.
// Token 0 (sequence 0, position 0): entry 0, fine: y = x + x (tap -1 is 0).
// Token 1 (sequence 0, position 1): entry 5 >= B = 2: reported first.
// Token 2 (sequence 1, position 0): entry 0, but qsl[0..1) = [0, 2) does not
// hold token 2: reported (counted).
// Token 3: padding (qsl[B] = 3); its entry 9 is not read.

#l = #sconv.layout<kv_heads = 1, head_dim = 3, hidden = 4, kernel = 2, tp = 1>
!cache = memref<3x1x2x16xbf16, strided<[32, 32, 16, 1]>>

memref.global "private" constant @x : memref<4x1x3xbf16> = dense<[[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]], [[-1.0, -2.0, -3.0]]]>
memref.global "private" constant @w : memref<3x2xbf16> = dense<[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]>
memref.global "private" constant @qsl : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @nc : memref<2xi32> = dense<[0, 0]>
memref.global "private" constant @bt : memref<2x2xi32> = dense<[[1, 0], [2, 0]]>
memref.global "private" constant @slots : memref<4xi64> = dense<[-1, -1, -1, -1]>
memref.global "private" constant @seq : memref<4xi32> = dense<[0, 5, 0, 9]>

func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}
func.func private @printMemrefBF16(memref<*xbf16>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0 : i64
  %buffer = memref.alloc() {alignment = 16 : i64} : memref<192xi8>
  %status = memref.alloc() : memref<5xi64>
  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %zero, %status[%i] : memref<5xi64>
  }
  %cache = sconv.bind %buffer layout #l page_bytes 64 : memref<192xi8> -> !cache
  %qsl = memref.get_global @qsl : memref<3xi32>
  %nc = memref.get_global @nc : memref<2xi32>
  %bt = memref.get_global @bt : memref<2x2xi32>
  %slots = memref.get_global @slots : memref<4xi64>
  %seq = memref.get_global @seq : memref<4xi32>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %slots token_seq(%seq : memref<4xi32>) status %status
      : memref<3xi32>, memref<2xi32>, memref<2x2xi32>, memref<4xi64>, memref<5xi64>
  %x = memref.get_global @x : memref<4x1x3xbf16>
  %w = memref.get_global @w : memref<3x2xbf16>
  %y = memref.alloc() : memref<4x1x3xbf16>
  sconv.conv %x, %w history %cache[k] layout #l step %step into %y
      : memref<4x1x3xbf16>, memref<3x2xbf16>, !cache -> memref<4x1x3xbf16>
  %us = memref.cast %status : memref<5xi64> to memref<*xi64>
  vector.print str "== conv status\n"
  call @printMemrefI64(%us) : (memref<*xi64>) -> ()
  %uy = memref.cast %y : memref<4x1x3xbf16> to memref<*xbf16>
  call @printMemrefBF16(%uy) : (memref<*xbf16>) -> ()
  memref.dealloc %buffer : memref<192xi8>
  memref.dealloc %status : memref<5xi64>
  memref.dealloc %y : memref<4x1x3xbf16>
  return
}

// Two rejected entries; the first: kind 5, token 1, entry 5, B = 2.
// CHECK-LABEL: == conv status
// CHECK: [2,  5,  1,  5,  2]
// CHECK: [2, 4, 6]
// CHECK-NEXT: [4, 5, 6]
// CHECK-NEXT: [7, 8, 9]
// CHECK-NEXT: [-1, -2, -3]
