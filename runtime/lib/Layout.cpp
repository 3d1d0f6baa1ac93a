//===- Layout.cpp - The sconv conv-state cache layout ---------------------===//

#include "inkling/Runtime/Layout.h"
#include "EnumName.h"

#include <string>

namespace inkling {

const char *streamName(Stream stream) {
  static const char *const kNames[] = {"k", "v", "attn", "mlp"};
  return enumName(stream, kNames);
}

std::optional<Stream> parseStream(std::string_view name) {
  for (Stream stream : kAllStreams)
    if (name == streamName(stream))
      return stream;
  return std::nullopt;
}

namespace {

/// Sizes are capped so that every derived product (page bytes, offsets of
/// a few million blocks) stays far from int64 overflow.
constexpr int64_t kMaxPageBytes = int64_t(1) << 40;

std::string named(const char *name, int64_t value) {
  return std::string(name) + " (" + std::to_string(value) + ")";
}

bool checkedMul(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

int64_t elementBytesOf(const std::string &type) {
  return type == "bf16" ? 2 : 0;
}

} // namespace

StatusOr<Layout> Layout::derive(const LayoutConfig &config) {
  const std::pair<const char *, int64_t> sizes[] = {
      {"kv_heads", config.kvHeads},
      {"head_dim", config.headDim},
      {"hidden", config.hidden},
      {"kernel", config.kernel},
      {"tp", config.tp},
  };
  for (const auto &[name, value] : sizes)
    if (value < 1)
      return invalidArgument(std::string(name) + " must be >= 1, got " +
                             std::to_string(value));
  // 0 asks for the default (the kernel); a layout that names it needs >= 1.
  if (config.blockSize < 0)
    return invalidArgument("block_size must be >= 1, got " +
                           std::to_string(config.blockSize));
  if (config.tp > config.kvHeads)
    return invalidArgument(named("tp", config.tp) + " exceeds " +
                           named("kv_heads", config.kvHeads) +
                           ": every rank needs at least one whole KV head");
  if (config.kvHeads % config.tp != 0)
    return invalidArgument(named("kv_heads", config.kvHeads) +
                           " is not divisible by " + named("tp", config.tp));
  if (config.hidden % config.kvHeads != 0)
    return invalidArgument(named("hidden", config.hidden) +
                           " is not divisible by " +
                           named("kv_heads", config.kvHeads));
  int64_t elementBytes = elementBytesOf(config.elementType);
  if (elementBytes == 0)
    return invalidArgument("element type '" + config.elementType +
                           "' is not supported: the sconv cache holds bf16");

  Layout layout;
  layout.config = config;
  layout.headsPerRank = config.kvHeads / config.tp;
  layout.hiddenPerHead = config.hidden / config.kvHeads;
  layout.blockSize = config.blockSize == 0 ? config.kernel : config.blockSize;
  layout.slidingWindow = config.kernel;
  layout.elementBytes = elementBytes;

  // Every factor is <= 2^40 here only if the page is; check as we go.
  auto tooLarge = [&] {
    return invalidArgument(
        "layout too large: the page of " + named("kv_heads", config.kvHeads) +
        ", " + named("head_dim", config.headDim) + ", " +
        named("hidden", config.hidden) + ", " +
        named("block_size", layout.blockSize) + " exceeds 2^40 bytes");
  };
  if (config.headDim > kMaxPageBytes || layout.hiddenPerHead > kMaxPageBytes ||
      config.kernel > kMaxPageBytes || layout.blockSize > kMaxPageBytes)
    return tooLarge();
  layout.rawWidth = 2 * config.headDim + 2 * layout.hiddenPerHead;
  int64_t headSize = 1;
  while (headSize < layout.rawWidth)
    headSize <<= 1;
  layout.headSize = headSize;

  int64_t page = 0;
  if (!checkedMul(layout.headsPerRank, layout.blockSize, page) ||
      !checkedMul(page, layout.headSize, page) ||
      !checkedMul(page, elementBytes, page) || page > kMaxPageBytes)
    return tooLarge();

  int64_t hd = config.headDim, hph = layout.hiddenPerHead;
  layout.streams = {StreamRange{0, hd}, StreamRange{hd, hd},
                    StreamRange{2 * hd, hph}, StreamRange{2 * hd + hph, hph}};
  return layout;
}

StatusOr<int64_t> Layout::blockStrideForPageBytes(int64_t bytes) const {
  if (bytes < pageBytes())
    return invalidArgument("page_bytes (" + std::to_string(bytes) +
                           ") is smaller than the layout's page of " +
                           std::to_string(pageBytes()) + " bytes (H*N*D*" +
                           std::to_string(elementBytes) + ")");
  if (bytes % elementBytes != 0)
    return invalidArgument("page_bytes (" + std::to_string(bytes) +
                           ") is not a multiple of the element size (" +
                           std::to_string(elementBytes) + " bytes)");
  if (bytes > kMaxPageBytes)
    return invalidArgument("page_bytes (" + std::to_string(bytes) +
                           ") exceeds 2^40 bytes");
  return bytes / elementBytes;
}

} // namespace inkling
