//===- CachePlan.h - A model's cache: layers, blocks, views -----*- C++ -*-===//
//
// What a serving engine plans once for all layers of a model (like vLLM's
// get_kv_cache_config): every cache layer registered under a unique name
// (sconv layers from their layout, attention layers from their geometry),
// one unified page (unifyPageSizes), the number of blocks a byte budget
// holds (block 0 is the null block) and per layer its view of the
// allocation: shape, element strides, byte offset, block stride and the
// tensor it shares.
//
// Two layouts:
//   * per layer: one tensor per layer of num_blocks unified pages;
//   * cross layer: one tensor; a block is one region of L unified pages,
//     layer l's page at byte l * page (block stride L * page). Layer l's
//     view starts at byte l * page, a buffer base for the kernels, so the
//     page is padded to a multiple of kBufferAlignment (16) bytes; a page
//     pinned by a layer's IR that is not one is refused at plan time.
// Each tensor is num_blocks * (its layers' pages per block) bytes; the
// budget buys num_blocks = budget / (L * page).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_CACHEPLAN_H
#define INKLING_RUNTIME_CACHEPLAN_H

#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/PageUnification.h"
#include "inkling/Runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inkling {

enum class CacheLayerKind { Sconv, Attention };
const char *cacheLayerKindName(CacheLayerKind kind);

enum class CacheLayoutKind { PerLayer, CrossLayer };
const char *cacheLayoutKindName(CacheLayoutKind kind);

/// An attention layer's cache. Its view is [num_blocks, tensorsPerPage,
/// blockSize, numKvHeads, headSize]: a block is one contiguous page (K then
/// V), so a padded block stride keeps every page whole.
struct AttentionLayerSpec {
  int64_t blockSize = 0;
  int64_t numKvHeads = 0;
  int64_t headSize = 0;
  int64_t dtypeBytes = 2;
  /// The backend indexes blocks through the block stride: it may be padded.
  bool readsThroughBlockStride = false;
  int64_t tensorsPerPage = 2; ///< 2: K and V; 1: MLA.
};

/// One layer's view of its tensor (sizes in elements unless named bytes).
struct LayerView {
  std::string name;
  CacheLayerKind kind = CacheLayerKind::Sconv;
  int64_t tensor = 0;       ///< Index into CachePlan::tensors.
  int64_t byteOffset = 0;   ///< Of block 0 of this layer in its tensor.
  int64_t elementBytes = 0; ///< 2 for bf16.
  int64_t blockSize = 0;    ///< Tokens per block, after unification.
  int64_t pageBytes = 0;    ///< Bytes a block of this layer uses.
  int64_t blockStrideBytes = 0;
  PageAdjustment adjustment = PageAdjustment::None;
  int64_t scale = 1;
  std::vector<int64_t> shape;   ///< Leading dimension num_blocks.
  std::vector<int64_t> strides; ///< Elements; strides[0] = the block stride.
  /// Sconv layers: the layout at the unified block size (what binds the IR).
  std::optional<Layout> layout;
};

struct PlanTensor {
  int64_t bytes = 0;
  std::vector<std::string> sharedBy; ///< Layer names, in registration order.
};

struct CachePlan {
  CacheLayoutKind layoutKind = CacheLayoutKind::PerLayer;
  int64_t budgetBytes = 0;
  int64_t pageBytes = 0;     ///< The unified page.
  int64_t bytesPerBlock = 0; ///< One block of every layer: L * page.
  int64_t numBlocks = 0;     ///< Including the null block 0.
  std::vector<PlanTensor> tensors;
  std::vector<LayerView> layers; ///< In registration order.

  /// The view of layer `name`, or null.
  const LayerView *find(std::string_view name) const;
  /// Bytes of all tensors (<= budgetBytes).
  int64_t totalBytes() const;
  /// A human-readable table of the plan (what `inkling-run --print-plan`
  /// prints).
  std::string describe() const;
};

/// The model's cache layers by name, then its plan. Registration is
/// refused (state unchanged) for an empty or duplicate name, invalid
/// geometry, or once a plan was made.
class CacheRegistry {
public:
  /// An sconv layer. `pageBytes` > 0: the page the layer's IR was compiled
  /// for (a `page_bytes` of its bind above the layout's page, i.e. already
  /// padded); its block size is then pinned. 0: the layout's page.
  Status addSconvLayer(std::string name, const Layout &layout,
                       int64_t pageBytes = 0);
  Status addAttentionLayer(std::string name, const AttentionLayerSpec &spec);

  /// Plans `budgetBytes` for the registered layers. Errors (state
  /// unchanged): no layers, pages that neither scale nor pad, a budget
  /// below one block per layer plus the null block, cross-layer pages
  /// pinned to a size that is not a multiple of kBufferAlignment. A successful
  /// plan freezes the registry (it may be planned again, e.g. for another
  /// budget).
  StatusOr<CachePlan> plan(int64_t budgetBytes, CacheLayoutKind layoutKind);

  int64_t numLayers() const { return static_cast<int64_t>(layers_.size()); }
  bool planned() const { return planned_; }

private:
  struct Entry {
    CacheSpec spec;
    CacheLayerKind kind;
    std::optional<Layout> layout;
    AttentionLayerSpec attention;
  };
  Status checkName(const std::string &name) const;

  std::vector<Entry> layers_;
  bool planned_ = false;
};

} // namespace inkling

#endif // INKLING_RUNTIME_CACHEPLAN_H
