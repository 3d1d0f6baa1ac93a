//===- BlockPool.h - Cache pages with an LRU free queue ---------*- C++ -*-===//
//
// The physical pages of one sconv cache group. Block 0 is the null block: it
// is never handed out, and block tables use it for "no block". Free blocks
// wait in an intrusive doubly linked queue (no allocation per operation);
// allocation takes the front. A freed block that holds a cached prefix goes
// to the back and keeps its cache tag, so it can be revived by a prefix hit
// until the pool needs it (LRU eviction); a freed block without a tag goes to
// the front, because reusing it first loses nothing.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_BLOCKPOOL_H
#define INKLING_RUNTIME_BLOCKPOOL_H

#include "inkling/Runtime/PrefixKey.h"
#include "inkling/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace inkling {

/// The null block: block tables hold it wherever no block is mapped.
inline constexpr int32_t kNullBlock = 0;

/// Told when a free block that carries a cache tag is handed out again, so
/// the prefix cache can forget the tag's key.
class BlockEvictionListener {
public:
  virtual ~BlockEvictionListener() = default;
  virtual void onEvict(int32_t block, PrefixKey tag) = 0;
};

class BlockPool {
public:
  /// A pool of `numBlocks` pages including the null block (so
  /// numBlocks - 1 usable); numBlocks must be in [2, 2^31 - 1].
  static StatusOr<BlockPool> create(int64_t numBlocks);

  int32_t numBlocks() const { return static_cast<int32_t>(refCounts_.size()); }
  int32_t numUsableBlocks() const { return numBlocks() - 1; }
  int32_t numFreeBlocks() const { return numFree_; }
  /// Blocks with a reference count > 0.
  int32_t numHeldBlocks() const { return numUsableBlocks() - numFree_; }

  /// Hands out `count` blocks with reference count 1 into `out`, evicting
  /// cache tags as needed; all or nothing (OutOfBlocks leaves the pool
  /// unchanged).
  Status allocate(int64_t count, int32_t *out);
  StatusOr<int32_t> allocate();

  /// Adds a reference to a held block, or revives a free cached block
  /// (taking it out of the free queue).
  Status retain(int32_t block);
  /// Drops a reference; the last one returns the block to the free queue.
  /// Releasing a free block is a double free (FailedPrecondition).
  Status release(int32_t block);

  /// 0 for free blocks and for ids outside the pool.
  int32_t refCount(int32_t block) const {
    return isUsable(block) ? refCounts_[block] : 0;
  }
  bool isUsable(int32_t block) const {
    return block > kNullBlock && block < numBlocks();
  }

  /// Cache tags: the whole 128-bit prefix key a block's contents are
  /// registered under (so eviction erases exactly that key). Only a held
  /// block can be tagged.
  Status setCacheTag(int32_t block, PrefixKey tag);
  bool hasCacheTag(int32_t block) const {
    return isUsable(block) && tagged_[block];
  }
  PrefixKey cacheTag(int32_t block) const {
    return hasCacheTag(block) ? tags_[block] : PrefixKey();
  }
  /// Forgets a tag without telling the listener (the caller already knows).
  void clearCacheTag(int32_t block);

  void setEvictionListener(BlockEvictionListener *listener) {
    listener_ = listener;
  }

  /// The free queue in allocation order (front first); for tests and dumps.
  std::vector<int32_t> freeQueue() const;
  /// Checks the queue links, the free count and the reference counts.
  Status checkInvariants() const;

  // Fast paths for callers that validated their arguments already (the
  // sequence manager); they do not check anything.
  [[gnu::always_inline]] int32_t allocateUnchecked() {
    int32_t block = links_[kNullBlock].next;
    unlink(block);
    refCounts_[block] = 1;
    if (tagged_[block]) {
      tagged_[block] = 0;
      if (listener_)
        listener_->onEvict(block, tags_[block]);
    }
    // Allocations come in bursts (every sequence of a batch crossing a block
    // start): warm what the next one touches.
    int32_t next = links_[kNullBlock].next;
    __builtin_prefetch(&links_[next]);
    __builtin_prefetch(&tags_[next]);
    return block;
  }
  [[gnu::always_inline]] void retainUnchecked(int32_t block) {
    if (refCounts_[block]++ == 0)
      unlink(block);
  }
  bool hasCacheTagUnchecked(int32_t block) const { return tagged_[block]; }
  /// Whether a block is shared or cached, i.e. must not be written.
  [[gnu::always_inline]] bool isSharedOrCached(int32_t block) const {
    return refCounts_[block] > 1 || tagged_[block];
  }
  [[gnu::always_inline]] void setCacheTagUnchecked(int32_t block,
                                                   PrefixKey tag) {
    tagged_[block] = 1;
    tags_[block] = tag;
  }
  [[gnu::always_inline]] void releaseUnchecked(int32_t block) {
    if (--refCounts_[block] == 0) {
      if (tagged_[block])
        linkBefore(kNullBlock, block); // back: evicted last
      else
        linkBefore(links_[kNullBlock].next, block); // front: reused first
    }
  }

private:
  // Structure of arrays: the hot checks (reference count, tagged) touch
  // 5 bytes per block, the queue links and the tags live apart.
  // The null block doubles as the queue's sentinel: it is never free, so its
  // links are free to mean "front" (next) and "back" (prev).
  struct Link {
    int32_t prev = kNullBlock;
    int32_t next = kNullBlock;
  };

  BlockPool() = default;

  [[gnu::always_inline]] void unlink(int32_t block) {
    Link &link = links_[block];
    links_[link.prev].next = link.next;
    links_[link.next].prev = link.prev;
    link.prev = link.next = kNullBlock;
    --numFree_;
  }
  [[gnu::always_inline]] void linkBefore(int32_t successor, int32_t block) {
    int32_t predecessor = links_[successor].prev;
    links_[block].prev = predecessor;
    links_[block].next = successor;
    links_[predecessor].next = block;
    links_[successor].prev = block;
    ++numFree_;
  }
  Status checkBlock(int32_t block, const char *what) const;

  std::vector<int32_t> refCounts_;
  std::vector<uint8_t> tagged_;
  std::vector<Link> links_;
  std::vector<PrefixKey> tags_;
  int32_t numFree_ = 0;
  BlockEvictionListener *listener_ = nullptr;
};

} // namespace inkling

#endif // INKLING_RUNTIME_BLOCKPOOL_H
