//===- ModelCheckHits.cpp - An independent model of prefix hits -----------===//
//
// The model check's own record of the cached block keys, and its prediction
// of every lookup from that record (the manager's lookups are never asked
// what hits). The record is the manager's cached key set, but each change to
// it is checked against the prefix policy before the model takes it:
//   * a key appears only at a commit, and only for a block the policy of the
//     committed step may store: one of the step's window blocks, or a block
//     of the history of a boundary the policy names (snapshots: the chunk's
//     end, every S-th boundary, N * 2^k below S*N, the hit frontier, the
//     cache points, the resubmit boundary; every-block: any; window: none);
//   * a key the policy must store is there after the commit: each boundary
//     it names in the chunk's interior (every-block: all; snapshots: the
//     S*N grid, N * 2^k and the cache points), accepted, whose history was
//     not cached when the step was scheduled. Where the manager may drop a
//     snapshot (free blocks short, the snapshot cap, histories spanning
//     blocks, which the window may absorb) the model predicts nothing;
//   * a key disappears only in a call that allocates blocks (eviction).
//     Which cached block an allocation evicts is the manager's freedom
//     (least recently freed first); the model takes the manager's choice.
// With the record so checked, the longest hit of a prompt is a function of
// it, computed here by its definition: the largest p (0 or a multiple of N,
// within the maximum) whose history blocks [firstHistoryBlock(p), p/N) are
// all recorded; with the EAGLE rule also block p/N. docs/runtime.md
// ("The hit model") states the same rule.
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

#include <unordered_set>

