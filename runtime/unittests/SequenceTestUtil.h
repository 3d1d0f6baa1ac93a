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

} // namespace inkling::testing

#endif // INKLING_RUNTIME_UNITTESTS_SEQUENCETESTUTIL_H
