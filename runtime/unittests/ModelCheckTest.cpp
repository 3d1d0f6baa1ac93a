//===- ModelCheckTest.cpp - Random operation sequences against a model ----===//
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
//===----------------------------------------------------------------------===//

#include "StepSimulator.h"
#include "TestEngine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <unordered_map>

using namespace inkling;
using namespace inkling::testing;

namespace {

struct ModelConfig {
  int64_t kernel;
  int64_t lookahead;
  int64_t numBlocks;
  uint64_t seed;
  int64_t blockSize = 0; ///< N; 0: the kernel.
  PrefixPolicy policy = PrefixPolicy::Window;
  int64_t snapshotEvery = 2;
  int64_t n() const { return blockSize ? blockSize : kernel; }
};

std::ostream &operator<<(std::ostream &os, const ModelConfig &config) {
  return os << "kernel " << config.kernel << " block size " << config.n()
            << " lookahead " << config.lookahead << " blocks "
            << config.numBlocks << " seed " << config.seed << " policy "
            << prefixPolicyName(config.policy);
}

constexpr int64_t kMaxSequences = 8;
constexpr int64_t kMaxLength = 110;
constexpr int64_t kMaxRows = 10;
constexpr int64_t kNumCols = 64;
constexpr int64_t kMaxTokens = 320;

int64_t opsPerConfig() {
  if (const char *env = std::getenv("INKLING_MODEL_CHECK_OPS"))
    return std::max<long long>(1, std::atoll(env));
  return 12000;
}

class ModelChecker {
public:
  explicit ModelChecker(const ModelConfig &config)
      : config_(config), n_(config.n()), rng_(config.seed),
        buffers_(kMaxRows, kNumCols, kMaxTokens, kMaxRows),
        simulator_(config.numBlocks, config.n(), config.kernel) {
    SequenceManagerConfig managerConfig;
    managerConfig.layout = testLayout(config.kernel, config.n());
    managerConfig.numBlocks = config.numBlocks;
    managerConfig.lookahead = config.lookahead;
    managerConfig.prefixPolicy = config.policy;
    managerConfig.snapshotEvery = config.snapshotEvery;
    manager_ = std::move(*SequenceManager::create(managerConfig));
    step_ = std::make_unique<StepBuffers>(
        std::move(*manager_->bindStepBuffers(buffers_.spec)));
    for (auto &base : bases_)
      for (int i = 0; i < 64; ++i)
        base.push_back(static_cast<int32_t>(rng_() % 3));
  }

  /// Runs until `ops` calls were made (picks that find no target make
  /// none); "" or the first violation, with the state.
  std::string run(int64_t ops) {
    for (op_ = 0; calls() < ops && op_ < 20 * ops; ++op_) {
      int64_t before = calls();
      std::string err = randomOperation();
      if (err.empty() && calls() != before) // picks without a target: no-ops
        err = checkAll();
      if (!err.empty())
        return "op " + std::to_string(op_) + " (" + lastOp_ + "): " + err +
               "\n" + manager_->debugString();
    }
    // Finishing everything returns every block.
    for (const ModelSeq &seq : seqs_)
      if (!manager_->finish(seq.id))
        return "final finish failed";
    if (manager_->pool().numHeldBlocks() != 0)
      return "blocks leaked after finishing every sequence";
    return "";
  }

  int64_t calls() const { return successes_ + failures_; }
  int64_t successes() const { return successes_; }
  int64_t failures() const { return failures_; }
  int64_t prefixHits() const { return prefixHits_; }
  int64_t copies() const { return copies_; }
  int64_t arrivals() const { return arrivals_; }

private:
  enum class State { Idle, Scheduled, Preempted };
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
    int64_t scheduled = 0;
    bool ran = false;     // the scheduled step's kernels ran
    bool pending = false; // scheduled ahead: the first token not yet given
    std::vector<int32_t> stepTokens; // tokens of [0, c + n), drafts included
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
  int64_t blocksNeeded(const ModelSeq &seq, int64_t n) {
    int64_t c = seq.computed, end = c + n;
    int64_t st = std::max(c, end - history() - config_.lookahead);
    int64_t first = st / n_, last = (end - 1) / n_;
    int64_t needed = last - first + 1;
    SequenceInfo info = *manager_->sequenceInfo(seq.id);
    if (!info.blocks.empty() && info.blocks.back().logical == first) {
      int32_t block = info.blocks.back().physical;
      bool shared = manager_->pool().refCount(block) > 1 ||
                    manager_->pool().hasCacheTag(block);
      if (!shared)
        --needed; // written in place
    }
    return needed;
  }

  // --- Operations ----------------------------------------------------------

