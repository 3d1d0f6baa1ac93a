//===- SequenceManager.h - Block tables of one sconv group ------*- C++ -*-===//
//
// Owns the block pool, the prefix cache and the sequences of one group of
// sconv layers (they share block ids), and produces each step's metadata
// (docs/Design.md sections 3, 4 and 6).
//
// Positions and blocks. The block size N (the serving engine's choice,
// from Layout) is independent of the kernel W. Position p lives in logical
// block p/N at offset p%N, slot = physical*N + p%N.
//
// A step of a sequence with num_computed c scheduling n tokens processes
// [c, p1), p1 = c+n. Its conv reads history [max(0, c-(W-1)), c) through the
// block table. It stores only the positions a later step may read,
//   [st, p1), st = max(c, p1 - (W-1) - lookahead);
// earlier tokens of the chunk get slot -1 (the conv reads them from x).
// commit(k) accepts k of the n tokens (c' = c+k, at most `lookahead`
// rejected) and, at once, returns every block that does not cover the next
// step's history [c'-(W-1), c') to the pool. With span(m) = the most blocks
// m consecutive positions touch = ceil((m-1)/N) + 1 (span(0) = 0):
//   * between steps a sequence holds at most span(W-1) blocks
//     (maxBlocksBetweenSteps(): 2 for 1 < W-1 <= N, 1 + ceil((W-2)/N) for
//     smaller N);
//   * during a step at most span(W-1) + span(W-1+L) (the history blocks
//     plus the stored range's): maxBlocksPerSequence().
//
// Sharing. Fork and prefix hits share blocks by reference count, and a
// shared block is never written. The only block a step can both read and
// write is logical block c/N when c%N != 0 (history below c, stores from c);
// if it is shared, schedule() gives the writer a fresh block and reports the
// page copy (src, dst) in the step's block_copies, to run before the step's
// kernels (copy-on-write). The writer keeps its reference on src until
// commit, so src cannot be reused while the copy is pending.
//
// Errors. Every call validates everything before changing anything: a
// failed call returns a Status naming the value and leaves the state exactly
// as it was (the tests compare full state dumps around failing calls).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_SEQUENCEMANAGER_H
#define INKLING_RUNTIME_SEQUENCEMANAGER_H

#include "inkling/Runtime/BlockPool.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/PrefixCache.h"
#include "inkling/Runtime/Status.h"
#include "inkling/Runtime/StepBuffers.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace inkling {

/// An opaque, positive sequence handle: a slot index and a generation, so a
/// handle of a finished sequence is reported as unknown (a slot's generation
/// repeats only after 2^31 - 1 later sequences in it).
using SequenceId = int64_t;

/// What a prefill stores beyond its window, so that later requests can
/// resume there (docs/Design.md section 6, "Snapshots").
///   * Window: only the window [st, p1) (resumable points are rare: a chunk's
///     final window seldom holds the history of a block boundary).
///   * Snapshots: also the history of the last block boundary before each
///     chunk's end, of every S-th block boundary (S = snapshotEvery), and,
///     whatever the snapshot cap, of the block boundaries before the
///     engine's cache points and of floor((L-1)/N)*N for an L-token prompt
///     (where a resubmitted identical prompt resumes).
///   * EveryBlock: the history of every block boundary (vLLM's behaviour).
/// Snapshot blocks are registered at commit and go straight to the
/// evictable queue: cached, never held between steps.
enum class PrefixPolicy : uint8_t { Window, Snapshots, EveryBlock };
const char *prefixPolicyName(PrefixPolicy policy);
/// "window", "snapshots" or "every-block"; InvalidArgument naming `name`.
StatusOr<PrefixPolicy> parsePrefixPolicy(const std::string &name);

/// Limits of the per-request inputs of prefix caching.
inline constexpr int64_t kMaxSnapshotEvery = int64_t(1) << 20; ///< blocks
inline constexpr int64_t kMaxExtraKeyBytes = 4096;

