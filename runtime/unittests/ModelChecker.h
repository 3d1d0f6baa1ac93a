//===- ModelChecker.h - Random operations against a model -------*- C++ -*-===//
//
// Thousands of random operation sequences (add with and without prefix hits,
// schedule, schedule ahead of the sampled token (async scheduling: the
// token arrives later, before the build), run the step, commit with random
// acceptance, append, preempt, resume, fork, finish, and calls that must
// fail, in wrong orders too), each checked after every
// operation against a small executable model:
//   * the model predicts success or the error code of every call; a failed
//     call must leave the full state dump unchanged (and the step buffers);
//   * every sequence's state, num_computed, token count and step size match;
//   * every sequence holds exactly the blocks of its live window (history,
//     plus the stored range during a step), within the block bounds;
//   * every live window position has an allocated slot, and a slot written
//     by a step is mapped by no other live position;
//   * reference counts equal the holders counted from the sequences; free
//     plus held blocks equal the capacity (nothing leaks);
//   * the cache contents (simulated per slot) at every idle sequence's
//     history are the values its own token prefix produced, which checks
//     copy-on-write, prefix hits and speculative rollback by effect.
//   * every cached block holds what its key names, and its key is the one
//     recomputed from the tokens it was written for.
// INKLING_MODEL_CHECK_OPS overrides the operations per configuration.
//
// The checker is split by job: ModelCheckOperations.cpp (the run, and the
// operations on whole sequences), ModelCheckSteps.cpp (schedule, run the
// step, commit), ModelCheckInvariants.cpp (the checks after every call);
// ModelCheckHits.cpp (the hit model: its record of the cached keys, checked
// against the prefix policy, and the lookups it predicts); ModelCheckTest.cpp
// holds the configurations and the tests.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_MODELCHECKER_H
#define INKLING_RUNTIME_UNITTESTS_MODELCHECKER_H

#include "StepSimulator.h"
#include "TestEngine.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace inkling::modelcheck {

using namespace inkling::testing;

struct ModelConfig {
  int64_t kernel;
  int64_t lookahead;
  int64_t numBlocks;
  uint64_t seed;
  int64_t blockSize = 0; ///< N; 0: the kernel.
  PrefixPolicy policy = PrefixPolicy::Window;
  int64_t snapshotEvery = 2;
  bool sameStepHits = false; ///< SequenceManagerConfig::sameStepHits
  int64_t n() const { return blockSize ? blockSize : kernel; }
};

inline std::ostream &operator<<(std::ostream &os, const ModelConfig &config) {
  return os << "kernel " << config.kernel << " block size " << config.n()
            << " lookahead " << config.lookahead << " blocks "
            << config.numBlocks << " seed " << config.seed << " policy "
            << prefixPolicyName(config.policy)
            << (config.sameStepHits ? " same-step hits" : "");
}

inline constexpr int64_t kMaxSequences = 8;
inline constexpr int64_t kMaxLength = 110;
inline constexpr int64_t kMaxRows = 10;
inline constexpr int64_t kNumCols = 64;
inline constexpr int64_t kMaxTokens = 320;

inline int64_t opsPerConfig() {
  if (const char *env = std::getenv("INKLING_MODEL_CHECK_OPS"))
    return std::max<long long>(1, std::atoll(env));
  return 12000;
}

class ModelChecker {
public:
  explicit ModelChecker(const ModelConfig &config);

  /// Runs until `ops` calls were made (picks that find no target make
  /// none); "" or the first violation, with the state.
  std::string run(int64_t ops);

  int64_t calls() const { return successes_ + failures_; }
  int64_t successes() const { return successes_; }
  int64_t failures() const { return failures_; }
  int64_t prefixHits() const { return prefixHits_; }
  int64_t copies() const { return copies_; }
  int64_t arrivals() const { return arrivals_; }

private:
  enum class State { Idle, Scheduled, Preempted };
  /// The hit model's view of a scheduled step (ModelCheckHits.cpp): the
  /// boundaries its policy may store, and the block keys it must store.
  struct StepPlan {
    int64_t from = 0, end = 0; // the chunk [from, end)
    bool everyBlock = false;
    std::vector<int64_t> allowed;                    // boundaries
    std::vector<std::pair<int64_t, PrefixKey>> must; // (boundary, key)
  };
  struct ModelSeq {
    SequenceId id = 0;
    State state = State::Idle;
    int64_t computed = 0;
    std::vector<int32_t> tokens; // known token ids
    // prefixIdentities(tokens), extended as tokens are appended.
    std::vector<uint64_t> identities;
    const std::vector<uint64_t> &knownIdentities() {
      uint64_t last = identities.empty() ? 0x1234 : identities.back();
      for (size_t q = identities.size(); q < tokens.size(); ++q)
        identities.push_back(last = mixToken(last, tokens[q]));
      return identities;
    }
    std::vector<int64_t> cachePoints; // the engine's, each pins a snapshot
    int64_t hitFrom = 0;              // the start of the last add or resume
    bool keptHashes = false; // resumed without token ids: hashes may be gone
    int64_t partial = 0;     // names the physical block of c (shared by forks)
    StepPlan plan;           // what the scheduled step's policy stores
    int64_t scheduled = 0;
    bool ran = false;     // the scheduled step's kernels ran
    bool pending = false; // scheduled ahead: the first token not yet given
    std::vector<int32_t> stepTokens; // tokens of [0, c + n), drafts included
    // Same-step hits: the keys its scheduled step made pending (the
    // manager's choice, checked against what every commit may store), and
    // the writers whose pending blocks it started from.
    std::vector<PrefixKey> pendingKeys;
    std::vector<SequenceId> readsFrom;
  };

