//===- TensorParallel.h - Per-rank sconv layouts ----------------*- C++ -*-===//
//
// With tensor parallelism of size tp, rank r owns the global KV heads
// [r*H, (r+1)*H) (H = kv_heads / tp) and the matching hidden chunk
// [r*H*hph, (r+1)*H*hph) of the ATTN and MLP streams; D does not depend on tp
// (docs/Design.md sections 2 and 6). checkRankTiling proves that a set of rank
// layouts tiles the unsharded layout exactly: every head and every hidden
// channel is owned by exactly one rank, and every rank packs its rows alike.
// The collectives around the ATTN/MLP convs belong to the serving engine.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_TENSORPARALLEL_H
#define INKLING_RUNTIME_TENSORPARALLEL_H

#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace inkling {

/// The slice of the model that one rank owns, with its layout.
struct RankLayout {
  int64_t rank = 0;
  Layout layout;                          ///< Derived with the config's tp.
  int64_t headBegin = 0, headEnd = 0;     ///< Global KV heads.
  int64_t hiddenBegin = 0, hiddenEnd = 0; ///< Channels of `hidden`.
};

/// Rank `rank` of `config.tp` ranks.
StatusOr<RankLayout> rankLayout(const LayoutConfig &config, int64_t rank);
/// Every rank of `config.tp`, in rank order.
StatusOr<std::vector<RankLayout>> rankLayouts(const LayoutConfig &config);

/// Checks that `ranks` tile the unsharded layout of `config` (its tp is
/// ignored): one rank per id in [0, ranks.size()), all with tp =
/// ranks.size() and the same model sizes, the same D and stream ranges as
/// the unsharded layout, head ranges and hidden ranges that are disjoint and
/// cover [0, kv_heads) and [0, hidden) exactly, and each rank's ranges of the
/// size its layout holds.
Status checkRankTiling(const LayoutConfig &config,
                       const std::vector<RankLayout> &ranks);

} // namespace inkling

#endif // INKLING_RUNTIME_TENSORPARALLEL_H
