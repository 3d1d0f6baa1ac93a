//===- PrefixKey.h - 128-bit key of a cached token prefix -------*- C++ -*-===//
//
// The key a cached block is registered under (PrefixCache.h) and the cache
// tag the pool keeps for it (BlockPool.h): the 128-bit XXH3 hash chain value
// of the token prefix the block ends. 128 bits, not 64, so that a hit is
// never false in practice (docs/runtime.md, "Prefix caching").
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_PREFIXKEY_H
#define INKLING_RUNTIME_PREFIXKEY_H

#include <cstdint>

namespace inkling {

struct PrefixKey {
  uint64_t lo = 0; ///< Low half of the XXH3-128 value (the map's slot bits).
  uint64_t hi = 0; ///< High half.

  friend bool operator==(const PrefixKey &a, const PrefixKey &b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
  friend bool operator!=(const PrefixKey &a, const PrefixKey &b) {
    return !(a == b);
  }
  /// Orders dumps (hi first, as the value prints).
  friend bool operator<(const PrefixKey &a, const PrefixKey &b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }
};

} // namespace inkling

#endif // INKLING_RUNTIME_PREFIXKEY_H
