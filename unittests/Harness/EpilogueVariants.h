//===- EpilogueVariants.h - The epilogue tests' compile variants -*- C++
//-*-===//
//
// The fusion strategies and thread counts every epilogue JIT test
// (EpilogueTest.cpp, HiddenRowTest.cpp) compiles its layer with, and the
// CompileOptions of each, so that both files test the same variants.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H
#define INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H

#include "JitHarness.h"

#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include <cstdint>

namespace inkling::harness {

struct EpilogueVariant {
  const char *name;
  sconv::FusionStrategy strategy;
  int threads = 1;
  int64_t minParallelIterations = 64;

  CompileOptions options() const {
    CompileOptions o;
    o.fusion = strategy;
    o.threads = threads;
    o.minParallelIterations = minParallelIterations;
    return o;
  }
};

/// Fused both ways, unfused, and fused on 2 threads forking at every step.
inline constexpr EpilogueVariant kEpilogueVariants[] = {
    {"conv-insert", sconv::FusionStrategy::ConvInsert},
    {"packed-inserts", sconv::FusionStrategy::PackedInserts},
    {"none", sconv::FusionStrategy::None},
    {"conv-insert/threads=2,always", sconv::FusionStrategy::ConvInsert, 2, 1},
};

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H
