// The checker finds a corrupted output, a corrupted cache row and a corrupted
// input (x overwritten before the kernel: the output check regenerates x from
// the token chain, so it is not fooled by the kernel having read the bad
// value), stops at the first mismatch with one line that names it, and exits
// non-zero.
//
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --steps=50 \
// RUN:   --inject-fault=output:10 --json 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: inkling-run: mismatch in step 10, layer 0: output of stream k, sequence {{[0-9]+}} (runtime id {{[0-9]+}}), position {{[0-9]+}}, head {{[0-9]+}}, channel {{[0-9]+}}: expected 0x{{[0-9a-f]+}} ({{.*}}), found 0x{{[0-9a-f]+}} ({{.*}})
// OUT: "mismatches": 1,
//
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --steps=50 \
// RUN:   --inject-fault=cache:10 2>&1 | FileCheck %s --check-prefix=CACHE
// CACHE: inkling-run: mismatch after step 10, layer 0: cache of stream k, sequence {{[0-9]+}} (runtime id {{[0-9]+}}), position {{[0-9]+}} (block {{[0-9]+}}, row {{[0-9]+}}), head 0, channel 2: expected
// CACHE: mismatches 1
//
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --steps=50 \
// RUN:   --inject-fault=input:10 --json 2>&1 | FileCheck %s --check-prefix=IN
// IN: inkling-run: mismatch in step 10, layer 0: output of stream {{[a-z]+}}, sequence {{[0-9]+}} (runtime id {{[0-9]+}}), position {{[0-9]+}}, head 0, channel 0: expected
// IN: "mismatches": 1,
