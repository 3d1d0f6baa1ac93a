//===- TestEngine.h - A tiny serving engine over the runtime ----*- C++ -*-===//
//
// Drives a SequenceManager the way a serving engine does (schedule, build
// the step, run the kernels, commit) and runs every step through the
// StepSimulator, so tests state scenarios in a few lines and get the cache
// contents checked for free.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_TESTENGINE_H
#define INKLING_RUNTIME_UNITTESTS_TESTENGINE_H

#include "StepSimulator.h"

#include <map>
#include <memory>

namespace inkling::testing {

/// blockSize 0: N = the kernel.
inline Layout testLayout(int64_t kernel, int64_t blockSize = 0) {
  LayoutConfig config;
  config.kvHeads = 2;
  config.headDim = 8;
  config.hidden = 16;
  config.kernel = kernel;
  config.blockSize = blockSize;
  return *Layout::derive(config);
}

struct EngineOptions {
  int64_t kernel = 4;
  int64_t blockSize = 0; ///< N; 0: the kernel.
  int64_t numBlocks = 64;
  int64_t lookahead = 0;
  bool prefixCaching = true;
  /// The window policy by default: most tests check the window's mechanics.
  PrefixPolicy prefixPolicy = PrefixPolicy::Window;
  int64_t snapshotEvery = 8;
  int64_t maxRows = 8;
  int64_t numCols = 64;
  int64_t maxTokens = 256;
  int64_t maxCopies = 8;
};

/// The defaults but for the block size N (and the lookahead).
inline EngineOptions withBlockSize(int64_t blockSize, int64_t lookahead = 0) {
  EngineOptions options;
  options.blockSize = blockSize;
  options.lookahead = lookahead;
  return options;
}

/// A manager over testLayout(kernel, N) (what TestEngine and the model check
/// drive).
inline std::unique_ptr<SequenceManager>
makeManager(int64_t kernel, int64_t blockSize, int64_t numBlocks,
            int64_t lookahead, PrefixPolicy policy, int64_t snapshotEvery,
            bool prefixCaching = true) {
  SequenceManagerConfig config;
  config.layout = testLayout(kernel, blockSize);
  config.numBlocks = numBlocks;
  config.lookahead = lookahead;
  config.enablePrefixCaching = prefixCaching;
  config.prefixPolicy = policy;
  config.snapshotEvery = snapshotEvery;
  return std::move(*SequenceManager::create(config));
}

/// One sequence's part of a step.
struct StepPlan {
  SequenceId id = 0;
  int64_t numTokens = 1;
  int64_t accepted = -1;       ///< -1: all.
  std::vector<int32_t> drafts; ///< Token ids past the known ones.
  int32_t sampled = 0;         ///< Appended when the step reaches the end.
};

class TestEngine {
public:
  explicit TestEngine(EngineOptions options = {})
      : options_(options), buffers_(options.maxRows, options.numCols,
                                    options.maxTokens, options.maxCopies),
        simulator_(options.numBlocks,
                   options.blockSize ? options.blockSize : options.kernel,
                   options.kernel) {
    manager_ = makeManager(options.kernel, options.blockSize, options.numBlocks,
                           options.lookahead, options.prefixPolicy,
                           options.snapshotEvery, options.prefixCaching);
    step_ = std::make_unique<StepBuffers>(
        std::move(*manager_->bindStepBuffers(buffers_.spec)));
  }

  SequenceManager &manager() { return *manager_; }
  StepBuffers &stepBuffers() { return *step_; }
  const StepBufferSpec &spec() const { return buffers_.spec; }
  std::vector<int32_t> &tokens(SequenceId id) { return tokens_[id]; }

  StatusOr<SequenceId> add(const std::vector<int32_t> &prompt,
                           int64_t start = 0) {
    StatusOr<SequenceId> id = manager_->addSequence(prompt, start);
    if (id)
      tokens_[*id] = prompt;
    return id;
  }
  StatusOr<SequenceId> fork(SequenceId parent) {
    StatusOr<SequenceId> id = manager_->fork(parent);
    if (id)
      tokens_[*id] = tokens_[parent];
    return id;
  }