struct SequenceManagerConfig {
  Layout layout;         ///< Gives N (block size) and W (sliding window).
  int64_t numBlocks = 0; ///< Pool size including the null block 0.
  int64_t lookahead = 0; ///< Max rejected speculative tokens per step.
  bool enablePrefixCaching = true;
  uint64_t prefixSeed = kDefaultPrefixSeed; ///< Root of the hash chains.
  PrefixPolicy prefixPolicy = PrefixPolicy::Snapshots;
  /// Snapshots: every S-th block boundary, S in [1, kMaxSnapshotEvery].
  int64_t snapshotEvery = 8;
  /// EAGLE/MTP drafting (vLLM's use_eagle): a hit drops its last matched
  /// block, so the drafter recomputes the block before its start. A lookup
  /// then answers p such that the hit without the rule would be p + N: the
  /// blocks [firstHistoryBlock(p), p/N] are cached and p + N <= maxLength.
  bool dropLastMatchedBlock = false;
  /// Same-step hits (vLLM's behaviour; docs/runtime.md, "Same-step hits"):
  /// schedule registers the blocks the step fills with known tokens, and
  /// that every valid commit accepts, as *pending* cache entries, so a
  /// sequence added or resumed later in the same step can start at them.
  /// A step that then holds a reader and its writer must run every insert
  /// of a cache before every conv of it (StepInfo::orderedInsertsRequired).
  bool sameStepHits = false;
};

enum class SequenceState : uint8_t {
  Idle,      ///< Between steps.
  Scheduled, ///< Has a step; next: buildStep, then commit.
  Preempted, ///< Holds no blocks; resume recomputes or hits the cache.
};
const char *sequenceStateName(SequenceState state);

/// A page copy to run before the step's kernels (copy-on-write).
struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
};

/// A snapshot of one sequence, for the engine's bookkeeping and for tests.
struct SequenceInfo {
  SequenceState state = SequenceState::Idle;
  int64_t numComputed = 0;  ///< c
  int64_t numTokens = 0;    ///< Token ids known (prompt + appended).
  int64_t numScheduled = 0; ///< n of the pending step, or 0.
  int64_t storeFrom = 0;    ///< st of the pending step.
  /// Positions [validFrom, numComputed) hold accepted values (in held blocks
  /// where >= numComputed - (W-1)).
  int64_t validFrom = 0;
  std::vector<MappedBlock> blocks; ///< Held blocks by logical index.
  /// Snapshot blocks of the pending step (stored below storeFrom, released
  /// to the cache at commit), by logical index.
  std::vector<MappedBlock> snapshotBlocks;
  bool hasCopy = false;
  BlockCopy copy; ///< The pending copy-on-write; src is held until commit.
  /// Same-step hits: the blocks its scheduled step registered as pending
  /// cache entries (promoted at its commit), and the sequences whose
  /// pending blocks it started from (until they commit).
  std::vector<int32_t> pendingBlocks;
  std::vector<SequenceId> pendingWriters;
};

/// The answer of SequenceManager::admission: whether a new (or resumed)
/// sequence fits while `watermark` free blocks stay for the running ones.
struct Admission {
  bool admit = false;
  /// Blocks the sequence takes by the end of its first step: the history
  /// blocks of its hit (counted as free ones) plus its first stored range.
  int64_t neededBlocks = 0;
  /// Blocks the live sequences' next steps may still allocate: for a
  /// decoding one, the blocks of a 1 + lookahead step it does not hold (and
  /// a copy-on-write); for any other (prefilling, scheduled),
  /// maxBlocksPerSequence() - held. Preempted ones reserve nothing.
  int64_t reservedBlocks = 0;
  int64_t freeBlocks = 0; ///< pool().numFreeBlocks(), cached ones included
};

/// Padded shapes of a step, for graph capture.
struct StepShape {
  int64_t numRows = 0;   ///< Rows to fill (>= batch size); 0: batch size.
  int64_t numTokens = 0; ///< Padded token count (>= tokens); 0: tokens.
};

/// What buildStep wrote.
struct StepInfo {
  int64_t numSequences = 0;
  int64_t numRows = 0;
  int64_t numTokens = 0;       ///< Real tokens T.
  int64_t numPaddedTokens = 0; ///< slot_mapping[T, numPaddedTokens) is -1.
  int64_t numCopies = 0;
  /// The step holds a same-step hit: a row starts from blocks another row
  /// of this step writes (SequenceManagerConfig::sameStepHits). The engine
  /// must run every insert of a cache before every conv of that cache
  /// (the unfused order; docs/runtime.md, "Same-step hits").
  bool orderedInsertsRequired = false;
};

