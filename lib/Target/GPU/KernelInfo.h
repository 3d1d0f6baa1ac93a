//===- KernelInfo.h - Helpers of the GPU kernel passes ----------*- C++ -*-===//
//
// What several passes around the GPU outlining share: printing attributes and
// types into the kernel metadata, and finding the op metadata
// `inkling-gpu-tag-ops` attached to a location.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_TARGET_GPU_KERNELINFO_H
#define INKLING_LIB_TARGET_GPU_KERNELINFO_H

#include "inkling/Target/GPU/Passes.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace inkling::gpu {

inline std::string printed(mlir::Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

inline std::string printed(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The op metadata `inkling-gpu-tag-ops` put into `loc`, if any.
inline mlir::DictionaryAttr findOpInfo(mlir::Location loc) {
  mlir::DictionaryAttr found;
  loc->walk([&](mlir::Location inner) {
    if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(inner))
      if (auto dict =
              mlir::dyn_cast_or_null<mlir::DictionaryAttr>(fused.getMetadata()))
        if (dict.get(kOpInfoKey)) {
          found = dict;
          return mlir::WalkResult::interrupt();
        }
    return mlir::WalkResult::advance();
  });
  return found;
}

} // namespace inkling::gpu

#endif // INKLING_LIB_TARGET_GPU_KERNELINFO_H