  std::string switchPolicy() {
    PrefixPolicy policies[] = {PrefixPolicy::Window, PrefixPolicy::Snapshots,
                               PrefixPolicy::EveryBlock};
    PrefixPolicy policy = policies[uniform(0, 2)];
    int64_t every = uniform(1, 4);
    lastOp_ = std::string("set policy ") + prefixPolicyName(policy);
    if (chance(0.2)) // a bad interval: named, nothing changes
      return expect(StatusCode::InvalidArgument, [&] {
        return manager_->setPrefixPolicy(policy, chance(0.5) ? 0 : -every);
      });
    if (std::string err =
            expect(StatusCode::Ok,
                   [&] { return manager_->setPrefixPolicy(policy, every); });
        !err.empty())
      return err;
    maxEvery_ = std::max(maxEvery_, every);
    everyBlockSeen_ |= policy == PrefixPolicy::EveryBlock;
    return "";
  }

  std::string randomOperation() {
    // Long sequences finish, to keep positions within the buffers.
    for (size_t i = 0; i < seqs_.size(); ++i)
      if (static_cast<int64_t>(seqs_[i].tokens.size()) >= kMaxLength - 10)
        return finish(i);
    // Snapshot configurations switch policies now and then (the window
    // configurations draw exactly as before).
    if (config_.policy != PrefixPolicy::Window && chance(0.01))
      return switchPolicy();
    int64_t pick = uniform(0, 99);
    if (pick < 10)
      return add();
    if (pick < 32)
      return schedule();
    if (pick < 50)
      return runStep();
    if (pick < 72)
      return commit();
    if (pick < 77)
      return append();
    if (pick < 81)
      return preempt();
    if (pick < 86)
      return resume();
    if (pick < 90)
      return fork();
    if (pick < 93)
      return seqs_.empty() ? "" : finish(uniform(0, seqs_.size() - 1));
    if (pick < 94)
      return scheduleBatch();
    if (pick < 95)
      return arrive();
    if (pick < 97)
      return commitBatch();
    return staleIdOperation();
  }

  std::string add() {
    lastOp_ = "add";
    if (static_cast<int64_t>(seqs_.size()) >= kMaxSequences)
      return "";
    const auto &base = bases_[uniform(0, 2)];
    std::vector<int32_t> prompt(base.begin(), base.begin() + uniform(1, 40));
    if (chance(0.3))
      for (int64_t i = uniform(0, 5); i > 0; --i)
        prompt.push_back(static_cast<int32_t>(rng_() % 3));
    int64_t len = prompt.size();
    int64_t start = 0;
    StatusCode code = StatusCode::Ok;
    if (chance(0.5)) {
      int64_t maxLength = uniform(0, len);
      StatusOr<int64_t> hit =
          manager_->longestCachedPrefix(prompt.data(), len, maxLength);
      if (!hit)
        return "longestCachedPrefix: " + hit.status().toString();
      if (*hit > maxLength || *hit % n_ != 0)
        return "bad prefix hit " + std::to_string(*hit);
      start = *hit;
      prefixHits_ += start > 0;
    } else if (chance(0.1)) {
      start = uniform(1, len + n_);
      if (start % n_ != 0)
        code = StatusCode::InvalidArgument;
      else if (start > len)
        code = StatusCode::OutOfRange;
      else if (*manager_->longestCachedPrefix(prompt.data(), start, start) !=
               start)
        code = StatusCode::NotFound;
    }
    // Cache points (snapshot policies): sorted positions in [1, len); now
    // and then a bad list, which must fail naming the value.
    std::vector<int64_t> points;
    if (config_.policy != PrefixPolicy::Window && chance(0.5)) {
      for (int64_t q = 1; q <= len; ++q)
        if (chance(0.15))
          points.push_back(q);
      if (!points.empty() && code == StatusCode::Ok && chance(0.1)) {
        int64_t bad = uniform(0, 2);
        if (bad == 0)
          points.back() = len + uniform(1, 3), code = StatusCode::OutOfRange;
        else if (bad == 1)
          points.push_back(points.back()), code = StatusCode::InvalidArgument;
        else
          points.front() = 0, code = StatusCode::OutOfRange;
      }
    }
    lastOp_ = "add len " + std::to_string(len) + " at " +
              std::to_string(start) + " points " +
              std::to_string(points.size());
    StatusOr<SequenceId> id = SequenceId(0);
    if (std::string err =
            expect(code,
                   [&] {
                     id = manager_->addSequence(prompt.data(), len, start,
                                                points.data(), points.size());
                     return id.status();
                   });
        !err.empty())
      return err;
    if (code == StatusCode::Ok) {
      ModelSeq seq;
      seq.id = *id;
      seq.computed = start;
      seq.tokens = prompt;
      seqs_.push_back(seq);
    }
    return "";
  }

