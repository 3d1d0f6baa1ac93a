//===- ModelCheckPending.cpp - Same-step hits in the model check ----------===//
//
// The model's side of SequenceManagerConfig::sameStepHits: a schedule's
// pending keys (the manager's choice, each one a key every valid commit of
// the step may store), the readers an add or resume makes (predicted from
// the model's pending keys, compared with the manager's), promotion at the
// writer's commit (every pending key stays), and the withdrawal when the
// writer drops its step (its keys disappear, its readers and theirs are
// preempted, and the manager reports exactly them).
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

#include <unordered_set>

namespace inkling::modelcheck {

int64_t ModelChecker::indexOf(SequenceId id) const {
  for (size_t i = 0; i < seqs_.size(); ++i)
    if (seqs_[i].id == id)
      return static_cast<int64_t>(i);
  return -1;
}

std::string ModelChecker::notePending(ModelSeq &seq) {
  seq.pendingKeys.clear();
  if (!config_.sameStepHits)
    return "";
  // What a commit of the fewest tokens any valid commit accepts may store.
  size_t before = mayAdd_.size();
  noteCommit(seq, std::max<int64_t>(0, seq.scheduled - config_.lookahead),
             /*pendingOnly=*/true);
  std::unordered_set<PrefixKey, KeyHash> may(mayAdd_.begin() + before,
                                             mayAdd_.end());
  StatusOr<SequenceInfo> info = manager_->sequenceInfo(seq.id);
  for (int32_t block : info->pendingBlocks) {
    PrefixKey key = manager_->pool().cacheTag(block);
    if (!may.count(key))
      return "pending block " + std::to_string(block) +
             " has a key that not every commit of its step stores";
    seq.pendingKeys.push_back(key);
  }
  return "";
}

std::string ModelChecker::noteReads(ModelSeq &seq, int64_t start) {
  seq.readsFrom.clear();
  if (start > 0 && config_.sameStepHits) {
    std::vector<PrefixKey> keys = chainKeys(seq.tokens.data(), start);
    for (int64_t j = firstHistoryBlock(start); j < start / n_; ++j)
      for (const ModelSeq &writer : seqs_)
        if (std::find(writer.pendingKeys.begin(), writer.pendingKeys.end(),
                      keys[j]) != writer.pendingKeys.end() &&
            std::find(seq.readsFrom.begin(), seq.readsFrom.end(), writer.id) ==
                seq.readsFrom.end())
          seq.readsFrom.push_back(writer.id);
  }
  sameStepReads_ += !seq.readsFrom.empty();
  StatusOr<SequenceInfo> info = manager_->sequenceInfo(seq.id);
  std::vector<SequenceId> want = seq.readsFrom, got = info->pendingWriters;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (want != got)
    return "the manager reports " + std::to_string(got.size()) +
           " writers of pending blocks this sequence starts from, the model " +
           std::to_string(want.size());
  return "";
}

std::string ModelChecker::promote(ModelSeq &seq) {
  seq.readsFrom.clear(); // its step ran after its writers' inserts
  const BlockPool &pool = manager_->pool();
  for (const PrefixKey &key : seq.pendingKeys) {
    int32_t block = manager_->prefixCache().find(key);
    if (block < 0 || !pool.hasCacheTag(block))
      return "a pending entry was not promoted at its writer's commit";
  }
  seq.pendingKeys.clear();
  for (ModelSeq &reader : seqs_)
    reader.readsFrom.erase(
        std::remove(reader.readsFrom.begin(), reader.readsFrom.end(), seq.id),
        reader.readsFrom.end());
  return "";
}

void ModelChecker::dropStep(size_t index, std::vector<SequenceId> &invalid) {
  ModelSeq &writer = seqs_[index];
  writer.readsFrom.clear();
  if (writer.pendingKeys.empty())
    return;
  for (const PrefixKey &key : writer.pendingKeys) {
    stored_.erase(key);
    withdrawn_.push_back(key);
    // A boundary another step must store may have been skipped for this
    // entry: no prediction for it now.
    mustHold_.erase(
        std::remove_if(mustHold_.begin(), mustHold_.end(),
                       [&](const auto &must) { return must.second == key; }),
        mustHold_.end());
    for (ModelSeq &other : seqs_)
      other.plan.must.erase(
          std::remove_if(other.plan.must.begin(), other.plan.must.end(),
                         [&](const auto &must) { return must.second == key; }),
          other.plan.must.end());
  }
  writer.pendingKeys.clear();
  SequenceId id = writer.id;
  for (size_t i = 0; i < seqs_.size(); ++i) {
    ModelSeq &reader = seqs_[i];
    if (std::find(reader.readsFrom.begin(), reader.readsFrom.end(), id) ==
        reader.readsFrom.end())
      continue;
    invalid.push_back(reader.id);
    reader.state = State::Preempted;
    reader.computed = reader.scheduled = 0;
    reader.plan = StepPlan();
    reader.pending = false;
    dropStep(i, invalid); // its own pending keys and readers
  }
}

std::string ModelChecker::checkInvalidated(std::vector<SequenceId> invalid) {
  std::vector<SequenceId> got = manager_->takeInvalidatedReaders();
  invalidations_ += static_cast<int64_t>(got.size());
  std::sort(invalid.begin(), invalid.end());
  std::sort(got.begin(), got.end());
  if (got != invalid)
    return "the manager invalidated " + std::to_string(got.size()) +
           " readers, the model " + std::to_string(invalid.size());
  return "";
}

bool ModelChecker::readsUnwritten(const ModelSeq &seq) const {
  for (SequenceId id : seq.readsFrom) {
    int64_t writer = indexOf(id);
    if (writer >= 0 && !seqs_[writer].ran)
      return true;
  }
  return false;
}

void ModelChecker::pendingBlocks() {
  pending_.clear();
  for (const ModelSeq &seq : seqs_)
    for (const PrefixKey &key : seq.pendingKeys) {
      int32_t block = manager_->prefixCache().find(key);
      if (block > 0)
        pending_[block] = seq.ran;
    }
}

} // namespace inkling::modelcheck
