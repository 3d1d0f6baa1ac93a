//===- PageUnification.h - One page size for sconv and attention *- C++ -*-===//
//
// A serving engine allocates every layer group's cache from one pool of
// equal pages. The unifier (like vLLM's unify_kv_cache_spec_page_size, with
// the sconv backend's `indexes_kv_by_block_stride`) makes the pages agree:
//   * the largest page wins;
//   * a spec whose page divides it scales its block size by the ratio (the
//     page grows with the block size): attention layers, and the sconv
//     cache, whose block size N is independent of the kernel;
//   * otherwise a spec that reads through the block stride is padded: its
//     block size stays, its block stride becomes the largest page (the sconv
//     cache, or an attention backend that opts in);
//   * otherwise it is an error naming both specs.
// A spec may pin its block size (`fixedBlockSize`): then it is padded even
// when its page divides the largest.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_PAGEUNIFICATION_H
#define INKLING_RUNTIME_PAGEUNIFICATION_H

#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace inkling {

/// One layer group's cache as the page unifier sees it.
struct CacheSpec {
  std::string name;
  int64_t blockSize = 0; ///< Tokens per block.
  int64_t pageBytes = 0; ///< Bytes of one block, unpadded.
  /// Padding is allowed: every access goes through the block stride.
  bool readsThroughBlockStride = false;
  /// The block size carries meaning and must not scale (pad instead).
  bool fixedBlockSize = false;
  /// A padded block stride must be a multiple of this (the element size).
  int64_t strideAlignment = 1;

  /// The sconv conv-state cache of `layout`: page = Layout::pageBytes(),
  /// block size N (scales), read through the block stride.
  static CacheSpec sconv(std::string name, const Layout &layout);
  /// An attention cache: page = tensorsPerPage (2: K and V; 1: MLA) *
  /// blockSize * numKvHeads * headSize * dtypeBytes.
  static StatusOr<CacheSpec> attention(std::string name, int64_t blockSize,
                                       int64_t numKvHeads, int64_t headSize,
                                       int64_t dtypeBytes,
                                       bool readsThroughBlockStride = false,
                                       int64_t tensorsPerPage = 2);
};

enum class PageAdjustment {
  None,            ///< Already the unified page.
  ScaledBlockSize, ///< blockSize multiplied by `scale`.
  Padded,          ///< Block stride = unified page > pageBytes.
};
const char *pageAdjustmentName(PageAdjustment adjustment);

struct UnifiedCacheSpec {
  std::string name;
  int64_t blockSize = 0;        ///< After scaling.
  int64_t pageBytes = 0;        ///< Bytes a block uses (scaled, unpadded).
  int64_t blockStrideBytes = 0; ///< = the unified page size.
  PageAdjustment adjustment = PageAdjustment::None;
  int64_t scale = 1;
};

struct UnifiedPages {
  int64_t pageBytes = 0;               ///< The unified page size.
  std::vector<UnifiedCacheSpec> specs; ///< In the input order.
};

StatusOr<UnifiedPages> unifyPageSizes(const std::vector<CacheSpec> &specs);

} // namespace inkling

#endif // INKLING_RUNTIME_PAGEUNIFICATION_H