  std::string schedule() {
    lastOp_ = "schedule";
    if (seqs_.empty())
      return "";
    size_t index = uniform(0, seqs_.size() - 1);
    std::vector<size_t> idle =
        select([](const ModelSeq &seq) { return seq.state == State::Idle; });
    if (!idle.empty() && chance(0.85))
      index = idle[uniform(0, idle.size() - 1)];
    ModelSeq &seq = seqs_[index];
    int64_t c = seq.computed, known = seq.tokens.size();
    int64_t n = 1;
    int64_t kind = uniform(0, 9);
    if (kind < 3 && config_.lookahead > 0)
      n = 1 + uniform(1, config_.lookahead);
    else if (kind < 6)
      n = uniform(1, std::max<int64_t>(1, known - c));
    else if (kind == 6)
      n = uniform(-1, 0);
    n = std::min(n, kMaxLength - c);
    // Async scheduling: the step's first token may be the one the previous
    // step samples, given later (arrive).
    bool ahead = chance(c >= known ? 0.7 : 0.2);
    StatusCode code = StatusCode::Ok;
    if (seq.state == State::Scheduled || seq.state == State::Preempted)
      code = StatusCode::FailedPrecondition;
    else if (n < 1)
      code = StatusCode::InvalidArgument;
    else if (c >= known && !ahead)
      code = StatusCode::FailedPrecondition;
    else if (blocksNeeded(seq, n) > manager_->pool().numFreeBlocks())
      code = StatusCode::OutOfBlocks;
    lastOp_ = std::string(ahead ? "schedule ahead" : "schedule") + " seq " +
              std::to_string(index) + " n " + std::to_string(n) + " at " +
              std::to_string(c);
    if (std::string err =
            expect(code,
                   [&] {
                     return ahead ? manager_->scheduleAhead(seq.id, n)
                                  : manager_->schedule(seq.id, n);
                   });
        !err.empty())
      return err;
    if (code != StatusCode::Ok)
      return "";
    modelSchedule(seq, n);
    seq.pending = c >= known;
    return "";
  }

  void modelSchedule(ModelSeq &seq, int64_t n) {
    int64_t c = seq.computed, known = seq.tokens.size();
    seq.state = State::Scheduled;
    seq.scheduled = n;
    seq.ran = false;
    seq.stepTokens.assign(seq.tokens.begin(),
                          seq.tokens.begin() + std::min(known, c + n));
    while (static_cast<int64_t>(seq.stepTokens.size()) < c + n)
      seq.stepTokens.push_back(static_cast<int32_t>(rng_() % 2)); // drafts
  }

  /// The sampled token of a step scheduled ahead arrives. Before it does,
  /// building or committing the step fails and changes nothing.
  std::string arrive() {
    lastOp_ = "arrive";
    std::vector<size_t> waiting =
        select([](const ModelSeq &seq) { return seq.pending; });
    if (waiting.empty())
      return "";
    return arriveAt(waiting[uniform(0, waiting.size() - 1)]);
  }

  std::string arriveAt(size_t index) {
    ModelSeq &seq = seqs_[index];
    if (chance(0.3)) {
      lastOp_ = "commit before the token arrived, seq " + std::to_string(index);
      if (std::string err = expect(StatusCode::FailedPrecondition,
                                   [&] { return manager_->commit(seq.id, 1); });
          !err.empty())
        return err;
    }
    int32_t token = seq.stepTokens[seq.computed];
    lastOp_ = "arrive seq " + std::to_string(index);
    if (std::string err =
            expect(StatusCode::Ok,
                   [&] { return manager_->appendTokens(seq.id, &token, 1); });
        !err.empty())
      return err;
    seq.tokens.push_back(token);
    seq.pending = false;
    ++arrivals_;
    return "";
  }

  /// A batch of valid schedules (sometimes with a repeated id): all or
  /// nothing, OutOfBlocks when their blocks together do not fit.
  std::string scheduleBatch() {
    lastOp_ = "schedule batch";
    std::vector<size_t> chosen = select([&](const ModelSeq &seq) {
      return seq.state == State::Idle &&
             seq.computed < static_cast<int64_t>(seq.tokens.size()) &&
             chance(0.7);
    });
    if (chosen.empty())
      return "";
    std::vector<SequenceId> ids;
    std::vector<int64_t> counts;
    int64_t needed = 0;
    for (size_t i : chosen) {
      ModelSeq &seq = seqs_[i];
      int64_t remaining = seq.tokens.size() - seq.computed;
      int64_t n = chance(0.7) ? 1 : uniform(1, std::min<int64_t>(remaining, 8));
      n = std::min(n, kMaxLength - seq.computed);
      ids.push_back(seq.id);
      counts.push_back(n);
      needed += blocksNeeded(seq, n);
    }
    StatusCode code = needed > manager_->pool().numFreeBlocks()
                          ? StatusCode::OutOfBlocks
                          : StatusCode::Ok;
    if (chance(0.1)) {
      ids.push_back(ids.front());
      counts.push_back(1);
      code = StatusCode::InvalidArgument;
    }
    if (std::string err = expect(code,
                                 [&] {
                                   return manager_->scheduleBatch(
                                       ids.data(), counts.data(), ids.size());
                                 });
        !err.empty())
      return err;
    if (code == StatusCode::Ok)
      for (size_t k = 0; k < chosen.size(); ++k)
        modelSchedule(seqs_[chosen[k]], counts[k]);
    return "";
  }