class SequenceManager {
public:
  /// Validates the config: layout kernel in [2, 4096] (a kernel of 1 has no
  /// conv state), block size in [1, 65536], numBlocks in [2, 2^31),
  /// lookahead in [0, 1024].
  static StatusOr<std::unique_ptr<SequenceManager>>
  create(const SequenceManagerConfig &config);

  SequenceManager(const SequenceManager &) = delete;
  SequenceManager &operator=(const SequenceManager &) = delete;

  // --- Sequences -----------------------------------------------------------

  /// Adds a sequence with its prompt's token ids. startPosition 0 computes
  /// the prompt from scratch; a positive startPosition resumes at a prefix
  /// hit (a multiple of N, <= numTokens, whose history blocks
  /// [max(0, p-(W-1))/N, p/N) are cached; see longestCachedPrefix) and takes
  /// a reference on each of those blocks.
  StatusOr<SequenceId> addSequence(const int32_t *tokens, int64_t numTokens,
                                   int64_t startPosition = 0);
  StatusOr<SequenceId> addSequence(const std::vector<int32_t> &tokens,
                                   int64_t startPosition = 0) {
    return addSequence(tokens.data(), static_cast<int64_t>(tokens.size()),
                       startPosition);
  }

  /// addSequence with the engine's per-request prefix-caching inputs:
  /// `cachePoints` (strictly increasing positions in [1, numTokens], e.g.
  /// the end of a rendered system prompt) make prefill snapshot the block
  /// boundary at or before each; `extraKeys` (at most kMaxExtraKeyBytes
  /// bytes: cache salt, adapter id, multimodal hashes) seed the hash chain,
  /// so requests with different keys never share a block. A startPosition
  /// must be a hit under the same keys (longestCachedPrefix with them).
  StatusOr<SequenceId>
  addSequence(const int32_t *tokens, int64_t numTokens, int64_t startPosition,
              const int64_t *cachePoints, int64_t numCachePoints,
              const uint8_t *extraKeys = nullptr, int64_t numExtraKeyBytes = 0);

  /// Appends known token ids (e.g. the token sampled by the last step).
  Status appendTokens(SequenceId id, const int32_t *tokens, int64_t count);

  /// Schedules the next `numTokens` positions [c, c+n) (n >= 1; 1 + drafts
  /// for speculative decoding). Allocates the blocks of the stored range,
  /// and the copy-on-write block if needed; OutOfBlocks changes nothing.
  /// The step's first token (position c) must be known.
  Status schedule(SequenceId id, int64_t numTokens);

  /// Async scheduling (the engine schedules step n+1 while step n runs):
  /// like schedule, but the step's first token (position c, the token that
  /// step n samples) may still be unknown. It must arrive (appendTokens)
  /// before the step is built: buildStep and commit refuse a step whose
  /// first token is unknown (FailedPrecondition naming the sequence and the
  /// call; nothing changes). The order per sequence is
  ///   commit(n, k, accepted drafts) -> scheduleAhead(n+1) ->
  ///   appendTokens(sampled token) -> buildStep -> commit(n+1) ...
  /// Blocks and block hashes depend on positions only, so the pending token
  /// changes nothing here: a block's hash completes when its last token
  /// arrives, as with schedule.
  Status scheduleAhead(SequenceId id, int64_t numTokens);

  /// Accepts `numAccepted` (k) of the scheduled tokens: c' = c + k, with
  /// n - k <= lookahead (OutOfRange otherwise: the history of c' would not
  /// be in the cache; commit a valid k or preempt). `newTokens` are appended
  /// first (accepted drafts, then the sampled token); afterwards every
  /// position < c' must have a known token id. Registers newly complete
  /// blocks in the prefix cache and releases every block outside the next
  /// step's history.
  Status commit(SequenceId id, int64_t numAccepted,
                const int32_t *newTokens = nullptr, int64_t numNewTokens = 0);

