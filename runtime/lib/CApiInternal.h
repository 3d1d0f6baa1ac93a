//===- CApiInternal.h - Shared pieces of the C API files --------*- C++ -*-===//
//
// Private to the C API library: the opaque handles, the barrier that keeps
// C++ exceptions inside (`catching`, `guarded`, `withManager`,
// `withRegistry`), `store` and the layout conversions more than one file uses.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_LIB_CAPIINTERNAL_H
#define INKLING_RUNTIME_LIB_CAPIINTERNAL_H

#include "inkling/Runtime/inkling_runtime.h"

#include "inkling/Runtime/CachePlan.h"
#include "inkling/Runtime/SequenceManager.h"

#include <memory>
#include <new>
#include <string>

/// The opaque handles of the C header.
struct inkling_manager {
  std::unique_ptr<inkling::SequenceManager> manager;
  std::string lastError;
};

struct inkling_cache_registry {
  inkling::CacheRegistry registry;
  std::string lastError;
};

struct inkling_cache_plan {
  inkling::CachePlan plan;
};

struct inkling_step_buffers {
  /// The manager's id(), not its handle's address: a manager created
  /// where a destroyed one lived must not pass for it.
  uint64_t ownerId = 0;
  std::unique_ptr<inkling::StepBuffers> buffers;
  bool orderedInsertsRequired = false; ///< of the last successful build
};

namespace inkling::capi {

/// Reports `status` into a caller buffer; returns its code.
inkling_status_t report(const Status &status, char *error, size_t capacity);

/// Reports `status` into a handle's last error; returns its code. (Outside
/// every try: a message that cannot be copied leaves the error empty.)
template <typename Handle>
inkling_status_t report(Handle *handle, const Status &status) {
  if (!status.isOk()) {
    try {
      handle->lastError = status.message();
    } catch (...) {
      handle->lastError.clear();
    }
  }
  return static_cast<inkling_status_t>(status.code());
}

/// Runs `body` (returning a Status): no C++ exception crosses the boundary.
template <typename Body> Status catching(Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return internalError("out of memory");
  } catch (...) {
    return internalError("unexpected C++ exception");
  }
}

/// Runs `body` on a valid manager; a failure's message is its last error.
template <typename Body>
inkling_status_t withManager(inkling_manager *m, Body &&body) {
  if (!m || !m->manager)
    return INKLING_INVALID_ARGUMENT;
  return report(m, catching([&] { return body(*m->manager); }));
}

/// withManager for a call whose value (a StatusOr from `body`) goes to
/// `*out`; NULL `out` is an error naming `what`.
template <typename Out, typename Body>
inkling_status_t withOutput(inkling_manager *m, Out *out, const char *what,
                            Body &&body);

/// Runs `body` on a valid registry; a failure's message is its last error.
template <typename Body>
inkling_status_t withRegistry(inkling_cache_registry *r, Body &&body) {
  if (!r)
    return INKLING_INVALID_ARGUMENT;
  return report(r, catching([&] { return body(r->registry); }));
}

/// Runs `body`; a failure's message goes to the caller's buffer.
template <typename Body>
inkling_status_t guarded(char *error, size_t capacity, Body &&body) {
  return report(catching(body), error, capacity);
}

Status nullArgument(const char *name);

/// Stores a value into a C output (`*out` left alone on an error).
template <typename T, typename Out> Status store(StatusOr<T> value, Out *out) {
  if (!value)
    return value.status();
  *out = *std::move(value);
  return Status::ok();
}

/// The derived fields of a Layout and of the C inkling_layout_t, paired
/// (the streams and the page apart): the list toC and fromC walk.
template <typename L, typename C, typename Fn>
void forEachLayoutField(L &layout, C &c, Fn &&fn) {
  fn(layout.headsPerRank, c.heads_per_rank);
  fn(layout.hiddenPerHead, c.hidden_per_head);
  fn(layout.rawWidth, c.raw_width);
  fn(layout.headSize, c.head_size);
  fn(layout.blockSize, c.block_size);
  fn(layout.slidingWindow, c.sliding_window);
  fn(layout.elementBytes, c.element_bytes);
}

template <typename Out, typename Body>
inkling_status_t withOutput(inkling_manager *m, Out *out, const char *what,
                            Body &&body) {
  return withManager(m, [&](SequenceManager &manager) -> Status {
    if (!out)
      return nullArgument(what);
    return store(body(manager), out);
  });
}

StatusOr<LayoutConfig> toConfig(const inkling_layout_config_t *config);

/// The layout of a C config: converted and derived (the runtime's checks).
StatusOr<Layout> toLayout(const inkling_layout_config_t *config);

/// guarded for a call on the layout of a C config whose result `body`
/// writes to `*out` (NULL: an error naming `what`).
template <typename Out, typename Body>
inkling_status_t withLayout(const inkling_layout_config_t *config, Out *out,
                            const char *what, char *error, size_t capacity,
                            Body &&body) {
  return guarded(error, capacity, [&]() -> Status {
    StatusOr<Layout> layout = toLayout(config);
    if (!layout)
      return layout.status();
    if (!out)
      return nullArgument(what);
    body(*layout, *out);
    return Status::ok();
  });
}

void toC(const Layout &layout, inkling_layout_t &out);

} // namespace inkling::capi

#endif // INKLING_RUNTIME_LIB_CAPIINTERNAL_H
