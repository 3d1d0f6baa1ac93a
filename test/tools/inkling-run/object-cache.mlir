// inkling-run --cache-dir: the JIT's object cache. The first compile of a
// layer stores its object; the next one loads it (no LLVM optimization or
// code generation) and still serves bit-exact results. Another fusion is
// another key; a damaged entry is a miss that says why and is rewritten;
// a directory that cannot be written only costs the store.
// RUN: rm -rf %t.cache %t.file && touch %t.file
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.cache | FileCheck %s --check-prefix=MISS
// RUN: ls %t.cache/*.o | count 1
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.cache | FileCheck %s --check-prefix=HIT
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.cache --fusion=none \
// RUN:   | FileCheck %s --check-prefix=MISS
// RUN: ls %t.cache/*.o | count 2
//
// Both entries cut short: read as misses, compiled again and rewritten.
// RUN: truncate -s 40 %t.cache/*.o
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.cache | FileCheck %s --check-prefix=DAMAGED
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.cache | FileCheck %s --check-prefix=HIT
//
// The environment's directory, and an empty --cache-dir that turns it off.
// RUN: env INKLING_CACHE_DIR=%t.cache inkling-run \
// RUN:   %inkling_src/examples/small_layer.mlir --threads=1 --steps=30 \
// RUN:   --no-progress --json | FileCheck %s --check-prefix=ENV
// RUN: env INKLING_CACHE_DIR=%t.cache inkling-run \
// RUN:   %inkling_src/examples/small_layer.mlir --threads=1 --steps=30 \
// RUN:   --no-progress --json --cache-dir= | FileCheck %s --check-prefix=OFF
//
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --threads=1 \
// RUN:   --steps=30 --no-progress --cache-dir=%t.file/cache \
// RUN:   | FileCheck %s --check-prefix=UNWRITABLE

// MISS: mismatches 0 (
// MISS: time compile {{[0-9.]+}} s (object cache miss),
// MISS-NOT: object cache {{/}}

// HIT: mismatches 0 (
// HIT: time compile {{[0-9.]+}} s (object cache hit),
// HIT-NOT: object cache {{/}}

// DAMAGED: mismatches 0 (
// DAMAGED: time compile {{[0-9.]+}} s (object cache miss),
// DAMAGED-NEXT: object cache {{.*}}.o: checksum mismatch (a truncated or damaged entry); compiled again

// ENV-DAG: "object_cache": "hit",
// ENV-DAG: "mismatches": 0,
// OFF-DAG: "object_cache": "off",
// OFF-DAG: "mismatches": 0,

// UNWRITABLE: mismatches 0 (
// UNWRITABLE: time compile {{[0-9.]+}} s (object cache miss),
// UNWRITABLE-NEXT: object cache {{.*}}file/cache: Not a directory; not stored