  /// Adds `prompt` (its id in `id`) and computes it in one step; "" or an
  /// error.
  std::string prefill(const std::vector<int32_t> &prompt, SequenceId &id) {
    StatusOr<SequenceId> added = add(prompt);
    if (!added)
      return "add: " + added.status().toString();
    id = *added;
    return step({{id, static_cast<int64_t>(prompt.size())}});
  }

  /// Schedules, builds, simulates and commits one step; "" or an error.
  std::string step(const std::vector<StepPlan> &plans, StepShape shape = {}) {
    std::vector<SequenceId> ids;
    std::vector<std::vector<int32_t>> stepTokens;
    for (const StepPlan &plan : plans) {
      Status status = manager_->schedule(plan.id, plan.numTokens);
      if (!status)
        return "schedule: " + status.toString();
      ids.push_back(plan.id);
      int64_t c = manager_->sequenceInfo(plan.id)->numComputed;
      std::vector<int32_t> all = tokens_[plan.id];
      all.resize(std::min<size_t>(all.size(), c + plan.numTokens));
      for (size_t d = 0; all.size() < size_t(c + plan.numTokens); ++d)
        all.push_back(d < plan.drafts.size() ? plan.drafts[d]
                                             : int32_t(1000 + d));
      stepTokens.push_back(all);
    }
    StatusOr<StepInfo> info =
        manager_->buildStep(ids.data(), ids.size(), shape, *step_);
    if (!info)
      return "build: " + info.status().toString();
    std::vector<std::vector<uint64_t>> identities;
    for (const auto &all : stepTokens)
      identities.push_back(prefixIdentities(all));
    if (std::string err = simulator_.run(buffers_.spec, *info, identities);
        !err.empty())
      return "kernel: " + err;
    if (std::string err = checkBlockTable(*manager_, buffers_.spec, ids);
        !err.empty())
      return "table: " + err;
    lastInfo_ = *info;
    for (size_t i = 0; i < plans.size(); ++i) {
      const StepPlan &plan = plans[i];
      int64_t accepted = plan.accepted < 0 ? plan.numTokens : plan.accepted;
      int64_t c = manager_->sequenceInfo(plan.id)->numComputed;
      std::vector<int32_t> &known = tokens_[plan.id];
      std::vector<int32_t> fresh;
      for (int64_t p = known.size(); p < c + accepted; ++p)
        fresh.push_back(stepTokens[i][p]);
      if (c + accepted >= static_cast<int64_t>(known.size() + fresh.size()))
        fresh.push_back(plan.sampled);
      Status status = manager_->commit(plan.id, accepted, fresh.data(),
                                       static_cast<int64_t>(fresh.size()));
      if (!status)
        return "commit: " + status.toString();
      known.insert(known.end(), fresh.begin(), fresh.end());
    }
    if (Status status = manager_->checkInvariants(); !status)
      return "invariants: " + status.toString();
    return "";
  }

  /// Decodes `count` single-token steps of `id` alone.
  std::string decode(SequenceId id, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      if (std::string err = step({{id, 1, -1, {}, int32_t(500 + i)}});
          !err.empty())
        return err;
    return "";
  }

  /// A step of `chunk` tokens of `id`, then `count` decode steps.
  std::string run(SequenceId id, int64_t chunk, int64_t count) {
    if (std::string err = step({{id, chunk}}); !err.empty())
      return err;
    return decode(id, count);
  }

  const StepInfo &lastInfo() const { return lastInfo_; }

private:
  EngineOptions options_;
  OwnedStepBuffers buffers_;
  StepSimulator simulator_;
  std::unique_ptr<SequenceManager> manager_;
  std::unique_ptr<StepBuffers> step_;
  std::map<SequenceId, std::vector<int32_t>> tokens_;
  StepInfo lastInfo_;
};

} // namespace inkling::testing

#endif // INKLING_RUNTIME_UNITTESTS_TESTENGINE_H
