//===- CApi.cpp - C API of the Inkling sconv runtime ----------------------===//
//
// Thin wrappers: convert C structs, call the C++ API, turn Status into a
// code plus a message. No C++ exception crosses the boundary (allocation
// failures become INKLING_INTERNAL). This file: the shared helpers, the
// layout conversions and the version, status and layout entry points; the
// manager, sequences and steps are in CApiManager.cpp, page unification,
// tensor parallelism and the cache registry in CApiCache.cpp.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include <cstring>

using namespace inkling;
using namespace inkling::capi;

namespace {

void writeError(char *error, size_t capacity, const std::string &message) {
  if (!error || capacity == 0)
    return;
  size_t length = std::min(message.size(), capacity - 1);
  std::memcpy(error, message.data(), length);
  error[length] = '\0';
}

} // namespace

inkling_status_t inkling::capi::report(const Status &status, char *error,
                                       size_t capacity) {
  writeError(error, capacity, status.isOk() ? "" : status.message());
  return static_cast<inkling_status_t>(status.code());
}

Status inkling::capi::nullArgument(const char *name) {
  return invalidArgument(std::string(name) + " is NULL");
}

StatusOr<LayoutConfig>
inkling::capi::toConfig(const inkling_layout_config_t *config) {
  if (!config)
    return nullArgument("layout config");
  LayoutConfig result;
  result.kvHeads = config->kv_heads;
  result.headDim = config->head_dim;
  result.hidden = config->hidden;
  result.kernel = config->kernel;
  result.tp = config->tp;
  result.blockSize = config->block_size;
  if (config->element_type)
    result.elementType = config->element_type;
  return result;
}

StatusOr<Layout>
inkling::capi::toLayout(const inkling_layout_config_t *config) {
  StatusOr<LayoutConfig> c = toConfig(config);
  if (!c)
    return c.status();
  return Layout::derive(*c);
}

void inkling::capi::toC(const Layout &layout, inkling_layout_t &out) {
  forEachLayoutField(layout, out, [](auto &from, auto &to) { to = from; });
  out.page_bytes = layout.pageBytes();
  for (int s = 0; s < kNumStreams; ++s) {
    out.stream_offset[s] = layout.streams[s].offset;
    out.stream_width[s] = layout.streams[s].width;
  }
}

extern "C" {

int32_t inkling_runtime_api_version(void) {
  return INKLING_RUNTIME_API_VERSION;
}

const char *inkling_status_name(inkling_status_t status) {
  if (status < INKLING_OK || status > INKLING_INTERNAL)
    return "unknown";
  return statusCodeName(static_cast<StatusCode>(status));
}

inkling_status_t inkling_layout_derive(const inkling_layout_config_t *config,
                                       inkling_layout_t *out, char *error,
                                       size_t error_capacity) {
  return withLayout(
      config, out, "output layout", error, error_capacity,
      [](const Layout &layout, inkling_layout_t &c) { toC(layout, c); });
}

} // extern "C"
