//===- ModelCheckTest.cpp - Random operation sequences against a model ----===//
//
// The model check (ModelChecker.h) over fixed configurations, and against
// runtimes with one injected bug each (InklingRuntimeMutantTests).
// INKLING_MODEL_CHECK_OPS overrides the operations per configuration.
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

using namespace inkling;
using namespace inkling::modelcheck;

namespace {

// 23 configurations x 12000 calls = 276,000 checked operations per run. The
// block size N is the engine's: N = W, N < W-1 (the history spans up to
// ceil((W-1)/N) + 1 blocks), N = W-1, and N > W.
const ModelConfig kConfigs[] = {
    {4, 0, 24, 1},
    {4, 3, 24, 2},
    {4, 6, 40, 3},
    {2, 0, 12, 4},
    {2, 3, 20, 5},
    {3, 1, 16, 6},
    {5, 4, 30, 7},
    {4, 1, 10, 8},
    {3, 0, 64, 9},
    {4, 0, 40, 10, 1},
    {4, 3, 64, 11, 1},
    {5, 2, 40, 12, 2},
    {4, 1, 24, 13, 3},
    {4, 3, 24, 14, 8},
    {3, 4, 20, 15, 16},
    {2, 1, 16, 16, 5},
    // Snapshot policies (S = 2 blocks), with cache points on some adds.
    {4, 0, 24, 17, 0, PrefixPolicy::Snapshots},
    {4, 3, 40, 18, 0, PrefixPolicy::Snapshots},
    {4, 1, 24, 19, 2, PrefixPolicy::Snapshots},
    {3, 2, 40, 20, 8, PrefixPolicy::Snapshots},
    {4, 3, 64, 21, 1, PrefixPolicy::EveryBlock},
    {4, 0, 40, 22, 0, PrefixPolicy::EveryBlock},
    {5, 2, 48, 23, 3, PrefixPolicy::EveryBlock},
    // Same-step hits: schedule registers pending entries.
    {4, 0, 40, 24, 0, PrefixPolicy::EveryBlock, 2, true},
    {4, 1, 40, 25, 0, PrefixPolicy::Snapshots, 2, true},
    {4, 1, 48, 26, 2, PrefixPolicy::EveryBlock, 2, true},
    {3, 0, 32, 27, 0, PrefixPolicy::Window, 2, true}};

#ifndef INKLING_RUNTIME_MUTANTS

class ModelCheckTest : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(ModelCheckTest, RandomOperationsKeepEveryInvariant) {
  ModelChecker checker(GetParam());
  std::string err = checker.run(opsPerConfig());
  ASSERT_EQ(err, "") << GetParam();
  // The run must have exercised the interesting paths.
  EXPECT_GT(checker.failures(), 100);
  EXPECT_GT(checker.prefixHits(), 10);
  EXPECT_GT(checker.arrivals(), 10) << "async scheduling not exercised";
  EXPECT_GT(checker.keyChecks(), 1000) << "cached blocks not checked";
  EXPECT_GE(checker.calls(), opsPerConfig());
  EXPECT_GT(checker.eagleChecks(), 100) << "EAGLE lookups not checked";
  EXPECT_GT(checker.hitChecks(), 500) << "lookups not predicted";
  // The hit model's must-store predictions need one-block histories.
  const ModelConfig &config = GetParam();
  if (config.policy != PrefixPolicy::Window &&
      config.n() >= config.kernel - 1 && config.n() < 8)
    EXPECT_GT(checker.mustChecks(), 0) << "no stored boundary predicted";
  if (config.sameStepHits) {
    EXPECT_GT(checker.sameStepReads(), 10) << "no same-step hits";
    EXPECT_GT(checker.orderedSteps(), 2) << "no ordered steps";
    EXPECT_GT(checker.invalidations(), 0) << "no reader invalidated";
    EXPECT_GT(checker.refusedBuilds(), 0) << "no reader built alone";
  }
  if (GetParam().policy != PrefixPolicy::Window)
    EXPECT_GT(checker.snapshotChecks(), 20);
  else
    EXPECT_EQ(checker.snapshotChecks(), 0);
  std::cout << "[ model    ] " << GetParam() << ": " << checker.calls()
            << " calls, " << checker.successes() << " succeeded, "
            << checker.failures() << " failed as predicted, "
            << checker.prefixHits() << " prefix hits, " << checker.copies()
            << " copy-on-write copies, " << checker.snapshotChecks()
            << " checks with snapshot blocks, " << checker.keyChecks()
            << " cached-block key checks, " << checker.hitChecks()
            << " predicted lookups, " << checker.mustChecks()
            << " predicted stored boundaries, " << checker.sameStepReads()
            << " same-step reads, " << checker.orderedSteps()
            << " ordered steps, " << checker.invalidations()
            << " invalidated readers, " << checker.arrivals()
            << " steps scheduled ahead of their token\n";
  RecordProperty("successes", std::to_string(checker.successes()));
  RecordProperty("prefix_hits", std::to_string(checker.prefixHits()));
  RecordProperty("copies", std::to_string(checker.copies()));
}

INSTANTIATE_TEST_SUITE_P(Configs, ModelCheckTest, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<ModelConfig> &info) {
                           const ModelConfig &c = info.param;
                           return "k" + std::to_string(c.kernel) + "_n" +
                                  std::to_string(c.n()) + "_la" +
                                  std::to_string(c.lookahead) +
                                  (c.policy == PrefixPolicy::Window ? ""
                                   : c.policy == PrefixPolicy::Snapshots
                                       ? "_snap"
                                       : "_every") +
                                  (c.sameStepHits ? "_samestep" : "") +
                                  "_blocks" + std::to_string(c.numBlocks) +
                                  "_seed" + std::to_string(c.seed);
                         });

