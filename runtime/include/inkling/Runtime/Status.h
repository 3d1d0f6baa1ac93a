//===- Status.h - Error values of the Inkling runtime -----------*- C++ -*-===//
//
// The runtime never aborts on bad input: every fallible call returns a Status
// (a code plus a message naming the offending value) or a StatusOr<T>.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_STATUS_H
#define INKLING_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace inkling {

/// Stable error codes; the C API exposes the same numbers.
enum class StatusCode : int {
  Ok = 0,
  InvalidArgument = 1,
  OutOfBlocks = 2,
  NotFound = 3,
  FailedPrecondition = 4,
  OutOfRange = 5,
  Unavailable = 6,
  Internal = 7,
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

// The factories, one per code the runtime returns.
inline Status invalidArgument(std::string message) {
  return Status(StatusCode::InvalidArgument, std::move(message));
}
inline Status failedPrecondition(std::string message) {
  return Status(StatusCode::FailedPrecondition, std::move(message));
}
inline Status outOfRange(std::string message) {
  return Status(StatusCode::OutOfRange, std::move(message));
}
inline Status outOfBlocks(std::string message) {
  return Status(StatusCode::OutOfBlocks, std::move(message));
}
inline Status internalError(std::string message) {
  return Status(StatusCode::Internal, std::move(message));
}
inline Status notFound(std::string message) {
  return Status(StatusCode::NotFound, std::move(message));
}
inline Status unavailable(std::string message) {
  return Status(StatusCode::Unavailable, std::move(message));
}

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
