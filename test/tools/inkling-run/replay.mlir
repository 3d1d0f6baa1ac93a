// Replay: one sconv op of a model on .npy tensors (bf16 as uint16), the
// outputs written as .npy and compared with values computed independently
// (small integers: exact arithmetic) by npy_replay.py.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/npy_replay.py gen %t
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/conv | FileCheck %s --check-prefix=CONV
// CONV: inkling-run: wrote {{.*}}conv{{/|\\}}out.npy (bf16 as uint16, shape (5, 2, 8))
// RUN: %python %S/npy_replay.py cmp %t/conv/out.npy %t/expected_out.npy
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy \
// RUN:   --outputs=%t/insert | FileCheck %s --check-prefix=INSERT
// INSERT: inkling-run: wrote {{.*}}insert{{/|\\}}cache.npy (bf16 as uint16, shape (8, 2, 4, 32))
// RUN: %python %S/npy_replay.py cmp %t/insert/cache.npy %t/expected_cache.npy
//
// Padding: x with 3 rows past qsl[B] (their slots address a live history
// row): the conv's outputs for them are their inputs, the insert stores
// nothing for them (the same cache as without them).
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots_pad.npy,x=%t/x_pad.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/pconv | FileCheck %s --check-prefix=PCONV
// PCONV: inkling-run: wrote {{.*}}pconv{{/|\\}}out.npy (bf16 as uint16, shape (8, 2, 8))
// RUN: %python %S/npy_replay.py cmp %t/pconv/out.npy %t/expected_pad_out.npy
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots_pad.npy,x=%t/x_pad.npy \
// RUN:   --outputs=%t/pinsert
// RUN: %python %S/npy_replay.py cmp %t/pinsert/cache.npy %t/expected_cache.npy
// The same ops on caches of block size N = 1 and N = 3 (W = 4: the history
// of position 5 spans three blocks at N = 1), the layer compiled with
// --block-size.
// RUN: %python %S/npy_replay.py gen %t/n1 1
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --block-size=1 --replay=0 \
// RUN:   --inputs=cache=%t/n1/cache.npy,query_start_loc=%t/n1/qsl.npy,num_computed=%t/n1/nc.npy \
// RUN:   --inputs=block_table=%t/n1/bt.npy,slot_mapping=%t/n1/slots.npy,x=%t/n1/x.npy,weights=%t/n1/w.npy \
// RUN:   --outputs=%t/n1/conv
// RUN: %python %S/npy_replay.py cmp %t/n1/conv/out.npy %t/n1/expected_out.npy
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --block-size=1 --replay=1 \
// RUN:   --inputs=cache=%t/n1/cache.npy,query_start_loc=%t/n1/qsl.npy,num_computed=%t/n1/nc.npy \
// RUN:   --inputs=block_table=%t/n1/bt.npy,slot_mapping=%t/n1/slots.npy,x=%t/n1/x.npy \
// RUN:   --outputs=%t/n1/insert | FileCheck %s --check-prefix=INSERT1
// INSERT1: inkling-run: wrote {{.*}}insert{{/|\\}}cache.npy (bf16 as uint16, shape (18, 2, 1, 32))
// RUN: %python %S/npy_replay.py cmp %t/n1/insert/cache.npy %t/n1/expected_cache.npy
// RUN: %python %S/npy_replay.py gen %t/n3 3
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --block-size=3 --replay=0 \
// RUN:   --inputs=cache=%t/n3/cache.npy,query_start_loc=%t/n3/qsl.npy,num_computed=%t/n3/nc.npy \
// RUN:   --inputs=block_table=%t/n3/bt.npy,slot_mapping=%t/n3/slots.npy,x=%t/n3/x.npy,weights=%t/n3/w.npy \
// RUN:   --outputs=%t/n3/conv
// RUN: %python %S/npy_replay.py cmp %t/n3/conv/out.npy %t/n3/expected_out.npy
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --block-size=3 --replay=1 \
// RUN:   --inputs=cache=%t/n3/cache.npy,query_start_loc=%t/n3/qsl.npy,num_computed=%t/n3/nc.npy \
// RUN:   --inputs=block_table=%t/n3/bt.npy,slot_mapping=%t/n3/slots.npy,x=%t/n3/x.npy \
// RUN:   --outputs=%t/n3/insert
// RUN: %python %S/npy_replay.py cmp %t/n3/insert/cache.npy %t/n3/expected_cache.npy
// A cache of another block size than the layer's is refused.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/n3/cache.npy,query_start_loc=%t/n3/qsl.npy,num_computed=%t/n3/nc.npy \
// RUN:   --inputs=block_table=%t/n3/bt.npy,slot_mapping=%t/n3/slots.npy,x=%t/n3/x.npy \
// RUN:   --outputs=%t/n3/bad 2>&1 | FileCheck %s --check-prefix=GEOMETRY
// GEOMETRY: inkling-run: cache: shape (8, 2, 3, 32), expected (num_blocks, 2, 4, 32): the layer's block size N is 4 (--block-size sets it)
//
// Bad inputs: one line each, non-zero exit, nothing written.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/not_npy.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=MAGIC
// MAGIC: inkling-run: {{.*}}not_npy.npy: malformed .npy file: no \x93NUMPY magic at the start
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/truncated.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=TRUNC
// TRUNC: inkling-run: {{.*}}truncated.npy: malformed .npy file: shape (80 elements of 2 bytes) needs 160 data bytes, the file has 154
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: inkling-run: --inputs: missing 'weights' (sconv.conv op 0 reads it; inputs: block_table, cache, num_computed, query_start_loc, slot_mapping, weights, x)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=bias=%t/w.npy --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: inkling-run: --inputs: sconv.conv (op 0) has no input named 'bias' (inputs: block_table, cache, num_computed, query_start_loc, slot_mapping, weights, x)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/bad_slots.npy,x=%t/x.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=SLOT
// SLOT: inkling-run: argument 4 (slot_mapping)[1] = 396: not -1 or a slot of the cache (8 blocks of 4)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=9 \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: inkling-run: --replay=9: @small_layer has 8 sconv ops (0..7)
//
// Issue 13: every hostile input is one line naming the value, exit 1.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x_transposed.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=TRANSPOSED
// TRANSPOSED: inkling-run: x: shape (5, 8, 2) of dtype 'u2', expected uint16 (5, 2, 8) or (5, 16)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/a_directory.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// DIRECTORY: inkling-run: {{.*}}a_directory.npy: cannot read the file: not a regular file (a directory)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=/dev/zero,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=DEVZERO
// DEVZERO: inkling-run: /dev/zero: cannot read the file: not a regular file (a device, pipe or socket)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/dup_key.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=DUPKEY
// DUPKEY: inkling-run: {{.*}}dup_key.npy: malformed .npy file: the header key 'descr' appears twice
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt_u4.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=UNSIGNED32
// UNSIGNED32: inkling-run: block_table[0] is 4294967295: does not fit int32
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots_u8.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=UNSIGNED64
// UNSIGNED64: inkling-run: slot_mapping: entry 0 is 18446744073709551615, beyond int64
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots_repeated.npy,x=%t/x.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=REPEATED
// REPEATED: inkling-run: argument 4 (slot_mapping): slot 14 appears for tokens 1 and 2 (each token stores its own row)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots_not_own.npy,x=%t/x.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=NOTOWN
// NOTOWN: inkling-run: sconv.insert (op 1): the checked kernel rejected 1 accesses (first: slot 12 of token 1, not its own slot block_table[b][p / N] * N + p % N = 14); no output written
//
// Static sizes in the IR are checked against the tensors (they were
// ignored: a buffer overrun, or rows left uncomputed with exit 0).
// RUN: sed 's/memref<?x2x8xbf16>/memref<40x2x8xbf16>/g' %inkling_src/examples/small_layer.mlir > %t/static40.mlir
// RUN: sed 's/memref<?x2x8xbf16>/memref<3x2x8xbf16>/g' %inkling_src/examples/small_layer.mlir > %t/static3.mlir
// RUN: sed 's/memref<?x?xi32>/memref<?x3xi32>/g' %inkling_src/examples/small_layer.mlir > %t/bt2.mlir
// RUN: not inkling-run %t/static40.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=STATIC40
// STATIC40: inkling-run: argument 5 (input_k): shape [5, 2, 8], expected [40, 2, 8] (memref<40x2x8xbf16>)
// RUN: not inkling-run %t/static3.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=STATIC3
// STATIC3: inkling-run: argument 5 (input_k): shape [5, 2, 8], expected [3, 2, 8] (memref<3x2x8xbf16>)
// RUN: not inkling-run %t/bt2.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=BT2
// BT2: inkling-run: argument 3 (block_table): shape [2, 2], expected [?, 3] (memref<?x3xi32>)
// A static token stride that no buffer can have (T * stride would overflow
// int64 in serving).
// RUN: sed 's/memref<?x2x8xbf16>/memref<?x2x8xbf16, strided<[100000000000000000, 8, 1]>>/g' %inkling_src/examples/small_layer.mlir > %t/huge.mlir
// RUN: not inkling-run %t/huge.mlir --replay=0 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,weights=%t/w.npy \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: inkling-run: x: memref<?x2x8xbf16, strided<[100000000000000000, 8, 1]>> with offset 0 and token stride 100000000000000000 for 5 tokens of 16 elements: not a buffer a replay can allocate
// RUN: not inkling-run %t/huge.mlir --steps=1 2>&1 | FileCheck %s --check-prefix=HUGESERVE
// HUGESERVE: inkling-run: {{.*}}huge.mlir: argument 5 (memref<?x2x8xbf16, strided<[100000000000000000, 8, 1]>>): token stride 100000000000000000 and offset 0 for 256 tokens (--token-budget): not a buffer inkling-run can allocate
// RUN: sed 's/inkling.num_layers = 3/inkling.num_layers = 100000/' %inkling_src/examples/small_layer.mlir > %t/layers.mlir
// RUN: not inkling-run %t/layers.mlir --steps=1 2>&1 | FileCheck %s --check-prefix=NUMLAYERS
// NUMLAYERS: inkling-run: {{.*}}layers.mlir: inkling.num_layers = 100000: expected an integer in [1, 1024] (or pass --layers)
// RUN: not ls %t/bad