  /// A batch of valid commits of every sequence whose step ran.
  std::string commitBatch() {
    lastOp_ = "commit batch";
    std::vector<size_t> ran = select([](const ModelSeq &seq) {
      return seq.state == State::Scheduled && seq.ran;
    });
    if (ran.empty())
      return "";
    std::vector<SequenceId> ids;
    std::vector<int64_t> accepted, offsets = {0};
    std::vector<int32_t> tokens;
    std::vector<std::vector<int32_t>> appended;
    for (size_t i : ran) {
      ModelSeq &seq = seqs_[i];
      int64_t n = seq.scheduled, c = seq.computed;
      int64_t k = uniform(std::max<int64_t>(0, n - config_.lookahead), n);
      std::vector<int32_t> fresh;
      for (int64_t p = seq.tokens.size(); p < c + k; ++p)
        fresh.push_back(seq.stepTokens[p]);
      if (c + k >= static_cast<int64_t>(seq.tokens.size() + fresh.size()))
        fresh.push_back(static_cast<int32_t>(rng_() % 2)); // sampled
      ids.push_back(seq.id);
      accepted.push_back(k);
      tokens.insert(tokens.end(), fresh.begin(), fresh.end());
      offsets.push_back(tokens.size());
      appended.push_back(fresh);
    }
    if (std::string err =
            expect(StatusCode::Ok,
                   [&] {
                     return manager_->commitBatch(ids.data(), accepted.data(),
                                                  offsets.data(), tokens.data(),
                                                  ids.size());
                   });
        !err.empty())
      return err;
    for (size_t k = 0; k < ran.size(); ++k) {
      ModelSeq &seq = seqs_[ran[k]];
      seq.tokens.insert(seq.tokens.end(), appended[k].begin(),
                        appended[k].end());
      seq.computed += accepted[k];
      seq.state = State::Idle;
      seq.scheduled = 0;
    }
    return "";
  }

  std::string runStep() {
    lastOp_ = "run step";
    std::vector<size_t> ready = select([](const ModelSeq &seq) {
      return seq.state == State::Scheduled && !seq.ran;
    });
    if (ready.empty())
      return "";
    std::shuffle(ready.begin(), ready.end(), rng_);
    ready.resize(uniform(1, ready.size()));
    // A step scheduled ahead whose token has not arrived: the build fails
    // (naming the sequence), changes nothing and writes no buffer.
    auto waiting = std::find_if(ready.begin(), ready.end(),
                                [&](size_t i) { return seqs_[i].pending; });
    if (waiting != ready.end() && chance(0.5)) {
      // The tokens arrive before the build.
      for (size_t i : ready)
        if (seqs_[i].pending)
          if (std::string err = arriveAt(i); !err.empty())
            return err;
    } else if (waiting != ready.end()) {
      std::vector<SequenceId> all;
      for (size_t i : ready)
        all.push_back(seqs_[i].id);
      std::vector<int32_t> table = buffers_.blockTable;
      std::vector<int64_t> slots = buffers_.slotMapping;
      lastOp_ = "build before a token arrived";
      Status status;
      if (std::string err = expect(
              StatusCode::FailedPrecondition,
              [&] {
                return manager_
                    ->buildStep(all.data(), all.size(), StepShape(), *step_)
                    .status();
              },
              &status);
          !err.empty())
        return err;
      if (status.message().find("build step") == std::string::npos)
        return "the error does not name the call: " + status.toString();
      if (table != buffers_.blockTable || slots != buffers_.slotMapping)
        return "failed build wrote into the buffers";
      return "";
    }
    std::vector<SequenceId> ids;
    int64_t tokens = 0;
    for (size_t i : ready) {
      ids.push_back(seqs_[i].id);
      tokens += seqs_[i].scheduled;
    }
    StepShape shape;
    shape.numRows = std::min<int64_t>(kMaxRows, ids.size() + uniform(0, 2));
    shape.numTokens = std::min<int64_t>(kMaxTokens, tokens + uniform(0, 5));

    if (chance(0.1)) {
      // A bad batch: a repeated, unscheduled or finished id.
      std::vector<SequenceId> bad = ids;
      StatusCode code = StatusCode::InvalidArgument;
      int64_t kind = uniform(0, 2);
      if (kind == 0) {
        bad.push_back(bad[0]);
      } else if (kind == 1 && !finished_.empty()) {
        bad.push_back(finished_[uniform(0, finished_.size() - 1)]);
        code = StatusCode::NotFound;
      } else {
        bad.push_back(bad[0]);
      }
      std::vector<int32_t> table = buffers_.blockTable;
      std::vector<int64_t> slots = buffers_.slotMapping;
      lastOp_ = "bad build";
      if (std::string err = expect(code,
                                   [&] {
                                     return manager_
                                         ->buildStep(bad.data(), bad.size(),
                                                     StepShape(), *step_)
                                         .status();
                                   });
          !err.empty())
        return err;
      if (table != buffers_.blockTable || slots != buffers_.slotMapping)
        return "failed build wrote into the buffers";
    }

    lastOp_ = "build " + std::to_string(ids.size()) + " rows";
    StatusOr<StepInfo> info =
        manager_->buildStep(ids.data(), ids.size(), shape, *step_);
    if (!info)
      return "build: " + info.status().toString();
    ++successes_;
    if (info->numTokens != tokens || info->numPaddedTokens != shape.numTokens)
      return "build reported wrong token counts";
    copies_ += info->numCopies;
    std::vector<std::vector<uint64_t>> identities;
    for (size_t i : ready)
      identities.push_back(prefixIdentities(seqs_[i].stepTokens));
    if (std::string err = simulator_.run(buffers_.spec, *info, identities);
        !err.empty())
      return "kernel: " + err;
    for (int64_t b = 0; b < shape.numRows; ++b) {
      int64_t begin = buffers_.queryStartLoc[b],
              end = buffers_.queryStartLoc[b + 1];
      int64_t expected = b < static_cast<int64_t>(ready.size())
                             ? seqs_[ready[b]].scheduled
                             : 0;
      if (end - begin != expected)
        return "query_start_loc of row " + std::to_string(b) + " is wrong";
      int64_t computed =
          b < static_cast<int64_t>(ready.size()) ? seqs_[ready[b]].computed : 0;
      if (buffers_.numComputed[b] != computed)
        return "num_computed of row " + std::to_string(b) + " is wrong";
    }
    if (std::string err = checkBlockTable(*manager_, buffers_.spec, ids);
        !err.empty())
      return err;
    for (size_t i : ready)
      seqs_[i].ran = true;
    return "";
  }