  /// The indices of the sequences `pred` accepts, in order.
  template <typename Pred> std::vector<size_t> select(Pred pred) {
    std::vector<size_t> out;
    for (size_t i = 0; i < seqs_.size(); ++i)
      if (pred(seqs_[i]))
        out.push_back(i);
    return out;
  }

  int64_t uniform(int64_t lo, int64_t hi) { // [lo, hi]
    return lo + static_cast<int64_t>(rng_() % uint64_t(hi - lo + 1));
  }
  bool chance(double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  int64_t history() const { return config_.kernel - 1; }

  // --- Predictions --------------------------------------------------------

  /// Runs `call`, which the model predicts to fail with `code` (or succeed
  /// for Ok); checks the outcome and that failures change nothing.
  template <typename Call>
  std::string expect(StatusCode code, Call &&call, Status *out = nullptr) {
    std::string before = code == StatusCode::Ok ? "" : manager_->debugString();
    Status status = call();
    if (out)
      *out = status;
    if (status.code() != code)
      return "expected " + std::string(statusCodeName(code)) + ", got " +
             status.toString();
    if (code == StatusCode::Ok) {
      ++successes_;
      return "";
    }
    ++failures_;
    if (status.message().empty())
      return "error without a message";
    if (manager_->debugString() != before)
      return "failed call changed the state: " + status.toString();
    return "";
  }

  /// Blocks a schedule of n tokens needs, computed from the model's window.
  int64_t blocksNeeded(const ModelSeq &seq, int64_t n);

  // --- The hit model (ModelCheckHits.cpp) ----------------------------------

  /// The first block of the history a resume at p reads.
  int64_t firstHistoryBlock(int64_t p) const {
    return std::max<int64_t>(0, p - history()) / n_;
  }
  /// The chain keys of the whole blocks of tokens[0, len).
  std::vector<PrefixKey> chainKeys(const int32_t *tokens, int64_t len) const;
  /// Whether the model's record holds the history of a resume at p.
  bool storedAt(const std::vector<PrefixKey> &keys, int64_t p) const;
  /// The longest hit the model's record gives (with `drop`, the EAGLE rule).
  int64_t modelHit(const int32_t *tokens, int64_t len, int64_t maxLength,
                   bool drop = false) const;
  /// Records what the policy may and must store in the step just scheduled
  /// (`freeBefore` < 0: no must-store prediction).
  void planStep(ModelSeq &seq, int64_t n, int64_t freeBefore);
  /// A commit of k tokens: its plan's keys join the step's predictions
  /// (`pendingOnly`: a schedule's pending keys, without the must-store).
  void noteCommit(const ModelSeq &seq, int64_t k, bool pendingOnly = false);
  /// The manager's cached keys against the predictions, then the record.
  std::string checkHitModel();
  /// A fresh name for a sequence's block of c.
  int64_t freshPartial() { return ++partials_; }

  // --- Same-step hits (ModelCheckPending.cpp) -----------------------------

  /// The index of the live sequence `id`, or -1.
  int64_t indexOf(SequenceId id) const;
  /// After a schedule: the step's pending keys, which must be keys every
  /// valid commit of it may store.
  std::string notePending(ModelSeq &seq);
  /// After an add or resume at `start`: the writers whose pending keys its
  /// history uses, which the manager must report.
  std::string noteReads(ModelSeq &seq, int64_t start);
  /// After a commit: every pending key stays (promoted); readers stop
  /// depending on the writer.
  std::string promote(ModelSeq &seq);
  /// Before seqs_[index] drops its step (preempt, finish): its pending keys
  /// are withdrawn and its readers (and theirs) preempted in the model;
  /// the manager's invalidated readers must be `invalid`.
  void dropStep(size_t index, std::vector<SequenceId> &invalid);
  std::string checkInvalidated(std::vector<SequenceId> invalid);
  /// Whether seqs_[index] reads a pending block its writer has not written.
  bool readsUnwritten(const ModelSeq &seq) const;
  /// The physical blocks pending now (and whether their writer ran).
  void pendingBlocks();

  // --- Operations ----------------------------------------------------------

  std::string switchPolicy();
  std::string randomOperation();
  std::string add();
  std::string checkEagleHit(const std::vector<int32_t> &prompt,
                            int64_t maxLength);
  std::string schedule();
  /// Schedules n tokens of seqs_[index] (`ahead`: scheduleAhead).
  std::string scheduleAt(size_t index, int64_t n, bool ahead);
  /// The model's side of a successful schedule (`freeBefore`: the free
  /// blocks before it, < 0 when unknown).
  void modelSchedule(ModelSeq &seq, int64_t n, int64_t freeBefore);

  /// The sampled token of a step scheduled ahead arrives. Before it does,
  /// building or committing the step fails and changes nothing.
  std::string arrive();
  std::string arriveAt(size_t index);

  /// A batch of valid schedules (sometimes with a repeated id): all or
  /// nothing, OutOfBlocks when their blocks together do not fit.
  std::string scheduleBatch();

  /// A batch of valid commits of every sequence whose step ran.
  std::string commitBatch();
  std::string runStep();
  std::string commit();
  std::string append();
  /// Appends a known token, in the manager and the model.
  std::string appendToken(ModelSeq &seq, int32_t token);
  std::string preempt();
  std::string resume();
  std::string fork();
  std::string finish(size_t index);
  std::string finishAny(); // a random sequence, if any
  std::string staleIdOperation();

  // --- Checks --------------------------------------------------------------

  std::string checkAll();
  std::string checkSequence(size_t i);

  /// Every cached block holds what its key names, and its key is the one
  /// recomputed from the tokens it was stored for. The model records, for
  /// each whole block of every known token prefix, the chain key and the
  /// block's identities (the values the kernels write there, each naming
  /// the token prefix up to its position). A tagged block's last W-1
  /// positions (what a resume reads) must hold the identities its tag
  /// names, and the identity in its last position names the token prefix
  /// the block was written for: the key of that prefix must be the tag.
  std::string checkCachedContents();

  ModelConfig config_;
  struct KeyHash {
    size_t operator()(const PrefixKey &key) const { return key.lo; }
  };
  // The chain root of every request of the model (no extra keys).
  PrefixKey root_ = chainRoot(kDefaultPrefixSeed);
  std::unordered_map<PrefixKey, std::vector<uint64_t>, KeyHash> named_;
  // The identity of a block's last position -> the key of its prefix.
  std::unordered_map<uint64_t, PrefixKey> keyOfPrefix_;
  std::vector<PrefixKey> hashScratch_;
  int64_t n_;
  std::vector<int64_t> holders_, liveSlots_, writtenSlots_, positions_;
  std::vector<int32_t> logicals_;
  std::mt19937_64 rng_;
  OwnedStepBuffers buffers_;
  StepSimulator simulator_;
  std::unique_ptr<SequenceManager> manager_;
  std::unique_ptr<StepBuffers> step_;
  std::vector<int32_t> bases_[3];
  std::vector<ModelSeq> seqs_;
  std::vector<SequenceId> finished_;
  int64_t op_ = 0;
  std::string lastOp_;
  int64_t successes_ = 0, failures_ = 0, prefixHits_ = 0, copies_ = 0;
  int64_t arrivals_ = 0; // tokens delivered after their step was scheduled
  int64_t snapshotChecks_ = 0;
  int64_t keyChecks_ = 0;
  int64_t eagleChecks_ = 0;
  int64_t maxEvery_ = config_.snapshotEvery;
  // The hit model: the cached keys (validated after every call), the
  // policy in force, and the predictions of the calls since the last check.
  std::unordered_map<PrefixKey, int32_t, KeyHash> stored_;
  PrefixPolicy policy_ = config_.policy;
  int64_t every_ = config_.snapshotEvery;
  std::vector<PrefixKey> mayAdd_;
  std::vector<std::pair<int64_t, PrefixKey>> mustHold_;
  bool allocating_ = false; // the calls since the last check may evict
  int64_t partials_ = 0;
  int64_t hitChecks_ = 0, mustChecks_ = 0;
  bool everyBlockSeen_ = false;
  // Same-step hits: keys withdrawn by the last call (must be gone), the
  // pending blocks (-> their writer ran), and counts of what was exercised.
  std::vector<PrefixKey> withdrawn_;
  std::unordered_map<int32_t, bool> pending_;
  int64_t sameStepReads_ = 0, orderedSteps_ = 0, invalidations_ = 0,
          refusedBuilds_ = 0;

public:
  /// Checks that saw a sequence holding snapshot blocks.
  int64_t snapshotChecks() const { return snapshotChecks_; }
  int64_t eagleChecks() const { return eagleChecks_; }
  /// Cached blocks whose tag was checked against their tokens' key.
  int64_t keyChecks() const { return keyChecks_; }
  /// Lookups whose answer the hit model predicted.
  int64_t hitChecks() const { return hitChecks_; }
  /// Keys the hit model predicted a commit must store, found stored.
  int64_t mustChecks() const { return mustChecks_; }
  /// Sequences started at another's pending blocks; builds flagged
  /// orderedInsertsRequired; readers invalidated with their writer; builds
  /// refused because a reader's writer was missing.
  int64_t sameStepReads() const { return sameStepReads_; }
  int64_t orderedSteps() const { return orderedSteps_; }
  int64_t invalidations() const { return invalidations_; }
  int64_t refusedBuilds() const { return refusedBuilds_; }
};

} // namespace inkling::modelcheck

#endif // INKLING_RUNTIME_UNITTESTS_MODELCHECKER_H