namespace inkling::modelcheck {

std::vector<PrefixKey> ModelChecker::chainKeys(const int32_t *tokens,
                                               int64_t len) const {
  std::vector<PrefixKey> keys;
  appendChainHashes(root_, tokens, len, n_, keys);
  return keys;
}

bool ModelChecker::storedAt(const std::vector<PrefixKey> &keys,
                            int64_t p) const {
  if (p <= 0 || p % n_ != 0 || p / n_ > static_cast<int64_t>(keys.size()))
    return false;
  for (int64_t j = firstHistoryBlock(p); j < p / n_; ++j)
    if (!stored_.count(keys[j]))
      return false;
  return true;
}

int64_t ModelChecker::modelHit(const int32_t *tokens, int64_t len,
                               int64_t maxLength, bool drop) const {
  std::vector<PrefixKey> keys = chainKeys(tokens, len);
  for (int64_t p = std::min(maxLength, len) / n_ * n_; p > 0; p -= n_) {
    if (!drop) {
      if (storedAt(keys, p))
        return p;
      continue;
    }
    // EAGLE: p's history and block p/N itself, the one the drafter drops.
    if (p + n_ <= std::min(maxLength, len) && storedAt(keys, p) &&
        stored_.count(keys[p / n_]))
      return p;
  }
  return 0;
}

void ModelChecker::planStep(ModelSeq &seq, int64_t n, int64_t freeBefore) {
  StepPlan &plan = seq.plan;
  int64_t c = seq.computed, end = c + n;
  // Scheduled ahead, the pending token counts as known.
  int64_t known = seq.tokens.size() + (c >= (int64_t)seq.tokens.size());
  int64_t top = std::min(end, known) / n_ * n_;
  plan = StepPlan();
  plan.from = c;
  plan.end = end;
  plan.everyBlock = policy_ == PrefixPolicy::EveryBlock;
  if (policy_ == PrefixPolicy::Window || top <= c)
    return;
  int64_t grid = every_ * n_;
  std::vector<int64_t> automatic, pinned;
  for (int64_t b = c / n_ * n_ + n_; b <= top; b += n_) {
    int64_t blocks = b / n_;
    bool frontier =
        seq.hitFrom > 0 && b > seq.hitFrom && b <= seq.hitFrom + grid;
    if (plan.everyBlock || b % grid == 0 ||
        (b < grid && (blocks & (blocks - 1)) == 0))
      automatic.push_back(b);
    else if (b == top || frontier)
      plan.allowed.push_back(b);
  }
  for (int64_t point : seq.cachePoints)
    if (point / n_ * n_ > c && point / n_ * n_ <= top)
      pinned.push_back(point / n_ * n_);
  for (int64_t tokens : {known - 1, known - 2}) // the resubmit boundary
    if (tokens > 0)
      plan.allowed.push_back(tokens / n_ * n_);
  plan.allowed.insert(plan.allowed.end(), automatic.begin(), automatic.end());
  plan.allowed.insert(plan.allowed.end(), pinned.begin(), pinned.end());
  // Must-store predictions: one-block histories (N >= W-1), enough free
  // blocks for every candidate snapshot, within the snapshot cap.
  int64_t candidates = plan.allowed.size() + 2;
  if (freeBefore < 0 || seq.keptHashes || n_ < history() ||
      freeBefore < blocksNeeded(seq, n) + 2 + candidates)
    return;
  std::vector<int64_t> must = pinned;
  if (plan.everyBlock || static_cast<int64_t>(automatic.size()) + 2 <=
                             manager_->maxSnapshotBlocks())
    must.insert(must.end(), automatic.begin(), automatic.end());
  // Below the window (and its extension by a snapshot that shares its
  // first block), beyond the held block of c.
  int64_t storeFrom = std::max(c, end - history() - config_.lookahead);
  int64_t windowBlock = storeFrom / n_;
  std::vector<PrefixKey> keys =
      chainKeys(seq.tokens.data(), std::min<int64_t>(top, seq.tokens.size()));
  for (int64_t b : must) {
    if (b / n_ - 1 >= windowBlock - 1 || b - history() < (c / n_ + 1) * n_ ||
        b / n_ > static_cast<int64_t>(keys.size()))
      continue;
    const PrefixKey &key = keys[b / n_ - 1];
    if (!stored_.count(key)) // cached already: skipped, may be evicted
      plan.must.emplace_back(b, key);
  }
}

void ModelChecker::noteCommit(const ModelSeq &seq, int64_t k,
                              bool pendingOnly) {
  const StepPlan &plan = seq.plan;
  int64_t computed = plan.from + k;
  // (At a schedule only the known tokens have keys.)
  std::vector<PrefixKey> keys = chainKeys(
      seq.tokens.data(), std::min<int64_t>(computed, seq.tokens.size()));
  auto allow = [&](int64_t j) {
    if (j >= 0 && j < static_cast<int64_t>(keys.size()))
      mayAdd_.push_back(keys[j]);
  };
  // The window's blocks (with room for a snapshot that extends it down).
  int64_t low = plan.end - history() - config_.lookahead - n_;
  for (int64_t j = std::max<int64_t>(0, plan.from / n_);
       j < static_cast<int64_t>(keys.size()); ++j)
    if (plan.everyBlock || (j + 1) * n_ >= low)
      allow(j);
  // A boundary's snapshot stores from the start of its first history
  // block's own last W-1 positions (N < W-1: below the history), and
  // registers each block whose last W-1 positions it holds.
  for (int64_t b : plan.allowed) {
    int64_t lo = (firstHistoryBlock(b) + 1) * n_ - history();
    for (int64_t j = std::max<int64_t>(0, lo) / n_; j < b / n_; ++j)
      allow(j);
  }
  if (pendingOnly)
    return;
  for (const auto &[b, key] : plan.must)
    if (b <= computed)
      mustHold_.emplace_back(b, key);
}

std::string ModelChecker::checkHitModel() {
  const BlockPool &pool = manager_->pool();
  std::unordered_map<PrefixKey, int32_t, KeyHash> now;
  for (int32_t block = 1; block < pool.numBlocks(); ++block)
    if (pool.hasCacheTag(block))
      now.emplace(pool.cacheTag(block), block);
  std::unordered_set<PrefixKey, KeyHash> may(mayAdd_.begin(), mayAdd_.end());
  std::string err;
  for (const auto &[key, block] : now)
    if (!stored_.count(key) && !may.count(key)) {
      err = "block " + std::to_string(block) +
            " was cached under a key the prefix policy does not store";
      break;
    }
  if (err.empty() && !allocating_)
    for (const auto &[key, block] : stored_)
      if (!now.count(key)) {
        err = "cached block " + std::to_string(block) +
              " lost its key in a call that allocates nothing";
        break;
      }
  if (err.empty())
    for (const auto &[b, key] : mustHold_) {
      if (!now.count(key)) {
        err = "the prefix policy must have cached the history of boundary " +
              std::to_string(b);
        break;
      }
      ++mustChecks_;
    }
  if (err.empty())
    for (const PrefixKey &key : withdrawn_)
      if (now.count(key)) {
        err = "a withdrawn pending entry is still cached (block " +
              std::to_string(now[key]) + ")";
        break;
      }
  withdrawn_.clear();
  stored_ = std::move(now);
  mayAdd_.clear();
  mustHold_.clear();
  allocating_ = false;
  return err;
}

} // namespace inkling::modelcheck