  std::string commit() {
    lastOp_ = "commit";
    std::vector<size_t> ran = select([](const ModelSeq &seq) {
      return seq.state == State::Scheduled && seq.ran;
    });
    if (ran.empty())
      return "";
    size_t index = ran[uniform(0, ran.size() - 1)];
    ModelSeq &seq = seqs_[index];
    int64_t n = seq.scheduled, c = seq.computed;
    int64_t lowest = std::max<int64_t>(0, n - config_.lookahead);
    int64_t k = uniform(lowest, n);
    StatusCode code = StatusCode::Ok;
    if (chance(0.04)) {
      k = chance(0.5) ? n + 1 : lowest - 1;
      code = StatusCode::OutOfRange;
    }
    std::vector<int32_t> fresh;
    for (int64_t p = seq.tokens.size(); p < c + k && p < c + n; ++p)
      fresh.push_back(seq.stepTokens[p]);
    bool sample =
        c + k >= static_cast<int64_t>(seq.tokens.size() + fresh.size()) &&
        code == StatusCode::Ok;
    if (sample && chance(0.8))
      fresh.push_back(static_cast<int32_t>(rng_() % 2));
    if (code == StatusCode::Ok && !fresh.empty() && chance(0.03) &&
        c + k > static_cast<int64_t>(seq.tokens.size())) {
      fresh.clear(); // accepted drafts withheld
      code = StatusCode::InvalidArgument;
    }
    lastOp_ = "commit seq " + std::to_string(index) + " k " +
              std::to_string(k) + " of " + std::to_string(n);
    if (std::string err = expect(code,
                                 [&] {
                                   return manager_->commit(
                                       seq.id, k, fresh.data(),
                                       static_cast<int64_t>(fresh.size()));
                                 });
        !err.empty())
      return err;
    if (code != StatusCode::Ok)
      return "";
    seq.tokens.insert(seq.tokens.end(), fresh.begin(), fresh.end());
    seq.computed = c + k;
    seq.state = State::Idle;
    seq.scheduled = 0;
    return "";
  }

  std::string append() {
    lastOp_ = "append";
    if (seqs_.empty())
      return "";
    ModelSeq &seq = seqs_[uniform(0, seqs_.size() - 1)];
    // Appending inside a running step would contradict its drafts.
    if (seq.state == State::Scheduled)
      return "";
    int32_t token = static_cast<int32_t>(rng_() % 2);
    if (std::string err =
            expect(StatusCode::Ok,
                   [&] { return manager_->appendTokens(seq.id, &token, 1); });
        !err.empty())
      return err;
    seq.tokens.push_back(token);
    return "";
  }

  std::string preempt() {
    lastOp_ = "preempt";
    if (seqs_.empty())
      return "";
    ModelSeq &seq = seqs_[uniform(0, seqs_.size() - 1)];
    StatusCode code = seq.state == State::Preempted
                          ? StatusCode::FailedPrecondition
                          : StatusCode::Ok;
    if (std::string err =
            expect(code, [&] { return manager_->preempt(seq.id); });
        !err.empty())
      return err;
    seq.state = State::Preempted;
    seq.computed = seq.scheduled = 0;
    seq.pending = false; // the step (and its token) is dropped
    return "";
  }

