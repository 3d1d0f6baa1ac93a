//===- CApiCache.cpp - C API: page sizes, tensor parallel, cache plan -----===//
//
// The C entry points of page-size unification, the per-rank layouts and
// the cache registry and its plans.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include "inkling/Runtime/PageUnification.h"
#include "inkling/Runtime/TensorParallel.h"

using namespace inkling;
using namespace inkling::capi;

namespace {

/// The C++ layout a caller's C struct describes (derived, then overwritten
/// with the struct's values, so a doctored struct is checked as given).
Layout fromC(const LayoutConfig &config, const inkling_layout_t &in) {
  Layout layout;
  layout.config = config;
  forEachLayoutField(layout, in, [](auto &to, auto &from) { to = from; });
  for (int s = 0; s < kNumStreams; ++s)
    layout.streams[s] = StreamRange{in.stream_offset[s], in.stream_width[s]};
  return layout;
}

void toC(const CacheSpec &spec, const char *name, inkling_cache_spec_t &out) {
  out = {name,
         spec.blockSize,
         spec.pageBytes,
         spec.readsThroughBlockStride,
         spec.fixedBlockSize,
         spec.strideAlignment};
}

CacheSpec fromC(const inkling_cache_spec_t &in) {
  return {in.name ? in.name : "",
          in.block_size,
          in.page_bytes,
          in.reads_through_block_stride != 0,
          in.fixed_block_size != 0,
          in.stride_alignment};
}

AttentionLayerSpec fromC(const inkling_attention_layer_t &in) {
  AttentionLayerSpec spec;
  spec.blockSize = in.block_size;
  spec.numKvHeads = in.num_kv_heads;
  spec.headSize = in.head_size;
  spec.dtypeBytes = in.dtype_bytes;
  spec.readsThroughBlockStride = in.reads_through_block_stride != 0;
  spec.tensorsPerPage = in.tensors_per_page;
  return spec;
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Page-size unification and tensor parallelism
//===----------------------------------------------------------------------===//

inkling_status_t inkling_cache_spec_sconv(const inkling_layout_config_t *config,
                                          const char *name,
                                          inkling_cache_spec_t *out,
                                          char *error, size_t error_capacity) {
  return withLayout(config, out, "output cache spec", error, error_capacity,
                    [&](const Layout &layout, inkling_cache_spec_t &c) {
                      toC(CacheSpec::sconv(name ? name : "", layout), name, c);
                    });
}

inkling_status_t inkling_cache_spec_attention(
    const char *name, int64_t block_size, int64_t num_kv_heads,
    int64_t head_size, int64_t dtype_bytes, int32_t reads_through_block_stride,
    int64_t tensors_per_page, inkling_cache_spec_t *out, char *error,
    size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    if (!out)
      return nullArgument("output cache spec");
    StatusOr<CacheSpec> spec = CacheSpec::attention(
        name ? name : "", block_size, num_kv_heads, head_size, dtype_bytes,
        reads_through_block_stride != 0, tensors_per_page);
    if (!spec)
      return spec.status();
    toC(*spec, name, *out);
    return Status::ok();
  });
}

inkling_status_t inkling_unify_page_sizes(const inkling_cache_spec_t *specs,
                                          int64_t num_specs,
                                          inkling_unified_spec_t *out,
                                          int64_t *out_page_bytes, char *error,
                                          size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    if (num_specs < 0 || (num_specs > 0 && (!specs || !out)))
      return invalidArgument("spec and output arrays of " +
                             std::to_string(num_specs) +
                             " entries must be non-NULL");
    std::vector<CacheSpec> cpp;
    for (int64_t i = 0; i < num_specs; ++i)
      cpp.push_back(fromC(specs[i]));
    StatusOr<UnifiedPages> unified = unifyPageSizes(cpp);
    if (!unified)
      return unified.status();
    for (int64_t i = 0; i < num_specs; ++i) {
      const UnifiedCacheSpec &spec = unified->specs[i];
      out[i].block_size = spec.blockSize;
      out[i].page_bytes = spec.pageBytes;
      out[i].block_stride_bytes = spec.blockStrideBytes;
      out[i].adjustment = static_cast<int32_t>(spec.adjustment);
      out[i].scale = spec.scale;
    }
    if (out_page_bytes)
      *out_page_bytes = unified->pageBytes;
    return Status::ok();
  });
}

inkling_status_t inkling_rank_layouts(const inkling_layout_config_t *config,
                                      inkling_rank_layout_t *out,
                                      int64_t capacity, char *error,
                                      size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<LayoutConfig> c = toConfig(config);
    if (!c)
      return c.status();
    StatusOr<std::vector<RankLayout>> ranks = rankLayouts(*c);
    if (!ranks)
      return ranks.status();
    if (!out || capacity < static_cast<int64_t>(ranks->size()))
      return invalidArgument("output array of " + std::to_string(capacity) +
                             " entries cannot hold tp = " +
                             std::to_string(ranks->size()) + " ranks");
    for (size_t r = 0; r < ranks->size(); ++r) {
      const RankLayout &rank = (*ranks)[r];
      out[r].rank = rank.rank;
      out[r].tp = c->tp;
      out[r].head_begin = rank.headBegin;
      out[r].head_end = rank.headEnd;
      out[r].hidden_begin = rank.hiddenBegin;
      out[r].hidden_end = rank.hiddenEnd;
      toC(rank.layout, out[r].layout);
    }
    return Status::ok();
  });
}

