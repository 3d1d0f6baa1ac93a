//===- ModelCheckOperations.cpp - The run and whole-sequence calls --------===//
//
// The model check's run loop, and its operations on whole sequences: add
// (with and without prefix hits and cache points), append, preempt, resume,
// fork, finish, calls with stale ids, policy switches.
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

#include <utility>

namespace inkling::modelcheck {

ModelChecker::ModelChecker(const ModelConfig &config)
    : config_(config), n_(config.n()), rng_(config.seed),
      buffers_(kMaxRows, kNumCols, kMaxTokens, kMaxRows),
      simulator_(config.numBlocks, config.n(), config.kernel) {
  manager_ = makeManager(config.kernel, config.n(), config.numBlocks,
                         config.lookahead, config.policy, config.snapshotEvery);
  manager_->setSameStepHits(config.sameStepHits);
  step_ = std::make_unique<StepBuffers>(
      std::move(*manager_->bindStepBuffers(buffers_.spec)));
  for (auto &base : bases_)
    for (int i = 0; i < 64; ++i)
      base.push_back(static_cast<int32_t>(rng_() % 3));
}

std::string ModelChecker::run(int64_t ops) {
  for (op_ = 0; calls() < ops && op_ < 20 * ops; ++op_) {
    int64_t before = calls();
    std::string err = randomOperation();
    if (err.empty() && calls() != before) // picks without a target: no-ops
      err = checkAll();
    if (!err.empty())
      return "op " + std::to_string(op_) + " (" + lastOp_ + "): " + err + "\n" +
             manager_->debugString();
  }
  // Finishing everything returns every block.
  for (const ModelSeq &seq : seqs_)
    if (!manager_->finish(seq.id))
      return "final finish failed";
  if (manager_->pool().numHeldBlocks() != 0)
    return "blocks leaked after finishing every sequence";
  return "";
}

std::string ModelChecker::switchPolicy() {
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
  policy_ = policy;
  every_ = every;
  everyBlockSeen_ |= policy == PrefixPolicy::EveryBlock;
  return "";
}

std::string ModelChecker::randomOperation() {
  // Long sequences finish, to keep positions within the buffers.
  for (size_t i = 0; i < seqs_.size(); ++i)
    if (static_cast<int64_t>(seqs_[i].tokens.size()) >= kMaxLength - 10)
      return finish(i);
  // Snapshot configurations switch policies now and then (the window
  // configurations draw exactly as before).
  if (config_.policy != PrefixPolicy::Window && chance(0.01))
    return switchPolicy();
  // Each operation's share of the draws, in percent.
  using Operation = std::string (ModelChecker::*)();
  static constexpr std::pair<int64_t, Operation> kOperations[] = {
      {10, &ModelChecker::add},
      {22, &ModelChecker::schedule},
      {18, &ModelChecker::runStep},
      {22, &ModelChecker::commit},
      {5, &ModelChecker::append},
      {4, &ModelChecker::preempt},
      {5, &ModelChecker::resume},
      {4, &ModelChecker::fork},
      {3, &ModelChecker::finishAny},
      {1, &ModelChecker::scheduleBatch},
      {1, &ModelChecker::arrive},
      {2, &ModelChecker::commitBatch},
      {3, &ModelChecker::staleIdOperation}};
  int64_t pick = uniform(0, 99);
  for (auto [weight, operation] : kOperations) {
    if (pick < weight)
      return (this->*operation)();
    pick -= weight;
  }
  return "";
}

std::string ModelChecker::finishAny() {
  return seqs_.empty() ? "" : finish(uniform(0, seqs_.size() - 1));
}

// The EAGLE/MTP rule (vLLM's use_eagle) against the hit model, on the same
// cache (no random draws: the other operations see the same stream): the
// hit e is the largest multiple of N whose history and block e/N are
// recorded, with e + N within the cap (ModelCheckHits.cpp).
std::string ModelChecker::checkEagleHit(const std::vector<int32_t> &prompt,
                                        int64_t maxLength) {
  int64_t len = prompt.size();
  manager_->setDropLastMatchedBlock(true);
  StatusOr<int64_t> eagle =
      manager_->longestCachedPrefix(prompt.data(), len, maxLength);
  manager_->setDropLastMatchedBlock(false);
  if (!eagle)
    return "EAGLE lookup: " + eagle.status().toString();
  ++eagleChecks_;
  int64_t want = modelHit(prompt.data(), len, maxLength, /*drop=*/true);
  if (*eagle != want)
    return "EAGLE hit " + std::to_string(*eagle) + ", the hit model's " +
           std::to_string(want) + " (max " + std::to_string(maxLength) + ")";
  return "";
}

std::string ModelChecker::add() {
  lastOp_ = "add";
  // Same-step hits: make room for a reader of a step being prefilled.
  if (config_.sameStepHits && chance(0.5) &&
      static_cast<int64_t>(seqs_.size()) >= kMaxSequences) {
    std::vector<size_t> plain = select([](const ModelSeq &seq) {
      return seq.pendingKeys.empty() && seq.state != State::Scheduled;
    });
    if (!plain.empty())
      if (std::string err = finish(plain[uniform(0, plain.size() - 1)]);
          !err.empty())
        return err;
    lastOp_ = "add";
  }
  if (static_cast<int64_t>(seqs_.size()) >= kMaxSequences)
    return "";
  const auto &base = bases_[uniform(0, 2)];
  std::vector<int32_t> prompt(base.begin(), base.begin() + uniform(1, 40));
  if (chance(0.3))
    for (int64_t i = uniform(0, 5); i > 0; --i)
      prompt.push_back(static_cast<int32_t>(rng_() % 3));
  // Same-step hits: often a prompt sharing a prefix with a step being
  // prefilled now, looked up (vLLM's two requests admitted in one step).
  bool sameStep = false;
  if (config_.sameStepHits && chance(0.6)) {
    std::vector<size_t> writers =
        select([](const ModelSeq &seq) { return !seq.pendingKeys.empty(); });
    if (!writers.empty()) {
      const ModelSeq &writer = seqs_[writers[uniform(0, writers.size() - 1)]];
      prompt.assign(writer.tokens.begin(),
                    writer.tokens.begin() +
                        uniform((writer.tokens.size() + 1) / 2,
                                std::min<int64_t>(writer.tokens.size(),
                                                  kMaxLength - 20)));
      for (int64_t i = uniform(0, 4); i > 0; --i)
        prompt.push_back(static_cast<int32_t>(rng_() % 3));
      sameStep = true;
    }
  }
  int64_t len = prompt.size();
  int64_t start = 0;
  StatusCode code = StatusCode::Ok;
  if (sameStep || chance(0.5)) {
    int64_t maxLength = sameStep ? len - 1 : uniform(0, len);
    StatusOr<int64_t> hit =
        manager_->longestCachedPrefix(prompt.data(), len, maxLength);
    if (!hit)
      return "longestCachedPrefix: " + hit.status().toString();
    int64_t want = modelHit(prompt.data(), len, maxLength);
    ++hitChecks_;
    if (*hit != want)
      return "prefix hit " + std::to_string(*hit) + ", the hit model's " +
             std::to_string(want) + " (max " + std::to_string(maxLength) + ")";
    if (std::string err = checkEagleHit(prompt, maxLength); !err.empty())
      return err;
    start = *hit;
    prefixHits_ += start > 0;
  } else if (chance(0.1)) {
    start = uniform(1, len + n_);
    if (start % n_ != 0)
      code = StatusCode::InvalidArgument;
    else if (start > len)
      code = StatusCode::OutOfRange;
    else if (!storedAt(chainKeys(prompt.data(), start), start))
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
  lastOp_ = "add len " + std::to_string(len) + " at " + std::to_string(start) +
            " points " + std::to_string(points.size());
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
    seq.cachePoints = points;
    seq.hitFrom = start;
    seq.partial = freshPartial();
    seqs_.push_back(seq);
    if (std::string err = noteReads(seqs_.back(), start); !err.empty())
      return err;
    // The engine schedules what it admitted, in the same step.
    if (sameStep && chance(0.9))
      return scheduleAt(seqs_.size() - 1, len - start, false);
  }
  return "";
}

std::string ModelChecker::append() {
  lastOp_ = "append";
  if (seqs_.empty())
    return "";
  ModelSeq &seq = seqs_[uniform(0, seqs_.size() - 1)];
  // Appending inside a running step would contradict its drafts.
  if (seq.state == State::Scheduled)
    return "";
  return appendToken(seq, static_cast<int32_t>(rng_() % 2));
}

std::string ModelChecker::appendToken(ModelSeq &seq, int32_t token) {
  if (std::string err =
          expect(StatusCode::Ok,
                 [&] { return manager_->appendTokens(seq.id, &token, 1); });
      !err.empty())
    return err;
  seq.tokens.push_back(token);
  return "";
}

std::string ModelChecker::preempt() {
  lastOp_ = "preempt";
  if (seqs_.empty())
    return "";
  size_t index = uniform(0, seqs_.size() - 1);
  ModelSeq &seq = seqs_[index];
  StatusCode code = seq.state == State::Preempted
                        ? StatusCode::FailedPrecondition
                        : StatusCode::Ok;
  // A dropped step withdraws its pending entries, with their readers.
  std::vector<SequenceId> invalid;
  if (code == StatusCode::Ok)
    dropStep(index, invalid);
  if (std::string err = expect(code, [&] { return manager_->preempt(seq.id); });
      !err.empty())
    return err;
  if (std::string err = checkInvalidated(invalid); !err.empty())
    return err;
  seq.state = State::Preempted;
  seq.computed = seq.scheduled = 0;
  seq.plan = StepPlan(); // a dropped step stores nothing
  seq.pending = false;   // the step (and its token) is dropped
  return "";
}

std::string ModelChecker::resume() {
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
    if (!hit)
      return "longestCachedPrefix: " + hit.status().toString();
    int64_t want = modelHit(seq.tokens.data(), seq.tokens.size(), maxLength);
    ++hitChecks_;
    if (*hit != want)
      return "prefix hit " + std::to_string(*hit) +
             " for a sequence, the "
             "hit model's " +
             std::to_string(want);
    start = *hit;
    prefixHits_ += start > 0 && code == StatusCode::Ok;
  }
  std::string err;
  if (chance(0.2)) {
    // Without token ids: a hit among the hashes the sequence still keeps.
    if (start > 0) {
      StatusOr<int64_t> kept = manager_->longestCachedPrefix(seq.id, start);
      // The hashes are all kept while c < 32 blocks (they are dropped in
      // batches of 32): then the hit is the model's.
      if (!kept || *kept > start || *kept % n_ != 0 ||
          (kMaxLength < 32 * n_ && *kept != start))
        return "bad kept-window prefix hit";
      start = *kept;
    }
    lastOp_ = "resume without tokens at " + std::to_string(start);
    err = expect(code, [&] { return manager_->resume(seq.id, start); });
    seq.keptHashes |= err.empty() && code == StatusCode::Ok;
  } else {
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
    err = expect(code, [&] { return manager_->resume(seq.id, tokens, start); });
    if (err.empty() && code == StatusCode::Ok)
      seq.keptHashes = false; // the chain is rebuilt from the tokens
  }
  if (!err.empty())
    return err;
  if (code == StatusCode::Ok) {
    seq.state = State::Idle;
    seq.computed = start;
    seq.hitFrom = start;
    seq.partial = freshPartial();
    return noteReads(seq, start);
  }
  return "";
}

std::string ModelChecker::fork() {
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

std::string ModelChecker::finish(size_t index) {
  lastOp_ = "finish";
  SequenceId id = seqs_[index].id;
  std::vector<SequenceId> invalid;
  dropStep(index, invalid);
  if (std::string err =
          expect(StatusCode::Ok, [&] { return manager_->finish(id); });
      !err.empty())
    return err;
  seqs_.erase(seqs_.begin() + index);
  finished_.push_back(id);
  return checkInvalidated(invalid);
}

std::string ModelChecker::staleIdOperation() {
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

} // namespace inkling::modelcheck
