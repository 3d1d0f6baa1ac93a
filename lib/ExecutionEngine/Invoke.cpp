//===- Invoke.cpp - Call a compiled layer function ------------------------===//
//
// LayerProgram::invoke: one memref descriptor per argument, through the C
// interface.
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

using namespace inkling;
using namespace inkling::exec;

void LayerProgram::invoke(const std::vector<MemRefArg> &args) {
  Impl &impl = *impl_;
  size_t n = args.size();
  impl.descriptors.resize(n);
  impl.descriptorPtrs.resize(n);
  impl.packedArgs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const MemRefArg &a = args[i];
    size_t rank = a.sizes.size();
    std::vector<int64_t> &d = impl.descriptors[i];
    d.resize(3 + 2 * rank);
    d[0] = static_cast<int64_t>(reinterpret_cast<intptr_t>(a.data));
    d[1] = d[0];
    d[2] = a.offset;
    for (size_t r = 0; r < rank; ++r) {
      d[3 + r] = a.sizes[r];
      d[3 + rank + r] = a.strides[r];
    }
    impl.descriptorPtrs[i] = d.data();
    impl.packedArgs[i] = &impl.descriptorPtrs[i];
  }
  impl.packed(impl.packedArgs.data());
}
