//===- Layout.h - The sconv conv-state cache layout -------------*- C++ -*-===//
//
// The single source of truth for the packed conv-state cache layout
// (docs/Design.md section 2). The MLIR dialect, the runtime and the tools all
// derive sizes from here; nothing else repeats these formulas.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_LAYOUT_H
#define INKLING_RUNTIME_LAYOUT_H

#include "inkling/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inkling {

/// The four sconv streams of a decoder layer, in their order inside D.
enum class Stream : uint8_t { K = 0, V = 1, Attn = 2, Mlp = 3 };
/// The kernels' ABI: every buffer's base (a cache view's first byte
/// included) is a multiple of this many bytes (docs/Design.md, "Alignment").
inline constexpr int64_t kBufferAlignment = 16;

inline constexpr int kNumStreams = 4;
inline constexpr std::array<Stream, kNumStreams> kAllStreams = {
    Stream::K, Stream::V, Stream::Attn, Stream::Mlp};

/// "k", "v", "attn" or "mlp".
const char *streamName(Stream stream);
std::optional<Stream> parseStream(std::string_view name);

/// What a model layer declares; everything else is derived.
struct LayoutConfig {
  int64_t kvHeads = 0; ///< Global number of KV heads.
  int64_t headDim = 0; ///< Width of one K (and V) head.
  int64_t hidden = 0;  ///< Model hidden size.
  int64_t kernel = 0;  ///< Conv kernel size W.
  int64_t tp = 1;      ///< Tensor-parallel world size.
  /// Element type by its MLIR spelling; only "bf16" is supported.
  std::string elementType = "bf16";
  /// Block size N: tokens per cache block, chosen by the serving engine
  /// (its page unifier may scale it). 0: the kernel W.
  int64_t blockSize = 0;
};

/// A stream's sub-range [offset, offset + width) of the packed head row D.
struct StreamRange {
  int64_t offset = 0;
  int64_t width = 0;
  int64_t end() const { return offset + width; }
};

/// The derived per-rank layout. The cache is [num_blocks, H, N, D] with
/// strides [blockStride, N*D, D, 1] (elements); blockStride >= H*N*D.
struct Layout {
  LayoutConfig config;
  int64_t headsPerRank = 0;  ///< H = kv_heads / tp.
  int64_t hiddenPerHead = 0; ///< hidden / kv_heads.
  int64_t rawWidth = 0;      ///< 2*head_dim + 2*hidden_per_head.
  int64_t headSize = 0;      ///< D: smallest power of two >= rawWidth.
  int64_t blockSize = 0;     ///< N: config.blockSize, or the kernel.
  int64_t slidingWindow = 0; ///< W = kernel.
  int64_t elementBytes = 0;  ///< 2 for bf16.
  std::array<StreamRange, kNumStreams> streams{};

  /// Derives the layout, or explains (naming the value) why `config` is
  /// invalid: any size < 1 (block_size may be 0: the kernel), tp > kv_heads,
  /// kv_heads % tp != 0,
  /// hidden % kv_heads != 0, a non-bf16 element type, or sizes whose page
  /// would overflow 64-bit arithmetic.
  static StatusOr<Layout> derive(const LayoutConfig &config);

  const StreamRange &range(Stream stream) const {
    return streams[static_cast<int>(stream)];
  }
  /// Elements of one head row holding one token (D), one block (H*N*D).
  int64_t tokenStride() const { return headSize; }
  int64_t headStride() const { return blockSize * headSize; }
  int64_t pageElements() const { return headsPerRank * blockSize * headSize; }
  /// H*N*D*elementBytes: the unpadded page.
  int64_t pageBytes() const { return pageElements() * elementBytes; }

  /// Checks that a page of `pageBytes` (possibly padded to a unified page
  /// size) can hold this layout and is a whole number of elements; returns
  /// the block stride in elements.
  StatusOr<int64_t> blockStrideForPageBytes(int64_t pageBytes) const;

  /// Blocks of a buffer of `bufferBytes` viewed with a block stride of
  /// `strideBytes`: those whose unpadded page lies inside it. A cross-layer
  /// allocation hands layer l the view starting at l pages: its last block's
  /// page ends before the stride does.
  int64_t blocksInBuffer(int64_t bufferBytes, int64_t strideBytes) const {
    if (bufferBytes < pageBytes() || strideBytes < 1)
      return 0;
    return (bufferBytes - pageBytes()) / strideBytes + 1;
  }

  /// {num_blocks, H, N, D} with num_blocks as given (may be -1: dynamic).
  std::array<int64_t, 4> cacheShape(int64_t numBlocks) const {
    return {numBlocks, headsPerRank, blockSize, headSize};
  }
  /// {blockStride, N*D, D, 1}.
  std::array<int64_t, 4> cacheStrides(int64_t blockStride) const {
    return {blockStride, headStride(), headSize, 1};
  }
};

} // namespace inkling

#endif // INKLING_RUNTIME_LAYOUT_H