  std::string resume() {
    lastOp_ = "resume";
    if (seqs_.empty())
      return "";
    ModelSeq &seq = seqs_[uniform(0, seqs_.size() - 1)];
    int64_t start = 0;
    StatusCode code = seq.state == State::Preempted
                          ? StatusCode::Ok
                          : StatusCode::FailedPrecondition;
    if (chance(0.6)) {
      int64_t maxLength = uniform(0, seq.tokens.size());
      StatusOr<int64_t> hit = manager_->longestCachedPrefix(
          seq.tokens.data(), seq.tokens.size(), maxLength);
      if (!hit || *hit > maxLength || *hit % n_ != 0)
        return "bad prefix hit for a sequence";
      start = *hit;
      prefixHits_ += start > 0 && code == StatusCode::Ok;
    }
    if (chance(0.2)) {
      // Without token ids: a hit among the hashes the sequence still keeps.
      if (start > 0) {
        StatusOr<int64_t> kept = manager_->longestCachedPrefix(seq.id, start);
        if (!kept || *kept > start || *kept % n_ != 0)
          return "bad kept-window prefix hit";
        start = *kept;
      }
      lastOp_ = "resume without tokens at " + std::to_string(start);
      if (std::string err =
              expect(code, [&] { return manager_->resume(seq.id, start); });
          !err.empty())
        return err;
      if (code == StatusCode::Ok) {
        seq.state = State::Idle;
        seq.computed = start;
      }
      return "";
    }
    // The engine passes the sequence's token ids; sometimes wrong ones.
    std::vector<int32_t> tokens = seq.tokens;
    if (code == StatusCode::Ok && !tokens.empty() && chance(0.1)) {
      if (chance(0.5))
        tokens.pop_back();
      else
        tokens[uniform(0, tokens.size() - 1)] ^= 1;
      code = StatusCode::InvalidArgument;
    }
    lastOp_ = "resume at " + std::to_string(start);
    if (std::string err = expect(
            code, [&] { return manager_->resume(seq.id, tokens, start); });
        !err.empty())
      return err;
    if (code == StatusCode::Ok) {
      seq.state = State::Idle;
      seq.computed = start;
    }
    return "";
  }

  std::string fork() {
    lastOp_ = "fork";
    if (seqs_.empty() || static_cast<int64_t>(seqs_.size()) >= kMaxSequences)
      return "";
    size_t index = uniform(0, seqs_.size() - 1);
    StatusCode code = seqs_[index].state == State::Idle
                          ? StatusCode::Ok
                          : StatusCode::FailedPrecondition;
    StatusOr<SequenceId> child = SequenceId(0);
    if (std::string err = expect(code,
                                 [&] {
                                   child = manager_->fork(seqs_[index].id);
                                   return child.status();
                                 });
        !err.empty())
      return err;
    if (code == StatusCode::Ok) {
      ModelSeq copy = seqs_[index];
      copy.id = *child;
      seqs_.push_back(copy);
    }
    return "";
  }

  std::string finish(size_t index) {
    lastOp_ = "finish";
    SequenceId id = seqs_[index].id;
    if (std::string err =
            expect(StatusCode::Ok, [&] { return manager_->finish(id); });
        !err.empty())
      return err;
    seqs_.erase(seqs_.begin() + index);
    finished_.push_back(id);
    return "";
  }

  std::string staleIdOperation() {
    lastOp_ = "stale id";
    if (finished_.empty())
      return "";
    SequenceId id = finished_[uniform(0, finished_.size() - 1)];
    int32_t token = 1;
    switch (uniform(0, 4)) {
    case 0:
      return expect(StatusCode::NotFound,
                    [&] { return manager_->schedule(id, 1); });
    case 1:
      return expect(StatusCode::NotFound,
                    [&] { return manager_->commit(id, 1); });
    case 2:
      return expect(StatusCode::NotFound,
                    [&] { return manager_->fork(id).status(); });
    case 3:
      return expect(StatusCode::NotFound,
                    [&] { return manager_->appendTokens(id, &token, 1); });
    default:
      return expect(StatusCode::NotFound, [&] { return manager_->finish(id); });
    }
  }

  // --- Checks --------------------------------------------------------------