#else

// The model check against a runtime with one injected bug
// (the INKLING_MUTANT sites of runtime/lib/Sequence*.cpp, compiled into this
// test's copy of the runtime only): some configuration must report it. One
// mutant:
//   InklingRuntimeMutantTests --gtest_filter='*no_lookahead'
// prints the first violation the model check found.
class ModelCheckMutantTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ModelCheckMutantTest, TheModelCheckCatchesTheBug) {
  ASSERT_EQ(setenv("INKLING_RUNTIME_MUTANT", GetParam(), 1), 0);
  std::string err;
  for (const ModelConfig &config : kConfigs) {
    ModelChecker checker(config);
    err = checker.run(opsPerConfig());
    if (!err.empty()) {
      std::cout << "[ mutant   ] " << GetParam() << ": caught in " << config
                << ": " << err << "\n";
      break;
    }
  }
  unsetenv("INKLING_RUNTIME_MUTANT");
  EXPECT_NE(err, "") << "the model check missed the injected bug "
                     << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Mutants, ModelCheckMutantTest,
    ::testing::Values("no-copy-on-write", "no-lookahead", "leak-copy-source",
                      "snapshot-next-hash", "eagle-plain-minus-block",
                      "shortest-hit", "half-the-boundaries",
                      "snapshot-every-ignored", "snapshots-as-every-block"),
    [](const ::testing::TestParamInfo<const char *> &i) {
      std::string name = i.param;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// Same-step hits' mutants, against the configurations with the option.
class SameStepMutantTest : public ::testing::TestWithParam<const char *> {};

TEST_P(SameStepMutantTest, TheModelCheckCatchesTheBug) {
  ASSERT_EQ(setenv("INKLING_RUNTIME_MUTANT", GetParam(), 1), 0);
  std::string err;
  for (const ModelConfig &config : kConfigs) {
    if (!config.sameStepHits)
      continue;
    ModelChecker checker(config);
    err = checker.run(opsPerConfig());
    if (!err.empty()) {
      std::cout << "[ mutant   ] " << GetParam() << ": caught in " << config
                << ": " << err.substr(0, err.find('\n')) << "\n";
      break;
    }
  }
  unsetenv("INKLING_RUNTIME_MUTANT");
  EXPECT_NE(err, "") << "the model check missed the injected bug "
                     << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Mutants, SameStepMutantTest,
                         ::testing::Values("pending-past-lookahead",
                                           "keep-invalid-readers",
                                           "unflagged-same-step"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           std::string name = i.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

#endif // INKLING_RUNTIME_MUTANTS

} // namespace
