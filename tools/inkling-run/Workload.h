//===- Workload.h - inkling-run's synthetic requests and data --*- C++ -*-===//
//
// Synthetic data. The input x of (layer, stream, position p, head, channel)
// is a function of the sequence's token ids [0..p] only: a hash chain over
// the token ids (xxh3), mixed with the layer and stream, expanded by
// splitmix64 into bf16 values of magnitude in [2^-7, 2). Sequences with a
// common prefix therefore have the same x there, which is what makes a
// prefix-cache hit correct.
//
// Requests: seeded prompts (some starting with a shared prompt), output
// lengths and tokens, drawn from one generator in the order the server asks.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_WORKLOAD_H
#define INKLING_TOOLS_INKLING_RUN_WORKLOAD_H

#include "Run.h"

#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/SequenceManager.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <unordered_set>
#include <vector>

namespace inkling::run {

uint64_t hashWords(std::initializer_list<uint64_t> words);

/// Fills `count` bf16 values from `seed`, exponents `minExp + [0, 8)`.
void fillValues(uint64_t seed, uint16_t *out, int64_t count, int minExp);

constexpr int kInputExp = 120;  // [2^-7, 2)
constexpr int kWeightExp = 118; // [2^-9, 2^-1)

struct Generator {
  uint64_t seed;
  uint64_t chainRoot() const { return hashWords({seed, 0x636861696eull}); }
  uint64_t chainNext(uint64_t previous, int32_t token) const {
    return hashWords(
        {previous, static_cast<uint64_t>(static_cast<uint32_t>(token))});
  }
  /// The x row (H*w values) of (layer, stream) at a position with `chain`.
  void row(uint64_t chain, int64_t layer, Stream stream, uint16_t *out,
           int64_t count) const {
    uint64_t rowSeed = hashWords({chain, seed, static_cast<uint64_t>(layer),
                                  static_cast<uint64_t>(stream)});
    fillValues(rowSeed, out, count, kInputExp);
  }
  void params(uint64_t what, int64_t layer, int arg, uint16_t *out,
              int64_t count) const {
    fillValues(hashWords({seed, what, static_cast<uint64_t>(layer),
                          static_cast<uint64_t>(arg)}),
               out, count, kWeightExp);
  }
};

struct Request {
  int64_t number = 0;
  SequenceId id = 0;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> chain; ///< chain[p]: hash of tokens [0..p]
  int64_t target = 0;
  int64_t computed = 0;
  int64_t admitOrder = 0;
  int64_t cachePoint = 0; ///< The shared prompt's end, if named; else 0.
  bool preempted = false;
  /// Positions computed when it was last preempted (recomputed: those
  /// below them that its resume's hit does not cover).
  int64_t computedAtPreemption = 0;
  /// --async: the sampled token the runtime has not been given yet.
  bool tokenPending = false;
  int32_t pendingToken = 0;
  // The pending step.
  bool scheduled = false;
  bool decode = false;
  int64_t numScheduled = 0;
  std::vector<int32_t> stepTokens;
  std::vector<uint64_t> stepChain;
};

/// The seeded draws of the workload, its requests and their data, and the
/// ideal prefix cache the report compares the runtime's with.
class Workload {
public:
  Workload(const ServeOptions &options, int64_t blockSize)
      : opt_(options), gen_{options.seed}, rng_(options.seed), N_(blockSize) {}

  const Generator &generator() const { return gen_; }

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  int32_t randomToken() {
    return static_cast<int32_t>(uniform(0, opt_.vocab - 1));
  }

  /// Prompts that requests share (system prompts), at most half the longest
  /// prompt, so that a shared prefix leaves a tail to compute.
  void makeSharedPrefixes();
  /// A new request (the next number), its prompt and output length.
  std::unique_ptr<Request> newRequest();
  int64_t nextNumber() { return nextNumber_++; }

  /// The chain hash of position p holding `token` after chain[0..p).
  uint64_t extendChain(const std::vector<uint64_t> &chain, size_t p,
                       int32_t token) const {
    return gen_.chainNext(p == 0 ? gen_.chainRoot() : chain[p - 1], token);
  }
  /// The row of padding token t at `step` (seeded; not a sequence's).
  uint64_t padChain(int64_t step, int64_t t) const {
    return hashWords({gen_.seed, 0x706164ull, static_cast<uint64_t>(step),
                      static_cast<uint64_t>(t)});
  }

  /// The ideal cache: the tokens of r an unbounded every-block cache would
  /// hit, and recording the whole blocks [first, last) r computed.
  int64_t idealHit(const Request &r) const {
    for (int64_t p = (int64_t(r.tokens.size()) - 1) / N_ * N_; p > 0; p -= N_)
      if (idealBlocks_.count(r.chain[p - 1]))
        return p;
    return 0;
  }
  void recordBlocks(const Request &r, int64_t first, int64_t last) {
    for (int64_t j = first; j < last; ++j)
      idealBlocks_.insert(r.chain[(j + 1) * N_ - 1]);
  }

private:
  const ServeOptions &opt_;
  Generator gen_;
  std::mt19937_64 rng_;
  int64_t N_;
  std::vector<std::vector<int32_t>> sharedPrefixes_;
  /// The chain hash of every whole block any request has computed
  /// (chain[(j+1)N - 1] for block j).
  std::unordered_set<uint64_t> idealBlocks_;
  int64_t nextNumber_ = 0;
};

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_WORKLOAD_H
