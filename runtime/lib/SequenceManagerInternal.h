//===- SequenceManagerInternal.h - Shared by its files ----------*- C++ -*-===//
//
// Private to runtime/lib: the limits, message helpers and test-only mutant
// switches that the SequenceManager member files (SequenceManager.cpp,
// SequencePrefix.cpp, SequenceSchedule.cpp, SequenceCommit.cpp,
// SequenceStep.cpp, SequenceInvariants.cpp) share.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_LIB_SEQUENCEMANAGERINTERNAL_H
#define INKLING_RUNTIME_LIB_SEQUENCEMANAGERINTERNAL_H

#include "inkling/Runtime/SequenceManager.h"

#include <cstdint>
#include <limits>
#include <string>

#ifdef INKLING_RUNTIME_MUTANTS
// Test builds only (runtime/unittests: the model check's mutation test): the
// bug INKLING_RUNTIME_MUTANT names, which the model check must catch. The
// library everyone links has none of this.
#include <cstdlib>
#include <cstring>
#define INKLING_MUTANT(name)                                                   \
  (std::getenv("INKLING_RUNTIME_MUTANT") &&                                    \
   std::strcmp(std::getenv("INKLING_RUNTIME_MUTANT"), name) == 0)
#else
#define INKLING_MUTANT(name) false
#endif

namespace inkling {
namespace sequence_internal {

/// Positions, token counts and step sizes stay below 2^31: num_computed and
/// query_start_loc are int32 in the step metadata.
inline constexpr int64_t kMaxPosition = std::numeric_limits<int32_t>::max();
/// Drafts per step are tens at most; the bound keeps the per-sequence block
/// window (4 + ceil(L/N) entries) small.
inline constexpr int64_t kMaxLookahead = 1024;
inline constexpr uint32_t kMaxGeneration = 0x7fffffff;

inline std::string str(int64_t value) { return std::to_string(value); }
inline std::string seqName(SequenceId id) { return "sequence " + str(id); }

} // namespace sequence_internal
} // namespace inkling

#endif // INKLING_RUNTIME_LIB_SEQUENCEMANAGERINTERNAL_H
