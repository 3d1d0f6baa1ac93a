//===- ColdCaches.h - Caches emptied between timed calls --------*- C++ -*-===//
//
// In serving, a layer's conv-state rows and weights are not in the caches
// when its decode step starts: since the same layer's last step, every other
// layer of the model (its attention, MLP and weights: gigabytes) has run.
// A benchmark that repeats one step finds them in L2 or L3. These helpers
// time a call after every cache level has been filled with other data, so
// that the layer and its memcpy bound both start from memory.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_BENCH_COLDCACHES_H
#define INKLING_BENCH_COLDCACHES_H

#include <cstddef>

namespace inkling::bench {

/// The bytes evictCaches reads: twice the largest cache level of cpu0
/// (sysfs), and at least 64 MiB.
size_t evictionBytes();

/// Reads every word of a buffer of evictionBytes(), so that no line of
/// what ran before is left in any cache level (inclusive or victim); the
/// dirty ones are written back here, not in the call timed next.
void evictCaches();

} // namespace inkling::bench

#endif // INKLING_BENCH_COLDCACHES_H
