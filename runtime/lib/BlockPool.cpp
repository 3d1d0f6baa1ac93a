//===- BlockPool.cpp - Fixed pool of cache pages with an LRU free queue ---===//

#include "inkling/Runtime/BlockPool.h"

#include <limits>
#include <string>

namespace inkling {

StatusOr<BlockPool> BlockPool::create(int64_t numBlocks) {
  if (numBlocks < 2 || numBlocks > std::numeric_limits<int32_t>::max())
    return invalidArgument(
        "num_blocks (" + std::to_string(numBlocks) +
        ") must be in [2, 2^31 - 1]: block 0 is the null block and block "
        "tables hold int32 ids");
  BlockPool pool;
  pool.refCounts_.assign(numBlocks, 0);
  pool.tagged_.assign(numBlocks, 0);
  pool.links_.resize(numBlocks);
  pool.tags_.assign(numBlocks, PrefixKey());
  // Queue every usable block in id order, so the first allocations are
  // 1, 2, 3, ... (easy to read in dumps and tests).
  for (int32_t block = 1; block < numBlocks; ++block)
    pool.linkBefore(kNullBlock, block);
  return pool;
}

Status BlockPool::checkBlock(int32_t block, const char *what) const {
  if (block == kNullBlock)
    return invalidArgument(std::string("cannot ") + what +
                           " block 0: it is the null block");
  if (!isUsable(block))
    return outOfRange(std::string("cannot ") + what + " block " +
                      std::to_string(block) + ": the pool has blocks [1, " +
                      std::to_string(numBlocks()) + ")");
  return Status::ok();
}

Status BlockPool::allocate(int64_t count, int32_t *out) {
  if (count < 0)
    return invalidArgument("block count (" + std::to_string(count) +
                           ") must be >= 0");
  if (count > numFree_)
    return outOfBlocks("cannot allocate " + std::to_string(count) +
                       " blocks: only " + std::to_string(numFree_) + " of " +
                       std::to_string(numUsableBlocks()) + " are free");
  if (count > 0 && out == nullptr)
    return invalidArgument("output buffer for " + std::to_string(count) +
                           " blocks is null");
  for (int64_t i = 0; i < count; ++i)
    out[i] = allocateUnchecked();
  return Status::ok();
}

StatusOr<int32_t> BlockPool::allocate() {
  int32_t block = kNullBlock;
  Status status = allocate(1, &block);
  if (!status)
    return status;
  return block;
}

Status BlockPool::retain(int32_t block) {
  if (Status status = checkBlock(block, "retain"); !status)
    return status;
  if (refCounts_[block] == 0 && !tagged_[block])
    return failedPrecondition("cannot retain block " + std::to_string(block) +
                              ": it is free and holds no cached prefix");
  if (refCounts_[block] == std::numeric_limits<int32_t>::max())
    return outOfRange("reference count of block " + std::to_string(block) +
                      " would overflow");
  retainUnchecked(block);
  return Status::ok();
}

Status BlockPool::release(int32_t block) {
  if (Status status = checkBlock(block, "release"); !status)
    return status;
  if (refCounts_[block] == 0)
    return failedPrecondition("double free of block " + std::to_string(block) +
                              ": it is already free");
  releaseUnchecked(block);
  return Status::ok();
}

Status BlockPool::setCacheTag(int32_t block, PrefixKey tag) {
  if (Status status = checkBlock(block, "tag"); !status)
    return status;
  if (refCounts_[block] == 0)
    return failedPrecondition(
        "cannot tag free block " + std::to_string(block) +
        ": only held blocks with written contents are cached");
  setCacheTagUnchecked(block, tag);
  return Status::ok();
}

void BlockPool::clearCacheTag(int32_t block) {
  if (isUsable(block))
    tagged_[block] = 0;
}

std::vector<int32_t> BlockPool::freeQueue() const {
  std::vector<int32_t> queue;
  queue.reserve(numFree_);
  for (int32_t block = links_[kNullBlock].next; block != kNullBlock;
       block = links_[block].next) {
    queue.push_back(block);
    if (static_cast<int64_t>(queue.size()) > numBlocks())
      break; // a corrupt (cyclic) queue; checkInvariants reports it
  }
  return queue;
}

Status BlockPool::checkInvariants() const {
  auto internal = [](std::string message) {
    return internalError(std::move(message));
  };
  std::vector<char> queued(refCounts_.size(), 0);
  int32_t length = 0;
  int32_t previous = kNullBlock;
  for (int32_t block = links_[kNullBlock].next; block != kNullBlock;
       block = links_[block].next) {
    if (!isUsable(block))
      return internal("free queue links to block " + std::to_string(block));
    if (queued[block])
      return internal("free queue holds block " + std::to_string(block) +
                      " twice");
    queued[block] = 1;
    if (links_[block].prev != previous)
      return internal("free queue back link of block " + std::to_string(block) +
                      " is broken");
    if (refCounts_[block] != 0)
      return internal("queued block " + std::to_string(block) +
                      " has reference count " +
                      std::to_string(refCounts_[block]));
    previous = block;
    ++length;
  }
  if (links_[kNullBlock].prev != previous)
    return internal("free queue back pointer is broken");
  if (length != numFree_)
    return internal("free count " + std::to_string(numFree_) +
                    " but the queue holds " + std::to_string(length));
  if (refCounts_[kNullBlock] != 0 || tagged_[kNullBlock])
    return internal("the null block is referenced or tagged");
  for (int32_t block = 1; block < numBlocks(); ++block) {
    if (refCounts_[block] < 0)
      return internal("block " + std::to_string(block) +
                      " has a negative reference count");
    if (!queued[block] && refCounts_[block] == 0)
      return internal("block " + std::to_string(block) +
                      " leaked: unreferenced but not in the free queue");
  }
  return Status::ok();
}

} // namespace inkling
