//===- StepSimulator.h - The kernels' cache accesses, for tests -*- C++ -*-===//
//
// Runs a step's metadata the way the sconv kernels use it (docs/Design.md
// section 4) on a cache of one value per slot, so tests check the block tables
// by their effect: every history tap must read the value its position was
// given, and no slot may be both read and written in a step (but for a
// step with same-step hits, run inserts first: see run). A position's value
// is an identity of the token prefix that produced it, so values written by
// rejected drafts, by another sequence, or never, all differ from the
// expected one.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_STEPSIMULATOR_H
#define INKLING_RUNTIME_UNITTESTS_STEPSIMULATOR_H

#include "inkling/Runtime/SequenceManager.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace inkling::testing {

/// Identity of the prefix ending at a token: a small mixing chain.
inline uint64_t mixToken(uint64_t previous, int32_t token) {
  uint64_t x =
      previous ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) +
                  0x9e3779b97f4a7c15ULL + (previous << 6) + (previous >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return x | 1; // never 0: 0 means "never written"
}

/// identities[q] for every position of `tokens`.
inline std::vector<uint64_t>
prefixIdentities(const std::vector<int32_t> &tokens) {
  std::vector<uint64_t> ids(tokens.size());
  uint64_t current = 0x1234;
  for (size_t q = 0; q < tokens.size(); ++q)
    ids[q] = current = mixToken(current, tokens[q]);
  return ids;
}

class StepSimulator {
public:
  StepSimulator(int64_t numBlocks, int64_t blockSize, int64_t kernel)
      : cache_(numBlocks * blockSize, 0), numBlocks_(numBlocks),
        blockSize_(blockSize), kernel_(kernel) {}

  /// Runs the step described by `spec`/`info`. `identities[b]` gives row
  /// b's value of every position < c + n (the step's tokens, drafts
  /// included). Returns "" or a description of the first violation.
  ///
  /// A step without same-step hits runs its convs before its inserts and
  /// no slot may be both read and written (so any order is right). A step
  /// flagged `orderedInsertsRequired` runs every insert first, then every
  /// conv: a slot may then be read after another row wrote it in the step
  /// ("written before read"), never one the reading row writes itself,
  /// and the value read is checked like any other.
  std::string run(const StepBufferSpec &spec, const StepInfo &info,
                  const std::vector<std::vector<uint64_t>> &identities) {
    std::ostringstream err;
    int64_t n = blockSize_;
    bool ordered = info.orderedInsertsRequired;
    for (int64_t i = 0; i < info.numCopies; ++i) {
      int32_t src = spec.blockCopies[2 * i], dst = spec.blockCopies[2 * i + 1];
      if (src <= 0 || dst <= 0 || src >= numBlocks_ || dst >= numBlocks_)
        return "bad copy " + std::to_string(src) + "->" + std::to_string(dst);
      for (int64_t o = 0; o < n; ++o)
        cache_[dst * n + o] = cache_[src * n + o];
    }
    // The inserts: every stored token's slot (and the row writing it).
    std::map<int64_t, int64_t> writer;
    std::vector<std::pair<int64_t, uint64_t>> stores;
    for (int64_t b = 0; b < info.numSequences; ++b) {
      int64_t c = spec.numComputed[b];
      int64_t begin = spec.queryStartLoc[b], end = spec.queryStartLoc[b + 1];
      for (int64_t t = begin; t < end; ++t) {
        int64_t p = c + (t - begin);
        if (spec.tokenSeq && spec.tokenSeq[t] != b) {
          err << "token " << t << " of row " << b << " has token_seq "
              << spec.tokenSeq[t];
          return err.str();
        }
        int64_t slot = spec.slotMapping[t];
        if (slot == -1)
          continue;
        if (slot < n || slot >= numBlocks_ * n) {
          err << "row " << b << " position " << p << " stores to slot " << slot;
          return err.str();
        }
        if (slot % n != p % n) {
          err << "row " << b << " position " << p << " maps to offset "
              << slot % n;
          return err.str();
        }
        if (!writer.emplace(slot, b).second) {
          err << "slot " << slot << " written twice in one step";
          return err.str();
        }
        stores.emplace_back(slot, identities[b][p]);
      }
    }
    if (ordered)
      for (auto [slot, value] : stores)
        cache_[slot] = value;
    // The convs: every history tap.
    for (int64_t b = 0; b < info.numSequences; ++b) {
      int64_t c = spec.numComputed[b];
      int64_t begin = spec.queryStartLoc[b], end = spec.queryStartLoc[b + 1];
      const int32_t *row = spec.blockTable + b * spec.numCols;
      for (int64_t t = begin; t < end; ++t) {
        int64_t p = c + (t - begin);
        for (int64_t q = std::max<int64_t>(0, p - (kernel_ - 1)); q < c; ++q) {
          int32_t block = row[q / n];
          if (block <= 0 || block >= numBlocks_) {
            err << "row " << b << " position " << p << " reads history " << q
                << " through block " << block;
            return err.str();
          }
          int64_t slot = block * n + q % n;
          auto written = writer.find(slot);
          if (written != writer.end() && (!ordered || written->second == b))
            return "slot " + std::to_string(slot) + " is read and written";
          if (cache_[slot] != identities[b][q]) {
            err << "row " << b << " position " << p << " reads history " << q
                << " from slot " << slot << ": wrong value";
            return err.str();
          }
        }
      }
    }
    for (int64_t t = info.numTokens; t < info.numPaddedTokens; ++t) {
      if (spec.slotMapping[t] != -1)
        return "padding token " + std::to_string(t) + " is not -1";
      if (spec.tokenSeq && spec.tokenSeq[t] != 0)
        return "padding token " + std::to_string(t) + " has token_seq " +
               std::to_string(spec.tokenSeq[t]);
    }
    if (!ordered)
      for (auto [slot, value] : stores)
        cache_[slot] = value;
    return "";
  }

