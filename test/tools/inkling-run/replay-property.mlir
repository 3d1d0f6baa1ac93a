// The property test of the loop lowering, through inkling-run --replay:
// random layouts (kernel 1..8, odd widths, any tp, exact, padded and
// cross-layer block strides; the first is issue 13's, which died with
// SIGSEGV), the conv and the insert of a random stream replayed on a random
// mixed batch and compared bit for bit with replay_property.py's own
// computation. Bounded: 8 layouts, 16 replays, a fixed seed (run the
// script with --seed S --layouts N to explore).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/replay_property.py inkling-run %t --layouts 8 | FileCheck %s
// CHECK: ok layout 0 (kv_heads 4, head_dim 24, hidden 72, kernel 3
// CHECK: all 8 layouts match
