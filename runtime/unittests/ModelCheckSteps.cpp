//===- ModelCheckSteps.cpp - Steps in the model check ---------------------===//
//
// The model check's step operations: schedule (also ahead of the sampled
// token, and in batches), the sampled token's arrival, running the step
// through the kernel simulator, commit (also in batches).
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

namespace inkling::modelcheck {

int64_t ModelChecker::blocksNeeded(const ModelSeq &seq, int64_t n) {
  int64_t c = seq.computed, end = c + n;
  int64_t st = std::max(c, end - history() - config_.lookahead);
  int64_t first = st / n_, last = (end - 1) / n_;
  int64_t needed = last - first + 1;
  // The held block of c (c % N != 0: a partial block, never cached) is
  // written in place unless a live fork shares it (then copied).
  if (c > 0 && (c - 1) / n_ == first) {
    int64_t sharers = 0;
    for (const ModelSeq &other : seqs_)
      sharers +=
          other.state != State::Preempted && other.partial == seq.partial;
    if (sharers <= 1)
      --needed;
  }
  return needed;
}

std::string ModelChecker::schedule() {
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
  return scheduleAt(index, n, ahead);
}

std::string ModelChecker::scheduleAt(size_t index, int64_t n, bool ahead) {
  ModelSeq &seq = seqs_[index];
  int64_t c = seq.computed, known = seq.tokens.size();
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
  int64_t freeBefore = manager_->pool().numFreeBlocks();
  allocating_ = true;
  if (std::string err = expect(code,
                               [&] {
                                 return ahead
                                            ? manager_->scheduleAhead(seq.id, n)
                                            : manager_->schedule(seq.id, n);
                               });
      !err.empty())
    return err;
  if (code != StatusCode::Ok)
    return "";
  modelSchedule(seq, n, freeBefore);
  seq.pending = c >= known;
  return notePending(seq);
}

void ModelChecker::modelSchedule(ModelSeq &seq, int64_t n, int64_t freeBefore) {
  planStep(seq, n, freeBefore);
  int64_t c = seq.computed, known = seq.tokens.size();
  seq.state = State::Scheduled;
  seq.scheduled = n;
  seq.ran = false;
  seq.stepTokens.assign(seq.tokens.begin(),
                        seq.tokens.begin() + std::min(known, c + n));
  while (static_cast<int64_t>(seq.stepTokens.size()) < c + n)
    seq.stepTokens.push_back(static_cast<int32_t>(rng_() % 2)); // drafts
}

std::string ModelChecker::arrive() {
  lastOp_ = "arrive";
  std::vector<size_t> waiting =
      select([](const ModelSeq &seq) { return seq.pending; });
  if (waiting.empty())
    return "";
  return arriveAt(waiting[uniform(0, waiting.size() - 1)]);
}

std::string ModelChecker::arriveAt(size_t index) {
  ModelSeq &seq = seqs_[index];
  if (chance(0.3)) {
    lastOp_ = "commit before the token arrived, seq " + std::to_string(index);
    if (std::string err = expect(StatusCode::FailedPrecondition,
                                 [&] { return manager_->commit(seq.id, 1); });
        !err.empty())
      return err;
  }
  lastOp_ = "arrive seq " + std::to_string(index);
  if (std::string err = appendToken(seq, seq.stepTokens[seq.computed]);
      !err.empty())
    return err;
  seq.pending = false;
  ++arrivals_;
  return "";
}

std::string ModelChecker::scheduleBatch() {
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
  allocating_ = true;
  if (std::string err = expect(code,
                               [&] {
                                 return manager_->scheduleBatch(
                                     ids.data(), counts.data(), ids.size());
                               });
      !err.empty())
    return err;
  if (code == StatusCode::Ok)
    for (size_t k = 0; k < chosen.size(); ++k) {
      modelSchedule(seqs_[chosen[k]], counts[k], -1);
      if (std::string err = notePending(seqs_[chosen[k]]); !err.empty())
        return err;
    }
  return "";
}

std::string ModelChecker::commitBatch() {
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
  if (std::string err = expect(StatusCode::Ok,
                               [&] {
                                 return manager_->commitBatch(
                                     ids.data(), accepted.data(),
                                     offsets.data(), tokens.data(), ids.size());
                               });
      !err.empty())
    return err;
  for (size_t k = 0; k < ran.size(); ++k) {
    ModelSeq &seq = seqs_[ran[k]];
    seq.tokens.insert(seq.tokens.end(), appended[k].begin(), appended[k].end());
    noteCommit(seq, accepted[k]);
    seq.partial = freshPartial(); // a copy-on-write source is released
    seq.computed += accepted[k];
    seq.state = State::Idle;
    seq.scheduled = 0;
    if (std::string err = promote(seq); !err.empty())
      return err;
  }
  return "";
}

std::string ModelChecker::runStep() {
  lastOp_ = "run step";
  std::vector<size_t> ready = select([](const ModelSeq &seq) {
    return seq.state == State::Scheduled && !seq.ran;
  });
  if (ready.empty())
    return "";
  std::shuffle(ready.begin(), ready.end(), rng_);
  ready.resize(uniform(1, ready.size()));
  // Same-step hits: a reader's writers usually join its build (a writer
  // whose step was built before need not); now and then they are left out
  // (the build is refused).
  bool join = chance(0.8);
  if (config_.sameStepHits && !join)
    for (size_t k = 0; k < ready.size(); ++k)
      for (SequenceId id : seqs_[ready[k]].readsFrom) {
        auto writer = std::find(ready.begin(), ready.end(), indexOf(id));
        if (writer != ready.end() && ready.size() > 1) {
          if (writer - ready.begin() <= static_cast<int64_t>(k))
            --k;
          ready.erase(writer);
        }
      }
  if (config_.sameStepHits && join)
    for (size_t k = 0; k < ready.size(); ++k)
      for (SequenceId id : seqs_[ready[k]].readsFrom) {
        int64_t writer = indexOf(id);
        if (writer >= 0 && !seqs_[writer].ran &&
            std::find(ready.begin(), ready.end(), size_t(writer)) ==
                ready.end())
          ready.push_back(writer);
      }
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
  // A reader's writer in the build: inserts before convs; neither in it
  // nor built before: refused, naming the hit.
  bool ordered = false, missing = false;
  for (size_t i : ready)
    for (SequenceId id : seqs_[i].readsFrom) {
      int64_t writer = indexOf(id);
      if (writer < 0)
        return "a reader's writer is gone from the model";
      if (std::find(ready.begin(), ready.end(), size_t(writer)) != ready.end())
        ordered = true;
      else if (!seqs_[writer].ran)
        missing = true;
    }
  if (missing) {
    std::vector<int32_t> table = buffers_.blockTable;
    std::vector<int64_t> slots = buffers_.slotMapping;
    lastOp_ = "build a reader without its writer";
    Status status;
    if (std::string err = expect(
            StatusCode::FailedPrecondition,
            [&] {
              return manager_
                  ->buildStep(ids.data(), ids.size(), StepShape(), *step_)
                  .status();
            },
            &status);
        !err.empty())
      return err;
    if (status.message().find("same-step hit") == std::string::npos)
      return "the error does not name the same-step hit: " + status.toString();
    if (table != buffers_.blockTable || slots != buffers_.slotMapping)
      return "failed build wrote into the buffers";
    ++refusedBuilds_;
    return "";
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
  if (info->orderedInsertsRequired != ordered)
    return std::string("build ") +
           (ordered ? "holds a same-step hit but is not flagged"
                    : "is flagged for a same-step hit it does not hold");
  orderedSteps_ += ordered;
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
    int64_t expected =
        b < static_cast<int64_t>(ready.size()) ? seqs_[ready[b]].scheduled : 0;
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

std::string ModelChecker::commit() {
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
  lastOp_ = "commit seq " + std::to_string(index) + " k " + std::to_string(k) +
            " of " + std::to_string(n);
  if (std::string err =
          expect(code,
                 [&] {
                   return manager_->commit(seq.id, k, fresh.data(),
                                           static_cast<int64_t>(fresh.size()));
                 });
      !err.empty())
    return err;
  if (code != StatusCode::Ok)
    return "";
  seq.tokens.insert(seq.tokens.end(), fresh.begin(), fresh.end());
  noteCommit(seq, k);
  seq.partial = freshPartial(); // a copy-on-write source is released
  seq.computed = c + k;
  seq.state = State::Idle;
  seq.scheduled = 0;
  return promote(seq);
}

} // namespace inkling::modelcheck
