//===- ColdCaches.cpp - Caches emptied between timed calls ----------------===//

#include "ColdCaches.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

namespace inkling::bench {

namespace {
/// Where evictCaches leaves the sum of its loads.
volatile uint64_t evictionSink;

/// The size in bytes of cpu0's largest cache, from sysfs (what this core
/// can reach: 32 MiB in the 2-core VM, where sysconf's
/// _SC_LEVEL3_CACHE_SIZE reports the host's 320 MiB), or 0.
size_t largestCacheOfThisCore() {
  size_t largest = 0;
  for (int index = 0;; ++index) {
    std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" +
                       std::to_string(index) + "/size");
    size_t value = 0;
    char unit = 0;
    if (!(file >> value))
      return largest;
    if (file >> unit)
      value <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    largest = std::max(largest, value);
  }
}

} // namespace

size_t evictionBytes() {
  return std::max<size_t>(size_t{64} << 20, 2 * largestCacheOfThisCore());
}

void evictCaches() {
  static const size_t words = evictionBytes() / sizeof(uint64_t);
  // Written once (its pages faulted in), then only read: the lines it
  // leaves in the caches are clean, so the timed call that displaces them
  // pays no write-back for them.
  static const std::unique_ptr<uint64_t[]> buffer = [] {
    std::unique_ptr<uint64_t[]> b(new uint64_t[words]);
    for (size_t i = 0; i < words; ++i)
      b[i] = i;
    return b;
  }();
  // Every word summed (vector loads at the memory's speed); the sum stored
  // to a volatile keeps the loads.
  uint64_t sum = 0;
  for (size_t i = 0; i < words; ++i)
    sum += buffer[i];
  evictionSink = sum;
}

} // namespace inkling::bench
