//===- TensorParallel.cpp - Per-rank sconv layouts ------------------------===//

#include "inkling/Runtime/TensorParallel.h"

#include <algorithm>
#include <string>

namespace inkling {

namespace {

std::string range(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

/// Checks that the ranges, sorted by begin, cover [0, total) with no gap
/// and no overlap.
Status checkCover(std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>>
                      ranges, // ((begin, end), rank)
                  int64_t total, const char *what) {
  std::sort(ranges.begin(), ranges.end());
  int64_t covered = 0;
  int64_t previousRank = -1;
  for (const auto &[bounds, rank] : ranges) {
    auto [begin, end] = bounds;
    if (begin < covered)
      return invalidArgument(std::string(what) + " " + range(begin, end) +
                             " of rank " + std::to_string(rank) +
                             " overlap those of rank " +
                             std::to_string(previousRank) + " (up to " +
                             std::to_string(covered) + ")");
    if (begin > covered)
      return invalidArgument(std::string(what) + " " + range(covered, begin) +
                             " belong to no rank");
    covered = end;
    previousRank = rank;
  }
  if (covered != total)
    return invalidArgument(std::string(what) + " " + range(covered, total) +
                           " belong to no rank");
  return Status::ok();
}

} // namespace

StatusOr<RankLayout> rankLayout(const LayoutConfig &config, int64_t rank) {
  StatusOr<Layout> layout = Layout::derive(config);
  if (!layout)
    return layout.status();
  if (rank < 0 || rank >= config.tp)
    return outOfRange("rank (" + std::to_string(rank) +
                      ") must be in [0, tp = " + std::to_string(config.tp) +
                      ")");
  RankLayout result;
  result.rank = rank;
  result.layout = *layout;
  int64_t heads = layout->headsPerRank;
  result.headBegin = rank * heads;
  result.headEnd = result.headBegin + heads;
  result.hiddenBegin = result.headBegin * layout->hiddenPerHead;
  result.hiddenEnd = result.headEnd * layout->hiddenPerHead;
  return result;
}

StatusOr<std::vector<RankLayout>> rankLayouts(const LayoutConfig &config) {
  std::vector<RankLayout> ranks;
  for (int64_t rank = 0; rank < std::max<int64_t>(config.tp, 1); ++rank) {
    StatusOr<RankLayout> layout = rankLayout(config, rank);
    if (!layout)
      return layout.status();
    ranks.push_back(*layout);
  }
  return ranks;
}

Status checkRankTiling(const LayoutConfig &config,
                       const std::vector<RankLayout> &ranks) {
  LayoutConfig unshardedConfig = config;
  unshardedConfig.tp = 1;
  StatusOr<Layout> unsharded = Layout::derive(unshardedConfig);
  if (!unsharded)
    return unsharded.status();
  if (ranks.empty())
    return invalidArgument("no ranks to check");
  int64_t tp = static_cast<int64_t>(ranks.size());
  std::vector<char> seen(tp, 0);
  std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>> heads, hidden;
  for (const RankLayout &rank : ranks) {
    std::string name = "rank " + std::to_string(rank.rank);
    const Layout &layout = rank.layout;
    const LayoutConfig &c = layout.config;
    if (rank.rank < 0 || rank.rank >= tp || seen[rank.rank])
      return invalidArgument(name + " is out of [0, " + std::to_string(tp) +
                             ") or repeated");
    seen[rank.rank] = 1;
    if (c.tp != tp)
      return invalidArgument(name + " was derived for tp " +
                             std::to_string(c.tp) + ", but there are " +
                             std::to_string(tp) + " ranks");
    if (c.kvHeads != config.kvHeads || c.headDim != config.headDim ||
        c.hidden != config.hidden || c.kernel != config.kernel ||
        c.elementType != config.elementType)
      return invalidArgument(name + " was derived from other model sizes");
    if (layout.headSize != unsharded->headSize ||
        layout.rawWidth != unsharded->rawWidth ||
        layout.blockSize != unsharded->blockSize)
      return invalidArgument(
          name + " packs rows of D = " + std::to_string(layout.headSize) +
          ", the unsharded layout D = " + std::to_string(unsharded->headSize));
    for (Stream stream : kAllStreams)
      if (layout.range(stream).offset != unsharded->range(stream).offset ||
          layout.range(stream).width != unsharded->range(stream).width)
        return invalidArgument(name + " places stream " + streamName(stream) +
                               " elsewhere than the unsharded layout");
    if (rank.headEnd - rank.headBegin != layout.headsPerRank)
      return invalidArgument(
          name + " owns heads " + range(rank.headBegin, rank.headEnd) +
          " but its layout holds " + std::to_string(layout.headsPerRank));
    if (rank.hiddenBegin != rank.headBegin * unsharded->hiddenPerHead ||
        rank.hiddenEnd != rank.headEnd * unsharded->hiddenPerHead)
      return invalidArgument(name + " owns hidden " +
                             range(rank.hiddenBegin, rank.hiddenEnd) +
                             ", not the chunk of its heads " +
                             range(rank.headBegin, rank.headEnd));
    heads.push_back({{rank.headBegin, rank.headEnd}, rank.rank});
    hidden.push_back({{rank.hiddenBegin, rank.hiddenEnd}, rank.rank});
  }
  if (Status status = checkCover(heads, config.kvHeads, "heads"); !status)
    return status;
  return checkCover(hidden, config.hidden, "hidden channels");
}

} // namespace inkling
