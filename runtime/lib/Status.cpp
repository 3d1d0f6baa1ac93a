//===- Status.cpp - Error values of the Inkling runtime -------------------===//

#include "inkling/Runtime/Status.h"

namespace inkling {

const char *statusCodeName(StatusCode code) {
  switch (code) {
#define INKLING_STATUS_NAME(c, cxx, value, name)                               \
  case StatusCode::cxx:                                                        \
    return name;
    INKLING_STATUS_CODES(INKLING_STATUS_NAME)
#undef INKLING_STATUS_NAME
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace inkling
