//===- Status.cpp - Error values of the Inkling runtime -------------------===//

#include "inkling/Runtime/Status.h"

namespace inkling {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "ok";
  case StatusCode::InvalidArgument:
    return "invalid argument";
  case StatusCode::OutOfBlocks:
    return "out of blocks";
  case StatusCode::NotFound:
    return "not found";
  case StatusCode::FailedPrecondition:
    return "failed precondition";
  case StatusCode::OutOfRange:
    return "out of range";
  case StatusCode::Unavailable:
    return "unavailable";
  case StatusCode::Internal:
    return "internal";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace inkling