  /// The value last stored in `slot` (0: never written).
  uint64_t value(int64_t slot) const { return cache_[slot]; }

private:
  std::vector<uint64_t> cache_;
  int64_t numBlocks_, blockSize_, kernel_;
};

/// Step buffers with their storage, every entry 77 until the runtime
/// writes it.
struct OwnedStepBuffers : HostStepBuffers {
  OwnedStepBuffers(int64_t maxRows, int64_t numCols, int64_t maxTokens,
                   int64_t maxCopies)
      : HostStepBuffers(maxRows, numCols, maxTokens, maxCopies,
                        /*withTokenSeq=*/true, /*fill=*/77) {}
};

/// Checks that the block table holds exactly each row's window and this
/// step's snapshot blocks (each at its logical column), and nulls
/// elsewhere (also in padding rows); "" or the first violation.
inline std::string checkBlockTable(const SequenceManager &manager,
                                   const StepBufferSpec &spec,
                                   const std::vector<SequenceId> &rows) {
  for (int64_t b = 0; b < spec.maxRows; ++b) {
    std::vector<MappedBlock> expected;
    if (b < static_cast<int64_t>(rows.size())) {
      auto info = manager.sequenceInfo(rows[b]);
      expected = info->blocks;
      expected.insert(expected.end(), info->snapshotBlocks.begin(),
                      info->snapshotBlocks.end());
      std::sort(expected.begin(), expected.end(),
                [](const MappedBlock &x, const MappedBlock &y) {
                  return x.logical < y.logical;
                });
    }
    size_t next = 0;
    for (int64_t j = 0; j < spec.numCols; ++j) {
      int32_t want = 0;
      if (next < expected.size() && expected[next].logical == j)
        want = expected[next++].physical;
      if (spec.blockTable[b * spec.numCols + j] != want)
        return "block_table[" + std::to_string(b) + "][" + std::to_string(j) +
               "] = " + std::to_string(spec.blockTable[b * spec.numCols + j]) +
               ", expected " + std::to_string(want);
    }
  }
  return "";
}

} // namespace inkling::testing

#endif // INKLING_RUNTIME_UNITTESTS_STEPSIMULATOR_H