  std::string checkAll() {
    const BlockPool &pool = manager_->pool();
    // Scratch buffers are members: the check runs after every operation.
    std::vector<int64_t> &holders = holders_;
    std::vector<int64_t> &liveSlots = liveSlots_;
    std::vector<int64_t> &writtenSlots = writtenSlots_;
    std::vector<int64_t> &positions = positions_;
    std::vector<int32_t> &logicals = logicals_;
    holders.assign(pool.numBlocks(), 0);
    liveSlots.clear();
    writtenSlots.clear();
    // The bounds of SequenceManager.h, from the model: span(m) blocks hold
    // m consecutive positions at worst alignment.
    auto span = [&](int64_t m) { return m == 0 ? 0 : (m + n_ - 2) / n_ + 1; };
    int64_t idleBound = span(history());
    int64_t stepBound = span(history()) + span(history() + config_.lookahead);
    for (size_t i = 0; i < seqs_.size(); ++i) {
      ModelSeq &seq = seqs_[i];
      StatusOr<SequenceInfo> found = manager_->sequenceInfo(seq.id);
      if (!found)
        return "live sequence lost: " + found.status().toString();
      const SequenceInfo &info = *found;
      std::string name = "seq " + std::to_string(i); // short: no allocation
      const std::vector<uint64_t> &identities = seq.knownIdentities();
      SequenceState want = seq.state == State::Idle ? SequenceState::Idle
                           : seq.state == State::Scheduled
                               ? SequenceState::Scheduled
                               : SequenceState::Preempted;
      if (info.state != want || info.numComputed != seq.computed ||
          info.numTokens != static_cast<int64_t>(seq.tokens.size()) ||
          info.numScheduled != seq.scheduled)
        return name + " differs from the model";

      // The live window, from the model alone.
      int64_t c = seq.computed;
      positions.clear(); // history, then stored positions
      if (seq.state != State::Preempted)
        for (int64_t q = std::max<int64_t>(0, c - history()); q < c; ++q)
          positions.push_back(q);
      int64_t numHistory = positions.size();
      if (seq.state == State::Scheduled) {
        int64_t end = c + seq.scheduled;
        int64_t st = std::max(c, end - history() - config_.lookahead);
        // A snapshot next to the window extends it down (never up).
        if (config_.policy != PrefixPolicy::Window) {
          if (info.storeFrom < c || info.storeFrom > st)
            return name + " stores from " + std::to_string(info.storeFrom) +
                   ", outside [c, st] = [" + std::to_string(c) + ", " +
                   std::to_string(st) + "]";
          st = info.storeFrom;
        }
        for (int64_t q = st; q < end; ++q)
          positions.push_back(q);
      }
      // Snapshot blocks: only during a step, fresh, below the window,
      // within their bound; held once.
      if (!info.snapshotBlocks.empty()) {
        if (seq.state != State::Scheduled)
          return name + " holds snapshot blocks outside a step";
        // maxSnapshotBlocks(): the window's bound plus a hit frontier.
        int64_t snapBound = stepBound + maxEvery_ * (span(history() + 1) - 1);
        if (config_.policy == PrefixPolicy::Snapshots && !everyBlockSeen_ &&
            static_cast<int64_t>(info.snapshotBlocks.size()) > snapBound)
          return name + " holds " + std::to_string(info.snapshotBlocks.size()) +
                 " snapshot blocks, bound " + std::to_string(snapBound);
        ++snapshotChecks_;
        for (const MappedBlock &snap : info.snapshotBlocks) {
          if (snap.logical < c / n_ || snap.logical >= info.storeFrom / n_)
            return name + " snapshots logical block " +
                   std::to_string(snap.logical) + " outside its prefill";
          if (!pool.isUsable(snap.physical) || pool.hasCacheTag(snap.physical))
            return name + " snapshots into an unusable or cached block";
          ++holders[snap.physical];
        }
      }
      logicals.clear();
      for (int64_t q : positions)
        if (logicals.empty() || logicals.back() != q / n_)
          logicals.push_back(static_cast<int32_t>(q / n_));
      std::sort(logicals.begin(), logicals.end());
      logicals.erase(std::unique(logicals.begin(), logicals.end()),
                     logicals.end());
      if (logicals.size() != info.blocks.size())
        return name + " holds " + std::to_string(info.blocks.size()) +
               " blocks, its window spans " + std::to_string(logicals.size());
      for (size_t k = 0; k < logicals.size(); ++k)
        if (info.blocks[k].logical != logicals[k])
          return name + " maps the wrong logical blocks";
      int64_t held = info.blocks.size() + (info.hasCopy ? 1 : 0);
      int64_t bound = seq.state == State::Scheduled ? stepBound : idleBound;
      if (held > bound)
        return name + " holds " + std::to_string(held) + " blocks, bound " +
               std::to_string(bound);
      if (info.hasCopy && seq.state != State::Scheduled)
        return name + " has a copy outside a step";

      for (const MappedBlock &block : info.blocks) {
        if (!pool.isUsable(block.physical))
          return name + " maps an unusable block";
        ++holders[block.physical];
      }
      if (info.hasCopy)
        ++holders[info.copy.src];
      for (size_t k = 0; k < positions.size(); ++k) {
        int64_t q = positions[k];
        int32_t block = 0;
        for (const MappedBlock &mapped : info.blocks)
          if (mapped.logical == q / n_)
            block = mapped.physical;
        int64_t slot = int64_t(block) * n_ + q % n_;
        if (static_cast<int64_t>(k) < numHistory) {
          liveSlots.push_back(slot);
          // Idle: the history holds this sequence's own values.
          if (seq.state == State::Idle &&
              simulator_.value(slot) != identities[q])
            return name + " history position " + std::to_string(q) +
                   " holds a wrong value in slot " + std::to_string(slot);
        } else if (q >= c) {
          writtenSlots.push_back(slot);
        }
      }
    }
    std::sort(writtenSlots.begin(), writtenSlots.end());
    if (std::adjacent_find(writtenSlots.begin(), writtenSlots.end()) !=
        writtenSlots.end())
      return "two stored positions share a slot";
    for (int64_t slot : liveSlots)
      if (std::binary_search(writtenSlots.begin(), writtenSlots.end(), slot))
        return "slot " + std::to_string(slot) +
               " is live history and written by a step";
    if (std::string err = checkCachedContents(); !err.empty())
      return err;
    int64_t distinct = 0;
    for (int32_t block = 1; block < pool.numBlocks(); ++block) {
      if (holders[block] != pool.refCount(block))
        return "block " + std::to_string(block) + " has reference count " +
               std::to_string(pool.refCount(block)) + " and " +
               std::to_string(holders[block]) + " holders";
      distinct += holders[block] > 0;
    }
    if (distinct + pool.numFreeBlocks() != pool.numUsableBlocks())
      return "held + free != capacity: a block leaked";
    if (distinct > pool.numUsableBlocks())
      return "capacity exceeded";
    return "";
  }

