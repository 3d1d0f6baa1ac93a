//===- Schedule.cpp - inkling-run's admission and scheduling --------------===//
//
// What a serving engine decides each step: arrivals, random preemptions and
// forks, admission (resumes first, then waiting requests, with their prefix
// hits), the batch under the token budget (chunked prefill, speculative
// decode, out-of-blocks preemption), and the commit of what each sequence
// accepted and sampled.
//
//===----------------------------------------------------------------------===//

#include "Server.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

using namespace inkling;
using namespace inkling::run;

bool Server::deliverToken(Request *r) {
  if (!r->tokenPending)
    return true;
  if (Status s = manager_->appendTokens(r->id, &r->pendingToken, 1); !s) {
    internalError("appendTokens (the sampled token)", s);
    return false;
  }
  r->tokenPending = false;
  return true;
}

void Server::arrive() {
  // Bernoulli arrivals per step (at most one per draw), several draws for
  // rates above 1.
  double rate = opt_.arrivalRate;
  while (rate > 0) {
    double p = std::min(rate, 1.0);
    rate -= p;
    if (workload_.chance(p) && waiting_.size() < size_t(4 * opt_.maxBatch)) {
      waiting_.push_back(workload_.newRequest());
      ++stats_.arrivals;
    }
  }
  // Keep the server busy at the start.
  if (running_.empty() && waiting_.empty() && preempted_.empty()) {
    waiting_.push_back(workload_.newRequest());
    ++stats_.arrivals;
  }
}

void Server::maybePreempt() {
  // Random preemption of a running sequence.
  if (!running_.empty() && workload_.chance(opt_.preemptRate))
    preempt(running_[workload_.uniform(0, running_.size() - 1)], false);
}

bool Server::maybeFork() {
  if (running_.empty() ||
      static_cast<int64_t>(running_.size()) >= opt_.maxBatch ||
      !workload_.chance(opt_.forkRate))
    return true;
  Request *parent = running_[workload_.uniform(0, running_.size() - 1)];
  if (parent->computed != static_cast<int64_t>(parent->tokens.size()) - 1)
    return true;
  auto id = manager_->fork(parent->id);
  if (!id) {
    internalError("fork", id.status());
    return false;
  }
  auto child = std::make_unique<Request>(*parent);
  child->number = workload_.nextNumber();
  child->id = *id;
  child->admitOrder = nextAdmit_++;
  running_.push_back(child.get());
  live_.push_back(std::move(child));
  ++stats_.forks;
  return true;
}

void Server::preempt(Request *r, bool outOfBlocks) {
  // A preempted sequence resumes from the runtime's token hashes.
  if (!deliverToken(r))
    std::exit(1);
  if (Status s = manager_->preempt(r->id); !s) {
    internalError("preempt", s);
    std::exit(1);
  }
  r->preempted = true;
  r->computedAtPreemption = r->computed;
  r->computed = 0;
  r->scheduled = false;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  auto inBatch = std::find(batch_.begin(), batch_.end(), r);
  if (inBatch != batch_.end())
    batch_.erase(inBatch);
  preempted_.push_back(r);
  ++stats_.preemptions;
  if (outOfBlocks)
    ++stats_.oobPreemptions;
}

void Server::admit() {
  while (static_cast<int64_t>(running_.size()) < opt_.maxBatch &&
         (!preempted_.empty() || !waiting_.empty())) {
    if (opt_.watermark < 0) {
      // The old rule of thumb (--watermark=-1): room for a step of the
      // running sequences, roughly.
      if (manager_->pool().numFreeBlocks() <
          manager_->maxBlocksPerSequence() * (1 + int64_t(running_.size()) / 4))
        break;
    }
    if (!(preempted_.empty() ? admitWaiting() : admitPreempted())) {
      ++stats_.admissionsDeferred;
      break;
    }
  }
}

bool Server::admits(int64_t numTokens, int64_t hit) {
  // The runtime's admission query: the sequence's first step and the
  // running sequences' next steps fit, and a watermark of the pool stays
  // free (vLLM's watermark, 1% by default).
  if (opt_.watermark < 0)
    return true;
  int64_t watermark = static_cast<int64_t>(
      std::ceil(opt_.watermark * double(manager_->pool().numBlocks())));
  auto admission = manager_->admission(numTokens, hit, watermark);
  if (!admission) {
    internalError("admission", admission.status());
    std::exit(1);
  }
  return admission->admit;
}

bool Server::admitPreempted() {
  Request *r = preempted_.front();
  auto hit = manager_->longestCachedPrefix(r->id, r->tokens.size() - 1);
  if (!hit) {
    internalError("longestCachedPrefix", hit.status());
    std::exit(1);
  }
  if (!admits(r->tokens.size(), *hit))
    return false;
  stats_.recomputedTokens +=
      std::max<int64_t>(0, r->computedAtPreemption - *hit);
  stats_.prefixHitTokensIdeal += workload_.idealHit(*r);
  if (Status s = manager_->resume(r->id, *hit); !s) {
    internalError("resume", s);
    std::exit(1);
  }
  preempted_.pop_front();
  r->preempted = false;
  r->computed = *hit;
  r->admitOrder = nextAdmit_++;
  running_.push_back(r);
  ++stats_.resumes;
  if (*hit > 0) {
    ++stats_.prefixHits;
    stats_.prefixHitTokens += *hit;
  }
  return true;
}

