//===- PageUnification.cpp - One page size for sconv and attention --------===//

#include "inkling/Runtime/PageUnification.h"
#include "EnumName.h"

#include <set>
#include <string_view>

namespace inkling {

namespace {

constexpr int64_t kMaxPageBytes = int64_t(1) << 40;

std::string describe(const CacheSpec &spec) {
  return "spec '" + spec.name + "' (page " + std::to_string(spec.pageBytes) +
         " bytes, block size " + std::to_string(spec.blockSize) + ")";
}

} // namespace

CacheSpec CacheSpec::sconv(std::string name, const Layout &layout) {
  CacheSpec spec;
  spec.name = std::move(name);
  spec.blockSize = layout.blockSize;
  spec.pageBytes = layout.pageBytes();
  spec.readsThroughBlockStride = true;
  // N is the engine's choice: a dividing larger page scales it (vLLM's
  // first strategy), as it does an attention spec's.
  spec.fixedBlockSize = false;
  spec.strideAlignment = layout.elementBytes;
  return spec;
}

StatusOr<CacheSpec> CacheSpec::attention(std::string name, int64_t blockSize,
                                         int64_t numKvHeads, int64_t headSize,
                                         int64_t dtypeBytes,
                                         bool readsThroughBlockStride,
                                         int64_t tensorsPerPage) {
  int64_t page = 1;
  for (auto [what, value] :
       {std::pair<const char *, int64_t>{"block_size", blockSize},
        {"num_kv_heads", numKvHeads},
        {"head_size", headSize},
        {"dtype_bytes", dtypeBytes},
        {"tensors_per_page", tensorsPerPage}}) {
    if (value < 1)
      return invalidArgument("attention spec '" + name + "': " + what + " (" +
                             std::to_string(value) + ") must be >= 1");
    if (__builtin_mul_overflow(page, value, &page) || page > kMaxPageBytes)
      return invalidArgument("attention spec '" + name +
                             "': page exceeds 2^40 bytes");
  }
  CacheSpec spec;
  spec.name = std::move(name);
  spec.blockSize = blockSize;
  spec.pageBytes = page;
  spec.readsThroughBlockStride = readsThroughBlockStride;
  spec.strideAlignment = dtypeBytes;
  return spec;
}

const char *pageAdjustmentName(PageAdjustment adjustment) {
  static const char *const kNames[] = {"none", "scaled block size", "padded"};
  return enumName(adjustment, kNames);
}

StatusOr<UnifiedPages> unifyPageSizes(const std::vector<CacheSpec> &specs) {
  if (specs.empty())
    return invalidArgument("no cache specs to unify");
  size_t largest = 0;
  std::set<std::string_view> names;
  for (size_t i = 0; i < specs.size(); ++i) {
    const CacheSpec &spec = specs[i];
    // The engine keys its specs by layer name: one spec per name.
    if (spec.name.empty())
      return invalidArgument("cache spec " + std::to_string(i) +
                             " needs a name (got an empty one)");
    if (!names.insert(spec.name).second)
      return invalidArgument("duplicate cache spec name '" + spec.name + "'");
    if (spec.blockSize < 1 || spec.pageBytes < 1 ||
        spec.pageBytes > kMaxPageBytes || spec.strideAlignment < 1)
      return invalidArgument(describe(spec) +
                             ": block size and page must be >= 1, the page "
                             "<= 2^40 bytes, the stride alignment >= 1");
    if (spec.pageBytes > specs[largest].pageBytes)
      largest = i;
  }
  const CacheSpec &winner = specs[largest];
  UnifiedPages result;
  result.pageBytes = winner.pageBytes;
  for (const CacheSpec &spec : specs) {
    UnifiedCacheSpec unified;
    unified.name = spec.name;
    unified.blockSize = spec.blockSize;
    unified.pageBytes = spec.pageBytes;
    unified.blockStrideBytes = result.pageBytes;
    bool divides = result.pageBytes % spec.pageBytes == 0;
    int64_t scale = result.pageBytes / spec.pageBytes;
    if (spec.pageBytes == result.pageBytes) {
      unified.adjustment = PageAdjustment::None;
    } else if (divides && !spec.fixedBlockSize &&
               !__builtin_mul_overflow(spec.blockSize, scale,
                                       &unified.blockSize)) {
      unified.adjustment = PageAdjustment::ScaledBlockSize;
      unified.scale = scale;
      unified.pageBytes = result.pageBytes;
    } else if (spec.readsThroughBlockStride) {
      if (result.pageBytes % spec.strideAlignment != 0)
        return invalidArgument(
            "cannot pad " + describe(spec) + " to the largest page, of " +
            describe(winner) + ": the stride is not a multiple of its " +
            std::to_string(spec.strideAlignment) + "-byte elements");
      unified.adjustment = PageAdjustment::Padded;
    } else {
      std::string why = divides
                            ? "its block size is fixed"
                            : "its page does not divide " +
                                  std::to_string(result.pageBytes) + " bytes";
      return invalidArgument("cannot unify " + describe(spec) +
                             " with the largest page, of " + describe(winner) +
                             ": " + why +
                             ", and it does not read through the block "
                             "stride, so it cannot be padded");
    }
    result.specs.push_back(unified);
  }
  return result;
}

} // namespace inkling