  /// Every cached block holds what its key names, and its key is the one
  /// recomputed from the tokens it was stored for. The model records, for
  /// each whole block of every known token prefix, the chain key and the
  /// block's identities (the values the kernels write there, each naming
  /// the token prefix up to its position). A tagged block's last W-1
  /// positions (what a resume reads) must hold the identities its tag
  /// names, and the identity in its last position names the token prefix
  /// the block was written for: the key of that prefix must be the tag.
  std::string checkCachedContents() {
    for (ModelSeq &seq : seqs_) {
      const std::vector<uint64_t> &identities = seq.knownIdentities();
      hashScratch_.clear();
      appendChainHashes(root_, seq.tokens.data(), seq.tokens.size(), n_,
                        hashScratch_);
      for (size_t j = 0; j < hashScratch_.size(); ++j) {
        named_.try_emplace(hashScratch_[j], identities.begin() + j * n_,
                           identities.begin() + (j + 1) * n_);
        keyOfPrefix_.try_emplace(identities[(j + 1) * n_ - 1], hashScratch_[j]);
      }
    }
    const BlockPool &pool = manager_->pool();
    for (int32_t block = 1; block < pool.numBlocks(); ++block) {
      if (!pool.hasCacheTag(block))
        continue;
      PrefixKey tag = pool.cacheTag(block);
      auto it = named_.find(tag);
      if (it == named_.end())
        return "cached block " + std::to_string(block) +
               " has a tag that names no known prefix";
      for (int64_t k = std::max<int64_t>(0, n_ - history()); k < n_; ++k)
        if (simulator_.value(block * n_ + k) != it->second[k])
          return "cached block " + std::to_string(block) + " offset " +
                 std::to_string(k) + " differs from what its key names";
      auto stored = keyOfPrefix_.find(simulator_.value(block * n_ + n_ - 1));
      if (stored == keyOfPrefix_.end() || stored->second != tag)
        return "cached block " + std::to_string(block) +
               " is tagged with a key other than its tokens' key";
      ++keyChecks_;
    }
    return "";
  }

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
  int64_t maxEvery_ = config_.snapshotEvery;
  bool everyBlockSeen_ = false;

public:
  /// Checks that saw a sequence holding snapshot blocks.
  int64_t snapshotChecks() const { return snapshotChecks_; }
  /// Cached blocks whose tag was checked against their tokens' key.
  int64_t keyChecks() const { return keyChecks_; }
};

// 16 configurations x 12000 calls = 192,000 checked operations per run. The
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
    {5, 2, 48, 23, 3, PrefixPolicy::EveryBlock}};

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
            << " cached-block key checks, " << checker.arrivals()
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
                                  "_blocks" + std::to_string(c.numBlocks) +
                                  "_seed" + std::to_string(c.seed);
                         });

#else

// The model check against a runtime with one injected bug
// (the INKLING_MUTANT sites of runtime/lib/Sequence*.cpp, compiled into this
// test's copy of the runtime only): some configuration must report it. One mutant:
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

INSTANTIATE_TEST_SUITE_P(Mutants, ModelCheckMutantTest,
                         ::testing::Values("no-copy-on-write", "no-lookahead",
                                           "leak-copy-source",
                                           "snapshot-next-hash"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           std::string name = i.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

#endif // INKLING_RUNTIME_MUTANTS

} // namespace
