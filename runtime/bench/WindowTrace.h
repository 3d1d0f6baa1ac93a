//===- WindowTrace.h - Blocks held: window vs whole chunk -------*- C++ -*-===//
//
// Replays a serving trace (long prompts, chunked prefill, then decode with
// optional speculative steps) through the SequenceManager and, beside it,
// through an allocate-the-whole-chunk policy (every position of a step gets a
// block; blocks that left the window are freed when the next step is
// scheduled), and reports the blocks each holds. Shared by the benchmark,
// which prints the figures, and by a unit test, which checks the bounds.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_BENCH_WINDOWTRACE_H
#define INKLING_RUNTIME_BENCH_WINDOWTRACE_H

#include "RealLayout.h"
#include "inkling/Runtime/SequenceManager.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace inkling::trace {

struct TraceConfig {
  int64_t numSequences = 8;
  int64_t promptLength = 32768;
  int64_t chunk = 32768; ///< Prefill chunk size.
  int64_t decodeSteps = 64;
  int64_t lookahead = 0; ///< Decode steps schedule 1 + lookahead tokens.
  int64_t blockSize = 0; ///< N; 0: the kernel.
  uint64_t seed = 1;
};

/// The blocks m consecutive positions touch at worst alignment:
/// ceil((m-1)/N) + 1 (0 for m = 0). The bounds of SequenceManager.h are
/// span(W-1) between steps and span(W-1) + span(W-1+L) during a step.
inline int64_t span(int64_t positions, int64_t blockSize) {
  return positions == 0 ? 0 : (positions + blockSize - 2) / blockSize + 1;
}

struct TraceResult {
  int64_t steps = 0;
  /// The runtime: most blocks one sequence held during a step (its window
  /// plus a pending copy source) and between steps; most blocks in use.
  int64_t peakPerSequenceDuring = 0;
  int64_t peakPerSequenceBetween = 0;
  int64_t peakPoolBlocks = 0;
  /// The allocate-the-whole-chunk baseline.
  int64_t baselinePeakPerSequence = 0;
  int64_t baselinePeakPoolBlocks = 0;
};

/// The real layout (kernel 4) at block size N (0: the kernel).
inline Layout traceLayout(int64_t blockSize = 0) {
  return testing::realLayout(blockSize);
}

/// The baseline: logical block -> block for every position ever scheduled,
/// until the next step frees what left the window.
class WholeChunkBaseline {
public:
  WholeChunkBaseline(int64_t numBlocks, int64_t blockSize, int64_t kernel)
      : pool_(*BlockPool::create(numBlocks)), n_(blockSize), kernel_(kernel) {}

  /// Frees the blocks the step at `computed` does not read, then allocates
  /// one block per logical block of [computed, end).
  Status schedule(int64_t seq, int64_t computed, int64_t end) {
    std::map<int64_t, int32_t> &held = held_[seq];
    int64_t keepFrom = std::max<int64_t>(0, computed - (kernel_ - 1)) / n_;
    for (auto it = held.begin(); it != held.end() && it->first < keepFrom;)
      if (Status status = pool_.release(it->second); !status)
        return status;
      else
        it = held.erase(it);
    for (int64_t j = computed / n_; j <= (end - 1) / n_; ++j) {
      if (held.count(j))
        continue;
      StatusOr<int32_t> block = pool_.allocate();
      if (!block)
        return block.status();
      held[j] = *block;
    }
    return Status::ok();
  }
  int64_t held(int64_t seq) { return held_[seq].size(); }
  int64_t poolBlocks() const { return pool_.numHeldBlocks(); }

private:
  BlockPool pool_;
  int64_t n_, kernel_;
  std::map<int64_t, std::map<int64_t, int32_t>> held_;
};