  /// Batches of schedule and commit, for callers where a call per sequence
  /// is expensive (a C API through ctypes). Each validates the whole batch
  /// (including the blocks it needs, and repeated ids) before changing
  /// anything: it applies every entry or none. commitBatch takes the
  /// appended tokens of entry i as tokens[tokenOffsets[i],
  /// tokenOffsets[i+1]).
  Status scheduleBatch(const SequenceId *ids, const int64_t *numTokens,
                       int64_t count);
  Status commitBatch(const SequenceId *ids, const int64_t *numAccepted,
                     const int64_t *tokenOffsets, const int32_t *tokens,
                     int64_t count);

  /// Releases every block (also of a scheduled step); c becomes 0.
  Status preempt(SequenceId id);
  /// Resumes a preempted sequence at 0 (recompute) or at a prefix hit (see
  /// longestCachedPrefix). `tokens` are the sequence's known token ids, all
  /// numTokens of them: the runtime keeps hashes only for the window, so it
  /// rebuilds the chain from them (and checks them against the sequence's
  /// last block hash and partial block).
  Status resume(SequenceId id, const int32_t *tokens, int64_t numTokens,
                int64_t startPosition = 0);
  /// Resumes without token ids: a hit must lie in the hashes still kept
  /// (the recent window; see longestCachedPrefix(id, ...)), and blocks
  /// whose hashes were dropped are recomputed without being cached again.
  Status resume(SequenceId id, int64_t startPosition = 0);
  Status resume(SequenceId id, const std::vector<int32_t> &tokens,
                int64_t startPosition = 0) {
    return resume(id, tokens.data(), static_cast<int64_t>(tokens.size()),
                  startPosition);
  }
  /// Releases everything and forgets the sequence.
  Status finish(SequenceId id);
  /// A child sharing the parent's blocks (reference counts) and tokens; the
  /// parent must be idle.
  StatusOr<SequenceId> fork(SequenceId parent);

  // --- Prefix cache ----------------------------------------------------------

  /// The largest resume point of a sequence among the block hashes it still
  /// keeps (its recent window); 0 if none. For the full search, pass its
  /// token ids to the overload above.
  StatusOr<int64_t> longestCachedPrefix(SequenceId id, int64_t maxLength) const;

  /// The largest p <= min(maxLength, numTokens), p a positive multiple of N,
  /// such that the blocks [max(0, p-(W-1))/N, p/N) of `tokens` are cached; 0
  /// if none (or caching is off). The engine intersects the result with its
  /// attention groups.
  StatusOr<int64_t> longestCachedPrefix(const int32_t *tokens,
                                        int64_t numTokens,
                                        int64_t maxLength) const;
  /// The same under a request's extra keys (see addSequence).
  StatusOr<int64_t> longestCachedPrefix(const int32_t *tokens,
                                        int64_t numTokens, int64_t maxLength,
                                        const uint8_t *extraKeys,
                                        int64_t numExtraKeyBytes) const;

  /// The EAGLE/MTP hit rule (SequenceManagerConfig::dropLastMatchedBlock)
  /// for lookups from now on.
  void setDropLastMatchedBlock(bool drop) {
    config_.dropLastMatchedBlock = drop;
  }

  /// Same-step hits (SequenceManagerConfig::sameStepHits) for steps
  /// scheduled from now on; entries already pending stay until their
  /// writer commits or drops its step.
  void setSameStepHits(bool enable) { config_.sameStepHits = enable; }
  /// The pending cache entries of scheduled steps (same-step hits).
  int64_t numPendingBlocks() const { return numPendingBlocks_; }
  /// Readers invalidated since the last call, in the order they were: a
  /// writer whose step is dropped before its commit (preempt, finish)
  /// withdraws its pending entries, and every sequence that started from
  /// one is preempted with it (its blocks released, c = 0, its scheduled
  /// step dropped); the engine resumes them (recompute or another hit).
  /// The list is cleared by this call.
  std::vector<SequenceId> takeInvalidatedReaders();
  int64_t numInvalidatedReaders() const {
    return static_cast<int64_t>(invalidated_.size());
  }

