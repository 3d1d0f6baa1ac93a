//===- StreamParams.h - Per-stream parameters of a layer -------*- C++ -*-===//
//
// What the fusion test and the fusion benchmark write into their modules'
// signatures: one parameter per stream, named after it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_STREAMPARAMS_H
#define INKLING_UNITTESTS_HARNESS_STREAMPARAMS_H

#include "inkling/Runtime/Layout.h"

#include <string>

namespace inkling::harness {

/// ", %<prefix><stream>: <type(stream)><attributes>" for every stream.
template <typename TypeFn>
std::string streamParams(const std::string &prefix, TypeFn type,
                         const std::string &attributes) {
  std::string out;
  for (Stream s : kAllStreams)
    out += ", %" + prefix + streamName(s) + ": " + type(s) + attributes;
  return out;
}

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_STREAMPARAMS_H
