// RUN: inkling-opt %s --inkling-lower-to-cpu="checked=true" | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// The checked lowering with a status buffer: out-of-range slots and block
// ids are skipped (a bad history tap reads 0) and reported; the program
// goes on. Layout: H = 1, D = 16, N = 2, k = [0, 3); 3 blocks.
// Token 0 (sequence 0, decode at position 2): slot 9 is beyond the 3 * 2
// slots; its history tap (position 1) goes through block 7: out of range.
// Token 1 (sequence 1, prefill at 0): slot -5 is below -1.
// Token 2 (sequence 1, position 1): slot 3 (block 1, row 1: its own slot
// block_table[1][0] * N + 1), stored.

#l = #sconv.layout<kv_heads = 1, head_dim = 3, hidden = 4, kernel = 2, tp = 1>
!cache = memref<3x1x2x16xbf16, strided<[32, 32, 16, 1]>>

memref.global "private" constant @x : memref<3x1x3xbf16> = dense<[[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]]>
memref.global "private" constant @w : memref<3x2xbf16> = dense<[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]>
memref.global "private" constant @qsl : memref<3xi32> = dense<[0, 1, 3]>
memref.global "private" constant @nc : memref<2xi32> = dense<[2, 0]>
memref.global "private" constant @bt : memref<2x2xi32> = dense<[[7, 7], [1, 0]]>
memref.global "private" constant @slots : memref<3xi64> = dense<[9, -5, 3]>

func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}
func.func private @printMemrefBF16(memref<*xbf16>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i64
  %buffer = memref.alloc() {alignment = 16 : i64} : memref<192xi8>
  %raw = memref.view %buffer[%c0][] : memref<192xi8> to memref<3x32xbf16>
  %poison = arith.constant 99.0 : bf16
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      memref.store %poison, %raw[%i, %j] : memref<3x32xbf16>
    }
  }
  %status = memref.alloc() : memref<5xi64>
  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %zero, %status[%i] : memref<5xi64>
  }
  %cache = sconv.bind %buffer layout #l page_bytes 64 : memref<192xi8> -> !cache
  %qsl = memref.get_global @qsl : memref<3xi32>
  %nc = memref.get_global @nc : memref<2xi32>
  %bt = memref.get_global @bt : memref<2x2xi32>
  %slots = memref.get_global @slots : memref<3xi64>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %slots status %status
      : memref<3xi32>, memref<2xi32>, memref<2x2xi32>, memref<3xi64>, memref<5xi64>
  %x = memref.get_global @x : memref<3x1x3xbf16>
  %w = memref.get_global @w : memref<3x2xbf16>
  %y = memref.alloc() : memref<3x1x3xbf16>

  sconv.conv %x, %w history %cache[k] layout #l step %step into %y
      : memref<3x1x3xbf16>, memref<3x2xbf16>, !cache -> memref<3x1x3xbf16>
  %us = memref.cast %status : memref<5xi64> to memref<*xi64>
  vector.print str "== conv status\n"
  call @printMemrefI64(%us) : (memref<*xi64>) -> ()
  %uy = memref.cast %y : memref<3x1x3xbf16> to memref<*xbf16>
  call @printMemrefBF16(%uy) : (memref<*xbf16>) -> ()

  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %zero, %status[%i] : memref<5xi64>
  }
  sconv.insert %x into %cache[k] layout #l step %step : memref<3x1x3xbf16>, !cache
  vector.print str "== insert status\n"
  call @printMemrefI64(%us) : (memref<*xi64>) -> ()
  %uc = memref.cast %raw : memref<3x32xbf16> to memref<*xbf16>
  call @printMemrefBF16(%uc) : (memref<*xbf16>) -> ()
  memref.dealloc %buffer : memref<192xi8>
  memref.dealloc %status : memref<5xi64>
  memref.dealloc %y : memref<3x1x3xbf16>
  return
}

// One rejected tap: kind 2 (block id), token 0, block 7, limit 3 blocks. Its
// tap reads 0: y[0] = 0 + x[0] (weight 1) + x[0] (residual).
// CHECK-LABEL: == conv status
// CHECK: [1,  2,  0,  7,  3]
// CHECK: [2, 4, 6]
// CHECK-NEXT: [8, 10, 12]
// CHECK-NEXT: [18, 21, 24]
// Two rejected slots: the first is token 0's slot 9 against the limit of
// 6 slots. Only token 2 was stored (block 1, row 1); 99 elsewhere.
// CHECK-LABEL: == insert status
// CHECK: [2,  1,  0,  9,  6]
// CHECK: [99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99]
// CHECK-NEXT: [99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 7, 8, 9, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99]
// CHECK-NEXT: [99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99]
