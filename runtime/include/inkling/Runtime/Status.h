//===- Status.h - Error values of the Inkling runtime -----------*- C++ -*-===//
//
// The runtime never aborts on bad input: every fallible call returns a Status
// (a code plus a message naming the offending value) or a StatusOr<T>.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_STATUS_H
#define INKLING_RUNTIME_STATUS_H

#include "inkling/Runtime/inkling_runtime.h"

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace inkling {

/// Stable error codes: the C API's numbers, from its one table
/// (INKLING_STATUS_CODES in inkling_runtime.h).
enum class StatusCode : int {
#define INKLING_STATUS_CODE(c, cxx, value, name) cxx = value,
  INKLING_STATUS_CODES(INKLING_STATUS_CODE)
#undef INKLING_STATUS_CODE
};

/// Returns a short lowercase name for `code`, e.g. "invalid argument".
const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// "<code name>: <message>", or "ok".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// A Status of code `Code`; the factories below name one per code the
/// runtime returns.
template <StatusCode Code> Status makeStatus(std::string message) {
  return Status(Code, std::move(message));
}
inline constexpr auto invalidArgument = makeStatus<StatusCode::InvalidArgument>;
inline constexpr auto failedPrecondition =
    makeStatus<StatusCode::FailedPrecondition>;
inline constexpr auto outOfRange = makeStatus<StatusCode::OutOfRange>;
inline constexpr auto outOfBlocks = makeStatus<StatusCode::OutOfBlocks>;
inline constexpr auto internalError = makeStatus<StatusCode::Internal>;
inline constexpr auto notFound = makeStatus<StatusCode::NotFound>;
inline constexpr auto unavailable = makeStatus<StatusCode::Unavailable>;

/// A value or the Status that explains why there is none.
template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) {
    assert(!status_.isOk() && "StatusOr built from an ok Status");
    if (status_.isOk())
      status_ = Status(StatusCode::Internal, "StatusOr without a value");
  }

  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status &status() const { return status_; }

  const T &value() const & { return *value_; }
  T &value() & { return *value_; }
  T &&value() && { return std::move(*value_); }
  const T &operator*() const & { return *value_; }
  T &operator*() & { return *value_; }
  T &&operator*() && { return std::move(*value_); }
  const T *operator->() const { return &*value_; }
  T *operator->() { return &*value_; }

private:
  std::optional<T> value_;
  Status status_;
};

} // namespace inkling

#endif // INKLING_RUNTIME_STATUS_H