  /// Admission (vLLM's can_allocate with its watermark): a sequence of
  /// numTokens known tokens starting at startPosition (0 or its expected
  /// prefix hit) is admitted when free - reserved - needed >= watermark
  /// blocks (see Admission). The window-only footprint is small, so without
  /// this an engine that admits by free blocks alone over-admits and
  /// preempts when the running sequences' next steps need their blocks.
  /// InvalidArgument for numTokens < 1, a start outside [0, numTokens) or a
  /// negative watermark. Changes nothing.
  StatusOr<Admission> admission(int64_t numTokens, int64_t startPosition,
                                int64_t watermarkBlocks) const;

  /// A step's lookups in one call (for callers where a call is expensive):
  /// out[i] = longestCachedPrefix(tokens + offsets[i], offsets[i+1] -
  /// offsets[i], maxLengths[i]). Validates every entry first (offsets
  /// non-negative ranges, maxLengths >= 0); on error `out` is not written.
  Status longestCachedPrefixBatch(const int32_t *tokens,
                                  const int64_t *tokenOffsets,
                                  const int64_t *maxLengths, int64_t count,
                                  int64_t *out) const;

  /// Switches the snapshot policy (steps scheduled from now on); snapshotEvery
  /// in [1, kMaxSnapshotEvery]. InvalidArgument naming the value otherwise.
  Status setPrefixPolicy(PrefixPolicy policy, int64_t snapshotEvery);
  /// The snapshot blocks that sequences hold now (only during a step).
  int64_t numSnapshotBlocks() const { return numSnapshotBlocks_; }

  // --- Steps
  // -------------------------------------------------------------------

  /// Binds caller-owned step buffers sized for this manager's windows.
  StatusOr<StepBuffers> bindStepBuffers(const StepBufferSpec &spec) const;

  /// Writes the metadata of a step over the scheduled sequences `ids` (row b
  /// = ids[b], tokens packed in that order): query_start_loc[0..numRows],
  /// num_computed[0..numRows), block_table rows (null outside each window
  /// and in padding rows), slot_mapping[0..numPaddedTokens) (-1 for tokens
  /// not stored and for padding), block_copies. Validates everything first
  /// (unknown or unscheduled or repeated ids, a window column >= numCols,
  /// too many rows, tokens or copies); on error nothing is written. Does not
  /// change the sequences: it may be called again before commit.
  StatusOr<StepInfo> buildStep(const SequenceId *ids, int64_t numSequences,
                               const StepShape &shape, StepBuffers &buffers);

  // --- Introspection
  // -----------------------------------------------------------

  /// Unique in the process, never reused (newOwnerId): what step buffers
  /// and C handles compare to know their manager.
  uint64_t id() const { return id_; }
  const Layout &layout() const { return config_.layout; }
  const SequenceManagerConfig &config() const { return config_; }
  int64_t blockSize() const { return blockSize_; }
  int64_t lookahead() const { return lookahead_; }
  /// Blocks a sequence can hold during a step: span(W-1) + span(W-1+L).
  int64_t maxBlocksPerSequence() const { return maxHeld_; }
  /// Automatic snapshot blocks a sequence can hold during a step, on top of
  /// maxBlocksPerSequence(): 0 (window); maxBlocksPerSequence() + S *
  /// ceil((W-1)/N) (snapshots: beyond it the lowest are dropped); unbounded
  /// (every-block: the chunk's blocks, like vLLM). Pinned boundaries (the
  /// cache points and the resubmit boundary floor((L-1)/N)*N) are not
  /// capped: ceil((W-1)/N) blocks each on top. Snapshot blocks only take
  /// free blocks and are cached, not held, once the step commits.
  int64_t maxSnapshotBlocks() const;
  /// Blocks a sequence can hold between steps (the bound of docs/Design.md
  /// section 6).
  int64_t maxBlocksBetweenSteps() const;
  /// The during-a-step bound for a layout and lookahead, before a manager
  /// exists (to size a pool): span(W-1) + span(W-1+L).
  static int64_t maxBlocksPerSequence(const Layout &layout, int64_t lookahead);