bool Server::admitWaiting() {
  Request *r = waiting_.front().get();
  auto hit = manager_->longestCachedPrefix(r->tokens.data(), r->tokens.size(),
                                           r->tokens.size() - 1);
  if (!hit) {
    internalError("longestCachedPrefix", hit.status());
    std::exit(1);
  }
  if (!admits(r->tokens.size(), *hit))
    return false;
  std::unique_ptr<Request> owned = std::move(waiting_.front());
  waiting_.pop_front();
  stats_.prefixHitTokensIdeal += workload_.idealHit(*r);
  auto id = manager_->addSequence(r->tokens.data(), r->tokens.size(), *hit,
                                  &r->cachePoint, r->cachePoint > 0 ? 1 : 0);
  if (!id) {
    internalError("addSequence", id.status());
    std::exit(1);
  }
  r->id = *id;
  r->computed = *hit;
  r->admitOrder = nextAdmit_++;
  if (*hit > 0) {
    ++stats_.prefixHits;
    stats_.prefixHitTokens += *hit;
  }
  running_.push_back(r);
  live_.push_back(std::move(owned));
  return true;
}

bool Server::scheduleBatch() {
  batch_.clear();
  int64_t budget = opt_.tokenBudget;
  std::vector<Request *> order = running_;
  std::sort(order.begin(), order.end(), [](Request *a, Request *b) {
    return a->admitOrder < b->admitOrder;
  });
  for (Request *r : order) {
    if (budget == 0 || static_cast<int64_t>(batch_.size()) >= opt_.maxBatch)
      break;
    if (r->preempted) // a victim of an earlier out-of-blocks retry
      continue;
    int64_t known = r->tokens.size(), c = r->computed, n;
    bool decode = c >= known - 1;
    if (!decode) {
      n = std::min({known - c, opt_.maxChunk, budget});
    } else {
      int64_t drafts = opt_.lookahead > 0 && workload_.chance(opt_.specRate)
                           ? workload_.uniform(1, opt_.lookahead)
                           : 0;
      n = std::min(1 + drafts, budget);
    }
    if (!scheduleRequest(r, n))
      return false;
    if (r->preempted)
      continue;
    recordStepTokens(r, decode, n);
    batch_.push_back(r);
    budget -= n;
  }
  return true;
}

bool Server::scheduleRequest(Request *r, int64_t n) {
  // --async: scheduled before the runtime knows the step's first token.
  auto schedule = [&] {
    return opt_.async ? manager_->scheduleAhead(r->id, n)
                      : manager_->schedule(r->id, n);
  };
  Status s = schedule();
  while (!s && s.code() == StatusCode::OutOfBlocks) {
    // Out of blocks: preempt the newest running sequence and retry.
    Request *victim = *std::max_element(
        running_.begin(), running_.end(),
        [](Request *a, Request *b) { return a->admitOrder < b->admitOrder; });
    preempt(victim, /*outOfBlocks=*/true);
    if (victim == r)
      break;
    s = schedule();
  }
  if (r->preempted)
    return true;
  if (!s) {
    internalError("schedule", s);
    return false;
  }
  return true;
}

void Server::recordStepTokens(Request *r, bool decode, int64_t n) {
  int64_t known = r->tokens.size(), c = r->computed;
  r->scheduled = true;
  r->decode = decode;
  r->numScheduled = n;
  r->stepTokens.clear();
  r->stepChain.clear();
  const Generator &gen = workload_.generator();
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = c + i;
    int32_t token =
        p < known ? r->tokens[p] : workload_.randomToken(); // drafts
    r->stepTokens.push_back(token);
    uint64_t previous = p == 0
                            ? gen.chainRoot()
                            : (i == 0 ? r->chain[p - 1] : r->stepChain[i - 1]);
    r->stepChain.push_back(gen.chainNext(previous, token));
  }
}

bool Server::commitBatch() {
  for (Request *r : batch_) {
    int64_t known = r->tokens.size(), c = r->computed, n = r->numScheduled;
    int64_t k = r->decode ? workload_.uniform(1, n) : n;
    int64_t next = c + k;
    std::vector<int32_t> fresh;
    for (int64_t p = known; p < next; ++p)
      fresh.push_back(r->stepTokens[p - c]); // accepted drafts
    if (next >= known)
      fresh.push_back(workload_.randomToken()); // the sampled token
    // --async: the sampled token reaches the runtime only after the next
    // step was scheduled (deliverToken, before the build).
    bool withhold = opt_.async && next >= known;
    if (Status s = manager_->commit(r->id, k, fresh.data(),
                                    fresh.size() - (withhold ? 1 : 0));
        !s) {
      internalError("commit", s);
      return false;
    }
    if (withhold) {
      r->tokenPending = true;
      r->pendingToken = fresh.back();
    }
    for (int32_t token : fresh) {
      r->chain.push_back(
          workload_.extendChain(r->chain, r->tokens.size(), token));
      r->tokens.push_back(token);
    }
    workload_.recordBlocks(*r, c / N_, next / N_);
    r->computed = next;
    r->scheduled = false;
    stats_.tokens += n;
    if (r->decode) {
      stats_.decodeTokens += n;
      stats_.specProposed += n - 1;
      stats_.specAccepted += k - 1;
    } else {
      stats_.prefillTokens += n;
    }
  }
  return finishDone();
}

bool Server::finishDone() {
  // Finishes: a sequence that reached its length.
  for (size_t i = 0; i < running_.size();) {
    Request *r = running_[i];
    if (static_cast<int64_t>(r->tokens.size()) >= r->target &&
        r->computed >= static_cast<int64_t>(r->tokens.size()) - 1) {
      if (Status s = manager_->finish(r->id); !s) {
        internalError("finish", s);
        return false;
      }
      running_.erase(running_.begin() + i);
      ++stats_.finished;
      live_.erase(std::find_if(live_.begin(), live_.end(),
                               [&](const auto &p) { return p.get() == r; }));
      continue;
    }
    ++i;
  }
  return true;
}
