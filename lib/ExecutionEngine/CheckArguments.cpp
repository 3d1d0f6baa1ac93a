//===- CheckArguments.cpp - Host buffers against the layer's signature ----===//
//
// LayerProgram::checkArguments: what every caller of invoke() checks first.
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

using namespace inkling;
using namespace inkling::exec;

bool LayerProgram::checkArguments(const std::vector<MemRefArg> &args,
                                  std::string &error) const {
  const LayerSignature &sig = impl_->sig;
  if (args.size() != sig.args.size()) {
    error = "@" + sig.function + " takes " + std::to_string(sig.args.size()) +
            " arguments, got " + std::to_string(args.size());
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &info = sig.args[i];
    const MemRefArg &a = args[i];
    auto bad = [&](const std::string &what) {
      error = "argument " + std::to_string(i) + " of @" + sig.function + " (" +
              (info.stream ? std::string(streamName(*info.stream)) + " " : "") +
              argRoleName(info.role) + ", " + info.type + "): " + what;
      return false;
    };
    size_t rank = info.shape.size();
    if (a.sizes.size() != rank || a.strides.size() != rank)
      return bad("expected " + std::to_string(rank) + " sizes and strides");
    for (size_t d = 0; d < rank; ++d) {
      if (a.sizes[d] < 0)
        return bad("size " + std::to_string(d) + " is " +
                   std::to_string(a.sizes[d]));
      if (info.shape[d] != kDynamic && info.shape[d] != a.sizes[d])
        return bad("size " + std::to_string(d) + " is " +
                   std::to_string(a.sizes[d]) + ", the type says " +
                   std::to_string(info.shape[d]));
    }
    for (size_t d = 0; d < rank; ++d) {
      if (info.strides[d] != kDynamic && info.strides[d] != a.strides[d])
        return bad("stride " + std::to_string(d) + " is " +
                   std::to_string(a.strides[d]) + ", the type says " +
                   std::to_string(info.strides[d]));
    }
    if (info.offset != kDynamic && info.offset != a.offset)
      return bad("offset " + std::to_string(a.offset) + ", the type says " +
                 std::to_string(info.offset));
    // The cache and the bf16 tensors are accessed with vectors; the
    // metadata with scalars.
    bool vectors =
        info.element == ElementKind::BF16 || info.role == ArgRole::Cache;
    uintptr_t align = vectors ? 16 : elementBytes(info.element);
    if (reinterpret_cast<uintptr_t>(a.data) % align != 0)
      return bad(vectors ? "the data pointer is not 16-byte aligned (the "
                           "kernels' vector accesses assume a 16-byte "
                           "aligned base)"
                         : "the data pointer is not aligned to its elements");
  }
  return true;
}
