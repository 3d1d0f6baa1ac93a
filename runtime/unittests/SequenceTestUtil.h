//===- SequenceTestUtil.h - Sequence manager test helpers -------*- C++ -*-===//

#ifndef INKLING_RUNTIME_UNITTESTS_SEQUENCETESTUTIL_H
#define INKLING_RUNTIME_UNITTESTS_SEQUENCETESTUTIL_H

#include "TestEngine.h"

#include <numeric>
#include <vector>

namespace inkling::testing {

/// `count` token ids from `first` up.
inline std::vector<int32_t> iota(int64_t count, int32_t first = 1) {
  std::vector<int32_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

/// The logical block of each of a sequence's mapped blocks.
inline std::vector<int32_t> logicals(const SequenceInfo &info) {
  std::vector<int32_t> result;
  for (const MappedBlock &block : info.blocks)
    result.push_back(block.logical);
  return result;
}

/// The longest cached prefix of the first `count` of `tokens` (-1: all)
/// within `maxLength`; -1 when the lookup fails.
inline int64_t longestHit(TestEngine &engine,
                          const std::vector<int32_t> &tokens, int64_t maxLength,
                          int64_t count = -1) {
  StatusOr<int64_t> hit = engine.manager().longestCachedPrefix(
      tokens.data(), count < 0 ? tokens.size() : count, maxLength);
  return hit ? *hit : -1;
}

/// Adds `tokens` at the prefix hit `start` (its id in `id`): the logical
/// blocks it then holds, or {-1} when the add fails or the sequence does
/// not start computed to `start`.
inline std::vector<int32_t> addAtHit(TestEngine &engine,
                                     const std::vector<int32_t> &tokens,
                                     int64_t start, SequenceId &id) {
  StatusOr<SequenceId> added = engine.add(tokens, start);
  if (!added)
    return {-1};
  id = *added;
  SequenceInfo info = *engine.manager().sequenceInfo(id);
  if (info.numComputed != start)
    return {-1};
  return logicals(info);
}

} // namespace inkling::testing

#endif // INKLING_RUNTIME_UNITTESTS_SEQUENCETESTUTIL_H
