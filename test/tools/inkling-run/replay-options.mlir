// inkling-run --replay's options: a name given twice in --inputs is an
// error (the last file used to win), and --outputs creates its directory
// only, never a missing parent tree.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/npy_replay.py gen %t
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy,x=%t/x_pad.npy \
// RUN:   --outputs=%t/twice 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: inkling-run: --inputs: 'x' is given twice
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --replay=1 \
// RUN:   --inputs=cache=%t/cache.npy,query_start_loc=%t/qsl.npy,num_computed=%t/nc.npy \
// RUN:   --inputs=block_table=%t/bt.npy,slot_mapping=%t/slots.npy,x=%t/x.npy \
// RUN:   --outputs=%t/missing/parent 2>&1 | FileCheck %s --check-prefix=PARENT
// PARENT: inkling-run: --outputs={{.*}}missing{{/|\\}}parent: No such file or directory
// RUN: not test -e %t/missing