  const BlockPool &pool() const { return pool_; }
  const PrefixCache &prefixCache() const { return cache_; }
  int64_t numSequences() const { return numLive_; }
  /// Live sequence ids in slot order.
  std::vector<SequenceId> sequenceIds() const;
  StatusOr<SequenceInfo> sequenceInfo(SequenceId id) const;

  /// Cross-checks pool, cache and sequences (reference counts equal the
  /// holders, no leaks, window bounds, cache tags match the map); Internal
  /// with a description on the first violation.
  Status checkInvariants() const;
  /// A deterministic dump of the whole state (pool queue, tags, cache,
  /// sequences); equal dumps mean equal states.
  std::string debugString() const;

private:
  // The hot record of a sequence: one cache line. Positions and counts fit
  // int32 (they stay below 2^31, checked on every call); its slot is its
  // index in seqs_ (slotOf), so that the 128-bit last key fits.
  struct alignas(64) Sequence {
    static constexpr uint32_t kFinished = 0x80000000u;
    // [1, 2^31) while live; | kFinished once finished (so stale handles
    // never match); the next sequence in the slot takes the next one.
    uint32_t generation = 0;
    int32_t numComputed = 0;
    int32_t numTokens = 0;
    int32_t numScheduled = 0;
    int32_t storeFrom = 0;
    int32_t validFrom = 0;
    int32_t copySrc = -1; // -1: no pending copy-on-write
    int32_t copyDst = -1;
    int32_t numHeld = 0;
    uint16_t tailCount = 0; // known tokens after the last whole block (< N)
    SequenceState state = SequenceState::Idle;
    PrefixKey lastHash; // key of the last whole block, or the chain root
    uint64_t buildStamp = 0;

    bool live() const { return generation != 0 && !(generation & kFinished); }
  };

  explicit SequenceManager(const SequenceManagerConfig &config, BlockPool pool);

