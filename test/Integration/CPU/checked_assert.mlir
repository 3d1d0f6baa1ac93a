// RUN: inkling-opt %s --inkling-lower-to-cpu="checked=true" | not --crash stdbuf -oL mlir-runner -e main \
// RUN:   -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils 2>&1 | FileCheck %s

// Without a status buffer, the checked lowering stops the program with a
// message (cf.assert, which prints with puts: stdbuf keeps the line when
// stdout is a pipe) before an out-of-range slot is written. Slot 4 is
// beyond the 2 blocks * N = 2 slots of the cache.

#l = #sconv.layout<kv_heads = 1, head_dim = 3, hidden = 4, kernel = 2, tp = 1>
!cache = memref<2x1x2x16xbf16, strided<[32, 32, 16, 1]>>

memref.global "private" constant @x : memref<1x1x3xbf16> = dense<[[[1.0, 2.0, 3.0]]]>
memref.global "private" constant @qsl : memref<2xi32> = dense<[0, 1]>
memref.global "private" constant @nc : memref<1xi32> = dense<[0]>
memref.global "private" constant @bt : memref<1x1xi32> = dense<[[1]]>
memref.global "private" constant @slots : memref<1xi64> = dense<[4]>

func.func @main() {
  %cache_bytes = memref.alloc() {alignment = 16 : i64} : memref<128xi8>
  %cache = sconv.bind %cache_bytes layout #l page_bytes 64 : memref<128xi8> -> !cache
  %qsl = memref.get_global @qsl : memref<2xi32>
  %nc = memref.get_global @nc : memref<1xi32>
  %bt = memref.get_global @bt : memref<1x1xi32>
  %slots = memref.get_global @slots : memref<1xi64>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %slots
      : memref<2xi32>, memref<1xi32>, memref<1x1xi32>, memref<1xi64>
  %x = memref.get_global @x : memref<1x1x3xbf16>
  vector.print str "before\n"
  sconv.insert %x into %cache[k] layout #l step %step : memref<1x1x3xbf16>, !cache
  vector.print str "after\n"
  return
}

// CHECK: before
// CHECK: sconv.insert (checked): a slot_mapping entry is below -1 or addresses a block at or beyond the cache's num_blocks
// CHECK-NOT: after
