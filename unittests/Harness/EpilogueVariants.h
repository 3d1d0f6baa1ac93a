//===- EpilogueVariants.h - The epilogue tests' variants -------*- C++ -*-===//
//
// The fusion strategies and thread counts every epilogue JIT test
// (EpilogueTest.cpp, HiddenRowTest.cpp) compiles its layer with, and the
// CompileOptions of each, so that both files test the same variants; and
// the op counts each strategy's fusion must leave.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H
#define INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H

#include "JitFixture.h"
#include "JitHarness.h"

#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/ExecutionEngine/JitEngine.h"

#include "gtest/gtest.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

/// The per-process state of the test case `c` (its name, config and page
/// padding; see testCaseState); `made` says whether this call made it.
template <typename State, typename Case>
State &caseState(const Case &c, bool &made) {
  return testCaseState<State>(c.name, c.config, c.pagePaddingBytes, made);
}

/// The engines of a layer's variants, by name.
using VariantEngines = std::map<std::string, std::unique_ptr<exec::JitEngine>>;

/// `variant`'s engine of `source` in `engines`, compiled on first use (null
/// and a test failure when it does not compile).
inline exec::JitEngine *variantEngine(VariantEngines &engines,
                                      const std::string &source,
                                      const EpilogueVariant &variant) {
  auto &engine = engines[variant.name];
  if (!engine) {
    std::string error;
    engine = compile(source, variant.options(), error);
    if (!engine)
      ADD_FAILURE() << variant.name << ": " << error;
  }
  return engine.get();
}

/// Per op name, its count after the sconv-fuse passes of conv-insert,
/// packed-inserts and none.
using OpCounts = std::vector<std::pair<std::string, std::array<int, 3>>>;

/// The fusion of `source` under each strategy leaves the counts `want`.
inline void expectOpCounts(const std::string &source, const OpCounts &want) {
  const sconv::FusionStrategy strategies[] = {
      sconv::FusionStrategy::ConvInsert, sconv::FusionStrategy::PackedInserts,
      sconv::FusionStrategy::None};
  for (int i = 0; i < 3; ++i) {
    std::string error;
    std::map<std::string, int> ops =
        countOpsAfterFusion(source, strategies[i], error);
    ASSERT_TRUE(error.empty()) << error;
    for (const auto &[op, counts] : want)
      EXPECT_EQ(ops[op], counts[i])
          << op << " under " << kEpilogueVariants[i].name;
  }
}

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_EPILOGUEVARIANTS_H
