//===- AttentionSlots.cpp - The attention layer's block table -------------===//

#include "AttentionSlots.h"

#include <algorithm>
#include <set>

using namespace inkling;
using namespace inkling::run;

Status AttentionSlots::init(int64_t numBlocks, int64_t blockSize) {
  auto pool = BlockPool::create(numBlocks);
  if (!pool)
    return pool.status();
  pool_.emplace(std::move(*pool));
  blockSize_ = blockSize;
  return Status::ok();
}

Status AttentionSlots::assign(const std::vector<Request *> &running,
                              const std::vector<Request *> &batch,
                              const std::vector<int32_t> &queryStartLoc,
                              int64_t *slots, int64_t count) {
  std::set<int64_t> live;
  for (const Request *r : running)
    live.insert(r->number);
  for (auto it = tables_.begin(); it != tables_.end();) {
    if (live.count(it->first)) {
      ++it;
      continue;
    }
    for (int32_t block : it->second)
      if (Status s = pool_->release(block); !s)
        return s;
    it = tables_.erase(it);
  }
  std::fill(slots, slots + count, -1);
  for (size_t b = 0; b < batch.size(); ++b) {
    const Request *r = batch[b];
    std::vector<int32_t> &table = tables_[r->number];
    for (int64_t i = 0; i < r->numScheduled; ++i) {
      int64_t p = r->computed + i, logical = p / blockSize_;
      while (static_cast<int64_t>(table.size()) <= logical) {
        auto block = pool_->allocate();
        if (!block)
          return Status(block.status().code(),
                        "the attention block table of sequence " +
                            std::to_string(r->number) + " at position " +
                            std::to_string(p) + ": " +
                            block.status().message());
        table.push_back(*block);
      }
      slots[queryStartLoc[b] + i] =
          int64_t(table[logical]) * blockSize_ + p % blockSize_;
    }
  }
  return Status::ok();
}
