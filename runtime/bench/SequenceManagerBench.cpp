//===- SequenceManagerBench.cpp - Cost of a step, blocks held -------------===//
//
//   BM_DecodeStep/<seqs>/<context>/<prefix_cache>: one decode step
//     (schedule + step metadata + commit) for every sequence, after a prompt
//     of <context> tokens; the ns_per_seq counter is the figure of the
//     50 ns/sequence target.
//   BM_MixedStep: 256 decoding sequences plus two 2048-token prefill chunks.
//   BM_PrefixAdmission/<prompt>: admitting a request whose prompt is cached
//     (longestCachedPrefix, addSequence at the hit, finish): the prefix
//     hashing of prefill; ns_per_token is per prompt token.
//   BM_BlocksHeld32K: the 32K-prompt trace, runtime vs allocate-the-whole-
//     chunk baseline; the figures are counters.
//
//===----------------------------------------------------------------------===//

#include "WindowTrace.h"

#include "inkling/Runtime/SequenceManager.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

using namespace inkling;

namespace {

/// A manager, step buffers sized for a fixed batch, and running sequences.
class Engine {
public:
  Engine(int64_t numSequences, int64_t context, int64_t maxSteps,
         int64_t extraTokens = 0, bool prefixCaching = true)
      : numSequences_(numSequences), context_(context) {
    SequenceManagerConfig config;
    config.layout = trace::traceLayout();
    config.numBlocks = numSequences * 4 + 4096;
    config.enablePrefixCaching = prefixCaching;
    manager_ = std::move(*SequenceManager::create(config));
    int64_t rows = numSequences + 8;
    numCols_ = (context + maxSteps + extraTokens) / 4 + 16;
    host_ = std::make_unique<HostStepBuffers>(
        rows, numCols_, numSequences + extraTokens + 64, rows,
        /*withTokenSeq=*/false);
    buffers_ = std::make_unique<StepBuffers>(
        std::move(*manager_->bindStepBuffers(host_->spec)));
    for (int64_t s = 0; s < numSequences; ++s)
      ids_.push_back(newSequence(s));
  }

  /// A sequence whose `context` prompt tokens are computed already (the
  /// prompt step runs without metadata: it is not what is measured).
  SequenceId newSequence(int64_t salt) {
    std::vector<int32_t> prompt(context_);
    for (int64_t i = 0; i < context_; ++i)
      prompt[i] = static_cast<int32_t>((salt * 7919 + i * 31) % 50000);
    SequenceId id = *manager_->addSequence(prompt);
    check(manager_->schedule(id, context_));
    int32_t sampled = 1;
    check(manager_->commit(id, context_, &sampled, 1));
    return id;
  }

  /// Replaces every sequence by a fresh one (keeps positions in range).
  void recycle() {
    for (SequenceId &id : ids_) {
      check(manager_->finish(id));
      id = newSequence(++salt_);
    }
  }

  /// One decode step: schedule, metadata, commit, for every sequence.
  [[gnu::noinline]] void decodeStep(int32_t token) {
    for (SequenceId id : ids_)
      check(manager_->schedule(id, 1));
    StatusOr<StepInfo> info = manager_->buildStep(
        ids_.data(), numSequences_, StepShape{numSequences_ + 8, 0}, *buffers_);
    if (!info)
      fail(info.status());
    for (SequenceId id : ids_)
      check(manager_->commit(id, 1, &token, 1));
  }

  SequenceManager &manager() { return *manager_; }
  StepBuffers &buffers() { return *buffers_; }
  std::vector<SequenceId> &ids() { return ids_; }