  // The sequence of a handle, or null (then unknownSequence explains).
  const Sequence *find(SequenceId id) const {
    // Live generations are in [1, 2^31): a positive id never matches a
    // finished or unused slot.
    uint64_t slot = static_cast<uint64_t>(id) & 0xffffffffu;
    if (id <= 0 || slot >= numSlots_ ||
        seqs_[slot].generation != static_cast<uint64_t>(id) >> 32)
      return nullptr;
    return &seqs_[slot];
  }
  Sequence *find(SequenceId id) {
    return const_cast<Sequence *>(std::as_const(*this).find(id));
  }
  Status unknownSequence(SequenceId id, const char *operation) const;
  /// Entry `i` of a batch call: a live sequence not yet seen in this batch
  /// (stamped with buildStamp_, which the caller advanced).
  StatusOr<Sequence *> batchEntry(SequenceId id, int64_t i,
                                  const char *operation);
  // The sequence of a handle if it is preempted (what resuming needs), or
  // why not.
  StatusOr<Sequence *> preemptedSequence(SequenceId id);
  // The index of a sequence in seqs_, held_, tails_, chains_ and the other
  // per-slot vectors.
  size_t slotOf(const Sequence &seq) const { return &seq - seqs_.data(); }
  MappedBlock *heldBlocks(const Sequence &seq) {
    return held_.data() + slotOf(seq) * maxHeld_;
  }
  const MappedBlock *heldBlocks(const Sequence &seq) const {
    return held_.data() + slotOf(seq) * maxHeld_;
  }
  // Prefix caching: the chain hashes of blocks [base, end()) of a
  // sequence's known tokens. Blocks before c/N can never be registered
  // again, so they are dropped (resume rebuilds the chain from the tokens):
  // O(window) per decoding sequence, whatever its length.
  struct HashChain {
    int64_t base = 0;
    std::vector<PrefixKey> hashes;
    int64_t end() const { return base + static_cast<int64_t>(hashes.size()); }
    const PrefixKey &at(int64_t block) const { return hashes[block - base]; }
  };
  HashChain &chainOf(const Sequence &seq) { return chains_[slotOf(seq)]; }
  const HashChain &chainOf(const Sequence &seq) const {
    return chains_[slotOf(seq)];
  }
  void pushHash(Sequence &seq, PrefixKey hash);
  int32_t *tailTokens(const Sequence &seq) {
    return tails_.data() + slotOf(seq) * blockSize_;
  }
  const int32_t *tailTokens(const Sequence &seq) const {
    return tails_.data() + slotOf(seq) * blockSize_;
  }
  // The cached blocks a resume at a block boundary p takes: logical
  // [first, first + count) = the blocks of the W-1 positions before p.
  struct ResumeBlocks {
    int64_t first = 0;
    int32_t count = 0;
    std::vector<int32_t> physical;
  };
  Status checkStartPosition(const HashChain &chain, int64_t numTokens,
                            int64_t startPosition, ResumeBlocks &blocks) const;
  // The first logical block of the W-1 history positions of `position`.
  int64_t firstHistoryBlock(int64_t position) const;
  // The first block whose history-relevant positions are all valid.
  int64_t firstCacheableBlock(const Sequence &seq) const;
  void appendTokensUnchecked(Sequence &seq, const int32_t *tokens,
                             int64_t count);
  void hashTail(Sequence &seq);
  void startAt(Sequence &seq, int64_t startPosition,
               const ResumeBlocks &blocks);
  void releaseAll(Sequence &seq);
  // preempt's work on a known, not preempted sequence.
  void preemptUnchecked(Sequence &seq);
  void registerCompleteBlocks(Sequence &seq, int64_t oldComputed);
  // Same-step hits (SequencePending.cpp).
  void registerPending(Sequence &seq);
  void notePendingReads(Sequence &seq, const ResumeBlocks &blocks);
  void promotePending(Sequence &seq);
  void withdrawPending(Sequence &seq);
  Status checkPendingReads(const SequenceId *ids, int64_t numSequences,
                           bool &ordered) const;
  Status checkPending(const Sequence &seq, const std::string &name) const;
  SequenceId idOf(const Sequence &seq) const {
    return (static_cast<SequenceId>(seq.generation) << 32) | slotOf(seq);
  }
  void releaseOutsideHistory(Sequence &seq, int64_t lo, int64_t hi);
  // What scheduling numTokens of a sequence takes (changes nothing).
  struct SchedulePlan {
    int64_t storeFrom = 0, first = 0, last = 0;
    bool overlap = false, copyOnWrite = false;
    int64_t newEntries = 0, needed = 0;
  };
  // storeFrom >= 0 overrides the window's start (a snapshot next to it).
  SchedulePlan planSchedule(const Sequence &seq, int64_t numTokens,
                            int64_t storeFrom = -1) const;
  Status checkSchedule(const Sequence &seq, SequenceId id, int64_t numTokens,
                       SchedulePlan &plan) const;
  Status checkCommit(const Sequence &seq, SequenceId id, int64_t numAccepted,
                     const int32_t *newTokens, int64_t numNewTokens) const;
  // reserve: free blocks snapshots must leave (for later batch entries).
  Status scheduleGeneral(SequenceId id, int64_t numTokens, int64_t reserve = 0);
  Status commitGeneral(SequenceId id, int64_t numAccepted,
                       const int32_t *newTokens, int64_t numNewTokens);
  Status scheduleError(const Sequence &seq, SequenceId id,
                       int64_t numTokens) const;
  Status commitError(const Sequence &seq, SequenceId id, int64_t numAccepted,
                     const int32_t *newTokens, int64_t numNewTokens) const;
  int32_t newSlot();
  // Snapshots of a step: position ranges [from, to) below the window (to a
  // block boundary) and their blocks.
  struct SnapshotRange {
    int32_t from = 0, to = 0;
    bool pinned = false; // a cache point or the resubmit boundary: no cap
  };
  struct SnapshotPlan {
    std::vector<SnapshotRange> ranges; // descending while planned
    int64_t blocks = 0;
  };
  // Plans a step's snapshots into `snap` (may lower plan.storeFrom to cover
  // one next to the window), leaving out boundaries already cached and,
  // lowest first, what does not fit in `budget` free blocks.
  void planSnapshots(const Sequence &seq, int64_t numTokens, SchedulePlan &plan,
                     SnapshotPlan &snap, int64_t budget) const;
  void releaseSnapshots(Sequence &seq);
  void registerSnapshots(Sequence &seq, int64_t oldValidFrom,
                         int64_t oldComputed);
  // buildStep's parts (SequenceStep.cpp).
  Status checkStepRows(const SequenceId *ids, int64_t numSequences,
                       const StepBufferSpec &spec, int64_t &numTokens,
                       int64_t &numCopies);
  void writeSlots(const Sequence &seq, int64_t *slots) const;
  // checkInvariants' parts (SequenceInvariants.cpp).
  Status checkSequence(const Sequence &seq, std::vector<int64_t> &references,
                       int64_t &totalSnaps) const;
  Status checkSnapshots(const Sequence &seq, const std::string &name,
                        std::vector<int64_t> &references,
                        int64_t &totalSnaps) const;
  Status checkCacheTags() const;
  const PrefixKey &seedOf(const Sequence &seq) const {
    return seeds_[slotOf(seq)];
  }