inline StatusOr<TraceResult> runWindowTrace(const TraceConfig &config) {
  Layout layout = traceLayout(config.blockSize);
  int64_t n = layout.blockSize, kernel = layout.slidingWindow;
  SequenceManagerConfig managerConfig;
  managerConfig.layout = layout;
  managerConfig.lookahead = config.lookahead;
  // The trace measures the window (snapshots take free blocks on top).
  managerConfig.prefixPolicy = PrefixPolicy::Window;
  managerConfig.numBlocks =
      config.numSequences *
          (span(kernel - 1, n) + span(kernel - 1 + config.lookahead, n)) +
      16;
  StatusOr<std::unique_ptr<SequenceManager>> created =
      SequenceManager::create(managerConfig);
  if (!created)
    return created.status();
  SequenceManager &manager = **created;
  int64_t baselineBlocks =
      config.numSequences * ((config.chunk + config.lookahead) / n + 4) + 16;
  WholeChunkBaseline baseline(baselineBlocks, n, kernel);

  std::mt19937_64 rng(config.seed);
  std::vector<SequenceId> ids;
  for (int64_t s = 0; s < config.numSequences; ++s) {
    std::vector<int32_t> prompt(config.promptLength);
    for (int32_t &token : prompt)
      token = static_cast<int32_t>(rng() % 32000);
    StatusOr<SequenceId> id = manager.addSequence(prompt);
    if (!id)
      return id.status();
    ids.push_back(*id);
  }

  TraceResult result;
  auto heldBy = [&](SequenceId id) -> int64_t {
    SequenceInfo info = *manager.sequenceInfo(id);
    return static_cast<int64_t>(info.blocks.size()) + (info.hasCopy ? 1 : 0);
  };
  int64_t prefillSteps =
      (config.promptLength + config.chunk - 1) / config.chunk;
  for (int64_t step = 0; step < prefillSteps + config.decodeSteps; ++step) {
    bool prefill = step < prefillSteps;
    std::vector<int64_t> scheduled(ids.size());
    for (size_t s = 0; s < ids.size(); ++s) {
      SequenceInfo info = *manager.sequenceInfo(ids[s]);
      int64_t c = info.numComputed;
      int64_t count = prefill ? std::min(config.chunk, config.promptLength - c)
                              : 1 + config.lookahead;
      if (Status status = manager.schedule(ids[s], count); !status)
        return status;
      if (Status status = baseline.schedule(s, c, c + count); !status)
        return status;
      scheduled[s] = count;
      result.peakPerSequenceDuring =
          std::max(result.peakPerSequenceDuring, heldBy(ids[s]));
      result.baselinePeakPerSequence =
          std::max(result.baselinePeakPerSequence, baseline.held(s));
    }
    result.peakPoolBlocks = std::max<int64_t>(result.peakPoolBlocks,
                                              manager.pool().numHeldBlocks());
    result.baselinePeakPoolBlocks =
        std::max(result.baselinePeakPoolBlocks, baseline.poolBlocks());
    for (size_t s = 0; s < ids.size(); ++s) {
      int64_t count = scheduled[s];
      int64_t accepted = count;
      std::vector<int32_t> fresh;
      if (!prefill && config.lookahead > 0)
        accepted = 1 + static_cast<int64_t>(rng() % count); // drafts accepted
      SequenceInfo info = *manager.sequenceInfo(ids[s]);
      for (int64_t p = info.numTokens; p < info.numComputed + accepted; ++p)
        fresh.push_back(static_cast<int32_t>(rng() % 32000));
      if (info.numComputed + accepted >=
          info.numTokens + static_cast<int64_t>(fresh.size()))
        fresh.push_back(static_cast<int32_t>(rng() % 32000)); // sampled
      if (Status status = manager.commit(ids[s], accepted, fresh.data(),
                                         static_cast<int64_t>(fresh.size()));
          !status)
        return status;
      result.peakPerSequenceBetween =
          std::max(result.peakPerSequenceBetween, heldBy(ids[s]));
    }
    ++result.steps;
  }
  return result;
}

} // namespace inkling::trace

#endif // INKLING_RUNTIME_BENCH_WINDOWTRACE_H