  static void check(const Status &status) {
    if (!status)
      fail(status);
  }
  [[noreturn]] static void fail(const Status &status) {
    std::fprintf(stderr, "benchmark setup failed: %s\n",
                 status.toString().c_str());
    std::exit(1);
  }

private:
  int64_t numSequences_, context_, numCols_;
  int64_t salt_ = 1 << 20;
  std::unique_ptr<SequenceManager> manager_;
  std::unique_ptr<HostStepBuffers> host_;
  std::unique_ptr<StepBuffers> buffers_;
  std::vector<SequenceId> ids_;
};

constexpr int64_t kRecycleSteps = 4096;

void BM_DecodeStep(benchmark::State &state) {
  int64_t numSequences = state.range(0), context = state.range(1);
  Engine engine(numSequences, context, kRecycleSteps, 0, state.range(2) != 0);
  int64_t steps = 0;
  for (auto _ : state) {
    engine.decodeStep(static_cast<int32_t>(steps));
    if (++steps % kRecycleSteps == 0) {
      state.PauseTiming();
      engine.recycle();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * numSequences);
  state.counters["ns_per_seq"] =
      benchmark::Counter(static_cast<double>(numSequences) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
  state.counters["held_blocks"] = engine.manager().pool().numHeldBlocks();
}
BENCHMARK(BM_DecodeStep)
    ->ArgNames({"seqs", "context", "prefix_cache"})
    ->Args({1, 128, 1})
    ->Args({64, 128, 1})
    ->Args({1024, 128, 1})
    ->Args({4096, 128, 1})
    ->Args({1024, 32768, 1})
    ->Args({1024, 128, 0})
    ->Args({1024, 32768, 0})
    ->Unit(benchmark::kMicrosecond);

/// 256 decoding sequences and two prompts in prefill, 2048 tokens a chunk;
/// a prompt that finishes is replaced.
void BM_MixedStep(benchmark::State &state) {
  constexpr int64_t kDecoding = 256, kChunk = 2048, kPrompt = 8192;
  Engine engine(kDecoding, 128, kRecycleSteps, 2 * kChunk);
  SequenceManager &manager = engine.manager();
  std::vector<SequenceId> prefilling;
  int64_t salt = 0;
  auto newPrompt = [&] {
    std::vector<int32_t> prompt(kPrompt);
    for (int64_t i = 0; i < kPrompt; ++i)
      prompt[i] = static_cast<int32_t>((++salt * 104729) % 50000);
    return *manager.addSequence(prompt);
  };
  prefilling.push_back(newPrompt());
  prefilling.push_back(newPrompt());
  std::vector<SequenceId> batch;
  int64_t steps = 0, tokens = 0;
  int32_t token = 0;
  for (auto _ : state) {
    batch.clear();
    for (SequenceId id : prefilling) {
      Engine::check(manager.schedule(id, kChunk));
      batch.push_back(id);
    }
    for (SequenceId id : engine.ids()) {
      Engine::check(manager.schedule(id, 1));
      batch.push_back(id);
    }
    StatusOr<StepInfo> info =
        manager.buildStep(batch.data(), static_cast<int64_t>(batch.size()),
                          StepShape{}, engine.buffers());
    if (!info)
      Engine::fail(info.status());
    tokens += info->numTokens;
    for (SequenceId &id : prefilling) {
      Engine::check(manager.commit(id, kChunk, &token, 1));
      if (manager.sequenceInfo(id)->numComputed >= kPrompt) {
        Engine::check(manager.finish(id));
        id = newPrompt();
      }
    }
    for (SequenceId id : engine.ids())
      Engine::check(manager.commit(id, 1, &token, 1));
    ++token;
    if (++steps % kRecycleSteps == 0) {
      state.PauseTiming();
      engine.recycle();
      state.ResumeTiming();
    }
  }
  state.counters["tokens_per_step"] =
      static_cast<double>(tokens) / std::max<int64_t>(1, steps);
  state.counters["ns_per_token"] = benchmark::Counter(
      static_cast<double>(tokens) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_MixedStep)->Unit(benchmark::kMicrosecond);

/// Admission of a request whose whole prompt (state.range(0) tokens) a
/// finished request cached: look up the hit, add the sequence there (which
/// hashes the prompt again), finish it. Both hash every block of the prompt.
void BM_PrefixAdmission(benchmark::State &state) {
  int64_t promptTokens = state.range(0);
  SequenceManagerConfig config;
  config.layout = trace::traceLayout();
  config.numBlocks = 4096;
  std::unique_ptr<SequenceManager> manager =
      std::move(*SequenceManager::create(config));
  std::vector<int32_t> prompt(promptTokens);
  for (int64_t i = 0; i < promptTokens; ++i)
    prompt[i] = static_cast<int32_t>((i * 104729) % 50000);
  // Prefill once: the chunk's end is snapshotted, then cached on finish.
  SequenceId first = *manager->addSequence(prompt);
  Engine::check(manager->schedule(first, promptTokens));
  int32_t sampled = 1;
  Engine::check(manager->commit(first, promptTokens, &sampled, 1));
  Engine::check(manager->finish(first));
  int64_t hit = 0;
  for (auto _ : state) {
    hit = *manager->longestCachedPrefix(prompt.data(), promptTokens,
                                        promptTokens);
    StatusOr<SequenceId> id = manager->addSequence(prompt, hit);
    if (!id)
      Engine::fail(id.status());
    Engine::check(manager->finish(*id));
  }
  if (hit != promptTokens)
    Engine::fail(notFound("the prompt's end is not cached"));
  state.counters["ns_per_token"] =
      benchmark::Counter(static_cast<double>(promptTokens) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_PrefixAdmission)
    ->ArgNames({"prompt"})
    ->Arg(2048)
    ->Arg(32768)
    ->Unit(benchmark::kMicrosecond);

/// The 32K-prompt trace: 8 sequences, prompts of 32768 tokens in chunks of
/// state.range(0), then 64 decode steps of 1 + lookahead tokens.
void BM_BlocksHeld32K(benchmark::State &state) {
  trace::TraceConfig config;
  config.chunk = state.range(0);
  config.lookahead = state.range(1);
  config.blockSize = state.range(2);
  trace::TraceResult result;
  for (auto _ : state) {
    StatusOr<trace::TraceResult> run = trace::runWindowTrace(config);
    if (!run)
      Engine::fail(run.status());
    result = *run;
  }
  int64_t n = config.blockSize, w = 4;
  int64_t between = trace::span(w - 1, n);
  state.counters["window_peak_per_seq"] = result.peakPerSequenceDuring;
  state.counters["window_between_steps"] = result.peakPerSequenceBetween;
  state.counters["bound_between"] = between;
  state.counters["bound_during"] =
      between + trace::span(w - 1 + config.lookahead, n);
  state.counters["baseline_peak_per_seq"] = result.baselinePeakPerSequence;
  state.counters["window_pool_peak"] = result.peakPoolBlocks;
  state.counters["baseline_pool_peak"] = result.baselinePeakPoolBlocks;
}
BENCHMARK(BM_BlocksHeld32K)
    ->ArgNames({"chunk", "lookahead", "n"})
    ->Args({32768, 0, 4})
    ->Args({2048, 0, 4})
    ->Args({2048, 3, 4})
    ->Args({32768, 8, 4})
    // Block sizes the engine's unifier picks (N = 8: 256 KiB attention
    // pages; N = 32: vLLM's AMD backend), at the real layout.
    ->Args({2048, 3, 8})
    ->Args({2048, 3, 16})
    ->Args({2048, 3, 32})
    ->Args({32768, 8, 8})
    ->Args({32768, 8, 16})
    ->Args({32768, 8, 32})
    ->Args({2048, 3, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