  // Division by N for positions < 2^31: a shift when N is a power of two
  // (the magic below does not exist for N = 1), else a multiply (Lemire et
  // al., "Faster remainder by direct computation"): a step does several.
  int64_t blockOf(int64_t position) const {
    if (blockShift_ >= 0)
      return position >> blockShift_;
    return static_cast<int64_t>((static_cast<__uint128_t>(divMagic_) *
                                 static_cast<uint32_t>(position)) >>
                                64);
  }

  uint64_t id_ = newOwnerId();
  SequenceManagerConfig config_;
  int64_t blockSize_ = 0; // N
  int64_t history_ = 0;   // W - 1
  int64_t lookahead_ = 0; // L
  int64_t maxHeld_ = 0;
  uint64_t divMagic_ = 0;
  int blockShift_ = -1;   // log2(N) when N is a power of two, else -1
  PrefixKey defaultRoot_; // chainRoot(prefixSeed): no extra keys
  BlockPool pool_;
  PrefixCache cache_;
  std::vector<Sequence> seqs_;
  uint64_t numSlots_ = 0;         // seqs_.size()
  std::vector<MappedBlock> held_; // maxHeld_ per slot
  std::vector<int32_t> tails_;    // blockSize_ per slot
  std::vector<HashChain> chains_; // per slot
  std::vector<int32_t> freeSlots_;
  // Per slot: chain root (prefix seed and extra keys), cache points, and
  // the snapshot ranges and blocks of a pending step.
  std::vector<PrefixKey> seeds_;
  std::vector<int32_t> hitFrom_; // the prefix hit a sequence started at
  std::vector<std::vector<int32_t>> cachePoints_;
  std::vector<std::vector<SnapshotRange>> snapRanges_;
  std::vector<std::vector<MappedBlock>> snapBlocks_;
  int64_t numSnapshotBlocks_ = 0;
  mutable SnapshotPlan snapScratch_;
  mutable std::vector<int64_t> boundScratch_;
  std::vector<int64_t> batchNeeds_;
  int64_t numLive_ = 0;
  uint64_t buildStamp_ = 0;
  // Same-step hits: per slot, the blocks its step made pending, whether
  // that step was built, the readers that started from them (possibly
  // stale: checked against each reader's own list) and the (writer, block)
  // pairs it started from; per block its writer's slot or -1; readers
  // invalidated since takeInvalidatedReaders. When registering,
  // collecting_ receives the blocks a register* call tagged.
  struct PendingRead {
    SequenceId writer = 0;
    int32_t block = 0;
  };
  std::vector<std::vector<int32_t>> pendingOf_;
  std::vector<uint8_t> pendingBuilt_;
  std::vector<std::vector<SequenceId>> readersOf_;
  std::vector<std::vector<PendingRead>> readsFrom_;
  std::vector<int32_t> pendingWriter_;
  std::vector<SequenceId> invalidated_;
  int64_t numPendingBlocks_ = 0;
  std::vector<int32_t> *collecting_ = nullptr;
  std::vector<Sequence *> batch_; // buildStep's validated rows
};

} // namespace inkling

#endif // INKLING_RUNTIME_SEQUENCEMANAGER_H
