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
// SLOT: inkling-run: sconv.insert (op 1): the checked kernel rejected 1 accesses (first: slot 396 of token 1, limit 32); no output written
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=9 \
// RUN:   --outputs=%t/bad 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: inkling-run: --replay=9: @small_layer has 8 sconv ops (0..7)
// RUN: not ls %t/bad
