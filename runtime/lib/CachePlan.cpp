//===- CachePlan.cpp - A model's cache: layers, blocks, views -------------===//

#include "inkling/Runtime/CachePlan.h"

#include <cstdio>

namespace inkling {

namespace {

std::string list(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

} // namespace

const char *cacheLayerKindName(CacheLayerKind kind) {
  return kind == CacheLayerKind::Sconv ? "sconv" : "attention";
}

const char *cacheLayoutKindName(CacheLayoutKind kind) {
  return kind == CacheLayoutKind::PerLayer ? "per-layer" : "cross-layer";
}

const LayerView *CachePlan::find(std::string_view name) const {
  for (const LayerView &view : layers)
    if (view.name == name)
      return &view;
  return nullptr;
}

int64_t CachePlan::totalBytes() const {
  int64_t total = 0;
  for (const PlanTensor &tensor : tensors)
    total += tensor.bytes;
  return total;
}

std::string CachePlan::describe() const {
  std::string text =
      std::string("cache plan: ") + cacheLayoutKindName(layoutKind) +
      " layout, budget " + std::to_string(budgetBytes) + " bytes\n" +
      "  unified page " + std::to_string(pageBytes) + " bytes; a block of " +
      std::to_string(layers.size()) + " layers " +
      std::to_string(bytesPerBlock) + " bytes; " + std::to_string(numBlocks) +
      " blocks (block 0 the null block); " + std::to_string(tensors.size()) +
      " tensors, " + std::to_string(totalBytes()) + " bytes\n";
  for (size_t t = 0; t < tensors.size(); ++t) {
    text += "  tensor " + std::to_string(t) + ": " +
            std::to_string(tensors[t].bytes) + " bytes, shared by";
    for (const std::string &name : tensors[t].sharedBy)
      text += " " + name;
    text += "\n";
  }
  for (const LayerView &view : layers) {
    text += "  " + view.name + " (" + cacheLayerKindName(view.kind) +
            "): tensor " + std::to_string(view.tensor) + " at byte " +
            std::to_string(view.byteOffset) + ", shape " + list(view.shape) +
            ", strides " + list(view.strides) + " x " +
            std::to_string(view.elementBytes) + " bytes; block size " +
            std::to_string(view.blockSize) + ", page " +
            std::to_string(view.pageBytes) + " bytes, block stride " +
            std::to_string(view.blockStrideBytes) + " bytes (" +
            pageAdjustmentName(view.adjustment);
    if (view.adjustment == PageAdjustment::ScaledBlockSize)
      text += " x" + std::to_string(view.scale);
    text += ")\n";
  }
  return text;
}

Status CacheRegistry::checkName(const std::string &name) const {
  if (planned_)
    return failedPrecondition("cannot register layer '" + name +
                              "': the cache was already planned");
  if (name.empty())
    return invalidArgument("a cache layer needs a name (got an empty one)");
  for (const Entry &entry : layers_)
    if (entry.spec.name == name)
      return invalidArgument("duplicate layer name '" + name + "'");
  return Status::ok();
}

Status CacheRegistry::addSconvLayer(std::string name, const Layout &layout,
                                    int64_t pageBytes) {
  if (Status status = checkName(name); !status)
    return status;
  CacheSpec spec = CacheSpec::sconv(name, layout);
  if (pageBytes < 0)
    return invalidArgument("sconv layer '" + name + "': page_bytes (" +
                           std::to_string(pageBytes) + ") must be >= 0");
  if (pageBytes > 0 && pageBytes != layout.pageBytes()) {
    if (StatusOr<int64_t> stride = layout.blockStrideForPageBytes(pageBytes);
        !stride)
      return invalidArgument("sconv layer '" + name +
                             "': " + stride.status().message());
    // A page padded for other layers: the block size is no longer what
    // the page is proportional to, so it must not scale.
    spec.pageBytes = pageBytes;
    spec.fixedBlockSize = true;
  }
  layers_.push_back({std::move(spec), CacheLayerKind::Sconv, layout, {}});
  return Status::ok();
}

Status CacheRegistry::addAttentionLayer(std::string name,
                                        const AttentionLayerSpec &attention) {
  if (Status status = checkName(name); !status)
    return status;
  StatusOr<CacheSpec> spec = CacheSpec::attention(
      name, attention.blockSize, attention.numKvHeads, attention.headSize,
      attention.dtypeBytes, attention.readsThroughBlockStride,
      attention.tensorsPerPage);
  if (!spec)
    return spec.status();
  layers_.push_back(
      {std::move(*spec), CacheLayerKind::Attention, std::nullopt, attention});
  return Status::ok();
}

StatusOr<CachePlan> CacheRegistry::plan(int64_t budgetBytes,
                                        CacheLayoutKind layoutKind) {
  if (layers_.empty())
    return invalidArgument("no cache layers registered to plan");
  if (budgetBytes < 1)
    return invalidArgument("cache budget (" + std::to_string(budgetBytes) +
                           " bytes) must be >= 1");
  std::vector<CacheSpec> specs;
  for (const Entry &entry : layers_)
    specs.push_back(entry.spec);
  StatusOr<UnifiedPages> unified = unifyPageSizes(specs);
  if (!unified)
    return unified.status();

  CachePlan plan;
  plan.layoutKind = layoutKind;
  plan.budgetBytes = budgetBytes;
  plan.pageBytes = unified->pageBytes;
  bool cross = layoutKind == CacheLayoutKind::CrossLayer;
  if (cross && plan.pageBytes % kBufferAlignment != 0) {
    // Layer l's view starts at byte l * page: a kernel's buffer base.
    // A page the IR pins cannot grow under it; any other page pads.
    for (const Entry &entry : layers_)
      if (entry.spec.fixedBlockSize)
        return invalidArgument(
            "cross-layer pages: layer '" + entry.spec.name +
            "' is compiled for a " + std::to_string(entry.spec.pageBytes) +
            "-byte page, so layer 1's page would start at byte " +
            std::to_string(plan.pageBytes) + ", not a multiple of " +
            std::to_string(kBufferAlignment) +
            " (the kernels need every base 16-byte aligned): compile it "
            "for a page padded to a multiple of " +
            std::to_string(kBufferAlignment) + " bytes");
    plan.pageBytes += kBufferAlignment - plan.pageBytes % kBufferAlignment;
  }
  int64_t numLayers = this->numLayers();
  int64_t needed = 0;
  if (__builtin_mul_overflow(plan.pageBytes, numLayers, &plan.bytesPerBlock) ||
      __builtin_mul_overflow(plan.bytesPerBlock, int64_t(2), &needed))
    return invalidArgument("a block of " + std::to_string(numLayers) +
                           " layers of " + std::to_string(plan.pageBytes) +
                           "-byte pages overflows 64 bits");
  plan.numBlocks = budgetBytes / plan.bytesPerBlock;
  if (plan.numBlocks < 2)
    return invalidArgument(
        "cache budget of " + std::to_string(budgetBytes) +
        " bytes is below one block per layer plus the null block: 2 blocks x " +
        std::to_string(numLayers) + " layers x " +
        std::to_string(plan.pageBytes) +
        "-byte page = " + std::to_string(needed) + " bytes");

  int64_t blockStrideBytes = cross ? plan.bytesPerBlock : plan.pageBytes;
  if (cross)
    plan.tensors.push_back({plan.numBlocks * plan.bytesPerBlock, {}});
  for (int64_t i = 0; i < numLayers; ++i) {
    const Entry &entry = layers_[i];
    const UnifiedCacheSpec &spec = unified->specs[i];
    LayerView view;
    view.name = entry.spec.name;
    view.kind = entry.kind;
    view.blockSize = spec.blockSize;
    view.blockStrideBytes = blockStrideBytes;
    view.adjustment = spec.adjustment;
    view.scale = spec.scale;
    view.tensor = cross ? 0 : i;
    view.byteOffset = cross ? i * plan.pageBytes : 0;
    int64_t nb = plan.numBlocks;
    if (entry.kind == CacheLayerKind::Sconv) {
      LayoutConfig config = entry.layout->config;
      config.blockSize = spec.blockSize;
      StatusOr<Layout> layout = Layout::derive(config);
      if (!layout)
        return invalidArgument(
            "sconv layer '" + view.name + "' at the unified block size " +
            std::to_string(spec.blockSize) + ": " + layout.status().message());
      view.elementBytes = layout->elementBytes;
      view.pageBytes = layout->pageBytes();
      if (view.pageBytes < plan.pageBytes)
        view.adjustment = PageAdjustment::Padded;
      view.shape = {nb, layout->headsPerRank, layout->blockSize,
                    layout->headSize};
      view.strides = {0, layout->headStride(), layout->tokenStride(), 1};
      view.layout = *layout;
    } else {
      const AttentionLayerSpec &a = entry.attention;
      view.elementBytes = a.dtypeBytes;
      view.pageBytes = spec.pageBytes;
      int64_t row = a.numKvHeads * a.headSize;
      view.shape = {nb, a.tensorsPerPage, spec.blockSize, a.numKvHeads,
                    a.headSize};
      view.strides = {0, spec.blockSize * row, row, a.headSize, 1};
    }
    // The unifier keeps every page and padded stride a whole number of
    // elements; a layer's byte offset is a whole number of pages.
    if (blockStrideBytes % view.elementBytes != 0 ||
        view.byteOffset % view.elementBytes != 0)
      return internalError("layer '" + view.name + "': block stride " +
                           std::to_string(blockStrideBytes) +
                           " bytes is not a whole number of " +
                           std::to_string(view.elementBytes) +
                           "-byte elements");
    view.strides[0] = blockStrideBytes / view.elementBytes;
    if (cross) {
      plan.tensors[0].sharedBy.push_back(view.name);
    } else {
      plan.tensors.push_back({nb * plan.pageBytes, {view.name}});
    }
    plan.layers.push_back(std::move(view));
  }
  planned_ = true;
  return plan;
}

} // namespace inkling
