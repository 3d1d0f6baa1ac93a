// Every bad input gives one line "inkling-run: ..." and a non-zero exit.
//
// RUN: rm -rf %t && split-file %s %t
//
// A missing file.
// RUN: not inkling-run %t/missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: inkling-run: {{.*}}missing.mlir: cannot read the file: No such file or directory
// MISSING-NOT: {{.}}
//
// Malformed IR: the parser's first error, with its location.
// RUN: not inkling-run %t/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: inkling-run: {{.*}}malformed.mlir:2:3: error: custom op 'sconv.frobnicate' is unknown
// MALFORMED-NOT: {{.}}
//
// A layout the dialect accepts but the runtime rejects (kernel 1: no state).
// RUN: not inkling-run %t/kernel1.mlir 2>&1 | FileCheck %s --check-prefix=KERNEL
// KERNEL: inkling-run: {{.*}}kernel1.mlir: the runtime rejects the layout of @layer: invalid argument: kernel (1) must be in [2, 4096]{{.*}}
// KERNEL-NOT: {{.}}
//
// A budget too small for one sequence.
// RUN: not inkling-run %inkling_src/examples/decoder_layer.mlir --budget-mb=1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BUDGET
// BUDGET: inkling-run: --budget-mb=1: too small for one sequence: 4 blocks of 131072 bytes x 2 layers fit, a sequence needs 5 (the blocks of W-1 = 3 and W-1 + lookahead 3 positions at block size 4) plus the null block, at least 1.5 MiB
// BUDGET-NOT: {{.}}
//
// A bind that holds two layers' pages in a block, served as three layers.
// RUN: sed -e 's/page_bytes 512/page_bytes 1024 layers 2/' \
// RUN:   -e 's/strided<\[256, 128/strided<[512, 128/g' \
// RUN:   %inkling_src/examples/small_layer.mlir > %t/cross2.mlir
// RUN: not inkling-run %t/cross2.mlir --layers=3 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CROSS
// CROSS: inkling-run: {{.*}}cross2.mlir: the sconv.bind of @small_layer holds the pages of 2 layers in a block, but 3 layers are served
// CROSS-NOT: {{.}}
//
// An argument the runner cannot give a role.
// RUN: not inkling-run %t/unused.mlir 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: inkling-run: {{.*}}unused.mlir:{{[0-9]+}}:{{[0-9]+}}: error: argument 5 of @layer is not used by an sconv op
// UNUSED-NOT: {{.}}
//
// One buffer in two roles.
// RUN: not inkling-run %t/aliased.mlir 2>&1 | FileCheck %s --check-prefix=ALIASED
// ALIASED: inkling-run: {{.*}}aliased.mlir:{{[0-9]+}}:{{[0-9]+}}: error: argument 5 of @layer is both the k input and the v input; a layer call takes one buffer per role
//
// A conv whose stream is never inserted.
// RUN: not inkling-run %t/noinsert.mlir 2>&1 | FileCheck %s --check-prefix=NOINSERT
// NOINSERT: inkling-run: {{.*}}noinsert.mlir:{{[0-9]+}}:{{[0-9]+}}: error: @layer convolves stream k but never inserts it: its history would never be written
//
// Two functions and no --entry; an --entry that does not exist.
// RUN: not inkling-run %t/two.mlir 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: inkling-run: {{.*}}two.mlir: 2 functions with a body (@a, @b, ...): choose one with --entry
// RUN: not inkling-run %t/two.mlir --entry=c 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: inkling-run: {{.*}}two.mlir: no function @c with a body
//
// Options out of range.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --fusion=fast 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FUSION
// FUSION: inkling-run: --fusion=fast: unknown strategy (conv-insert, packed-inserts, none)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --min-prompt=9 --max-prompt=8 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PROMPT
// PROMPT: inkling-run: --max-prompt=8: expected an integer in [9, 1048576]
// Issue 13: each option is range-checked before any arithmetic; the error
// names the option and the value as given.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --layers=-5 2>&1 \
// RUN:   | FileCheck %s --check-prefix=LAYERS
// LAYERS: inkling-run: --layers=-5: expected an integer in [0, 1024] (0: the module's inkling.num_layers, else 2)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --layers=36028797018963968 2>&1 \
// RUN:   | FileCheck %s --check-prefix=LAYERS55
// LAYERS55: inkling-run: --layers=36028797018963968: expected an integer in [0, 1024]
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --arrival-rate=inf 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RATE
// RATE: inkling-run: --arrival-rate=inf: expected a number in [0, 1024]
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --budget-mb=inf 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BUDGETINF
// BUDGETINF: inkling-run: --budget-mb=inf: expected a number in (0, 1048576]
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --budget-mb=1048576 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BUDGETRAM
// BUDGETRAM: inkling-run: --budget-mb=1.04858e+06: more than this machine's memory ({{[0-9]+}} MiB)
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --max-batch=1000000000000 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BATCH
// BATCH: inkling-run: --max-batch=1000000000000: expected an integer in [1, 4096]
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --token-budget=4000000000 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOKENS
// TOKENS: inkling-run: --token-budget=4000000000: expected an integer in [1, 1048576]
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --shared-prefixes=1000000000 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PREFIXES
// PREFIXES: inkling-run: --shared-prefixes=1000000000: expected an integer in [0, 4096]
// RUN: not inkling-run /dev/zero 2>&1 | FileCheck %s --check-prefix=DEVZERO
// DEVZERO: inkling-run: /dev/zero: cannot read the file: not a regular file
// RUN: not inkling-run %t 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// DIRECTORY: inkling-run: {{.*}}: cannot read the file: not a regular file
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --device=tpu 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEVICE
// DEVICE: inkling-run: --device=tpu: expected cpu or gpu

//--- malformed.mlir
func.func @layer(%buffer: memref<?xi8>) {
  sconv.frobnicate %buffer : memref<?xi8>
  return
}

//--- kernel1.mlir
#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 1, tp = 1>
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #layout page_bytes 128
      : memref<?xi8> -> memref<?x2x1x32xbf16, strided<[64, 32, 32, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x2x8xbf16>, memref<?x2x1x32xbf16, strided<[64, 32, 32, 1]>>
  return
}

//--- unused.mlir
#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>, %extra: memref<?x2x8xbf16>,
                 %k: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x2x8xbf16>, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  return
}

//--- aliased.mlir
#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x2x8xbf16>, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  sconv.insert %k into %cache[v] layout #layout step %step
      : memref<?x2x8xbf16>, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  return
}

//--- noinsert.mlir
#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>, %k: memref<?x2x8xbf16>,
                 %wk: memref<16x4xbf16>, %yk: memref<?x2x8xbf16>) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
      : memref<?x2x8xbf16>, memref<16x4xbf16>, memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>> -> memref<?x2x8xbf16>
  return
}

//--- two.mlir
func.func @a() {
  return
}
func.func @b() {
  return
}