inkling_status_t
inkling_check_rank_tiling(const inkling_layout_config_t *config,
                          const inkling_rank_layout_t *ranks, int64_t num_ranks,
                          char *error, size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<LayoutConfig> c = toConfig(config);
    if (!c)
      return c.status();
    if (num_ranks < 0 || (num_ranks > 0 && !ranks))
      return invalidArgument("rank array of " + std::to_string(num_ranks) +
                             " entries must be non-NULL");
    std::vector<RankLayout> cpp(num_ranks);
    for (int64_t r = 0; r < num_ranks; ++r) {
      LayoutConfig rankConfig = *c;
      rankConfig.tp = ranks[r].tp;
      cpp[r].rank = ranks[r].rank;
      cpp[r].layout = fromC(rankConfig, ranks[r].layout);
      cpp[r].headBegin = ranks[r].head_begin;
      cpp[r].headEnd = ranks[r].head_end;
      cpp[r].hiddenBegin = ranks[r].hidden_begin;
      cpp[r].hiddenEnd = ranks[r].hidden_end;
    }
    return checkRankTiling(*c, cpp);
  });
}

inkling_status_t inkling_cache_registry_create(inkling_cache_registry_t **out) {
  if (!out)
    return INKLING_INVALID_ARGUMENT;
  auto *registry = new (std::nothrow) inkling_cache_registry;
  if (!registry)
    return INKLING_INTERNAL;
  *out = registry;
  return INKLING_OK;
}

void inkling_cache_registry_destroy(inkling_cache_registry_t *registry) {
  delete registry;
}

const char *
inkling_cache_registry_last_error(const inkling_cache_registry_t *registry) {
  return registry ? registry->lastError.c_str() : "registry is NULL";
}

inkling_status_t inkling_cache_registry_add_sconv(
    inkling_cache_registry_t *registry, const char *name,
    const inkling_layout_config_t *config, int64_t page_bytes) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!name)
      return nullArgument("layer name");
    StatusOr<Layout> layout = toLayout(config);
    if (!layout)
      return Status(layout.status().code(),
                    "sconv layer '" + std::string(name) +
                        "': " + layout.status().message());
    return r.addSconvLayer(name, *layout, page_bytes);
  });
}

inkling_status_t
inkling_cache_registry_add_attention(inkling_cache_registry_t *registry,
                                     const char *name,
                                     const inkling_attention_layer_t *spec) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!name)
      return nullArgument("layer name");
    if (!spec)
      return nullArgument("attention layer spec");
    return r.addAttentionLayer(name, fromC(*spec));
  });
}

inkling_status_t inkling_cache_registry_plan(inkling_cache_registry_t *registry,
                                             int64_t budget_bytes,
                                             int32_t layout,
                                             inkling_cache_plan_t **out) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!out)
      return nullArgument("output plan pointer");
    if (layout != INKLING_CACHE_PER_LAYER &&
        layout != INKLING_CACHE_CROSS_LAYER)
      return invalidArgument("cache layout (" + std::to_string(layout) +
                             ") must be INKLING_CACHE_PER_LAYER (0) or "
                             "INKLING_CACHE_CROSS_LAYER (1)");
    auto handle = std::make_unique<inkling_cache_plan>();
    StatusOr<CachePlan> plan =
        r.plan(budget_bytes, layout == INKLING_CACHE_CROSS_LAYER
                                 ? CacheLayoutKind::CrossLayer
                                 : CacheLayoutKind::PerLayer);
    if (!plan)
      return plan.status();
    handle->plan = std::move(*plan);
    *out = handle.release();
    return Status::ok();
  });
}

void inkling_cache_plan_destroy(inkling_cache_plan_t *plan) { delete plan; }

inkling_status_t inkling_cache_plan_info(const inkling_cache_plan_t *plan,
                                         inkling_cache_plan_info_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  const CachePlan &p = plan->plan;
  out->layout = p.layoutKind == CacheLayoutKind::CrossLayer
                    ? INKLING_CACHE_CROSS_LAYER
                    : INKLING_CACHE_PER_LAYER;
  out->budget_bytes = p.budgetBytes;
  out->page_bytes = p.pageBytes;
  out->bytes_per_block = p.bytesPerBlock;
  out->num_blocks = p.numBlocks;
  out->num_tensors = static_cast<int64_t>(p.tensors.size());
  out->num_layers = static_cast<int64_t>(p.layers.size());
  return INKLING_OK;
}

inkling_status_t
inkling_cache_plan_tensor_bytes(const inkling_cache_plan_t *plan,
                                int64_t tensor, int64_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  if (tensor < 0 || tensor >= static_cast<int64_t>(plan->plan.tensors.size()))
    return INKLING_OUT_OF_RANGE;
  *out = plan->plan.tensors[tensor].bytes;
  return INKLING_OK;
}

inkling_status_t inkling_cache_plan_layer(const inkling_cache_plan_t *plan,
                                          int64_t layer,
                                          inkling_layer_view_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  if (layer < 0 || layer >= static_cast<int64_t>(plan->plan.layers.size()))
    return INKLING_OUT_OF_RANGE;
  const LayerView &view = plan->plan.layers[layer];
  int32_t kind = view.kind == CacheLayerKind::Sconv
                     ? INKLING_CACHE_LAYER_SCONV
                     : INKLING_CACHE_LAYER_ATTENTION;
  inkling_layer_view_t result = {view.name.c_str(),
                                 kind,
                                 view.tensor,
                                 view.byteOffset,
                                 view.elementBytes,
                                 view.blockSize,
                                 view.pageBytes,
                                 view.blockStrideBytes,
                                 static_cast<int32_t>(view.adjustment),
                                 view.scale,
                                 static_cast<int32_t>(view.shape.size()),
                                 {},
                                 {}};
  for (size_t d = 0; d < view.shape.size() && d < 5; ++d) {
    result.shape[d] = view.shape[d];
    result.strides[d] = view.strides[d];
  }
  *out = result;
  return INKLING_OK;
}

} // extern "C"
