//===- RecordKernelParams.cpp - inkling-gpu-record-params -----------------===//
//
// Records each kernel's lowered parameter types after the NVVM lowering.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Runtime/ManifestSchema.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace inkling::gpu {
namespace mk = inkling::manifest;
#define GEN_PASS_DEF_RECORDKERNELPARAMSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-record-params
//===----------------------------------------------------------------------===//

struct RecordKernelParamsPass
    : impl::RecordKernelParamsPassBase<RecordKernelParamsPass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    auto record = [&](DictionaryAttr entry, LLVM::LLVMFuncOp func,
                      NamedAttrList &update) -> LogicalResult {
      SmallVector<Attribute> params;
      for (Type type : func.getFunctionType().getParams()) {
        if (isa<LLVM::LLVMPointerType>(type))
          params.push_back(b.getStringAttr(mk::kPtrParam));
        else
          params.push_back(b.getStringAttr(printed(type)));
      }
      // The descriptors must expand to exactly these parameters.
      int64_t expected = 0;
      for (Attribute arg : cast<ArrayAttr>(entry.get(mk::kArgs)))
        expected +=
            cast<IntegerAttr>(cast<DictionaryAttr>(arg).get(mk::kParams))
                .getInt();
      if (expected != static_cast<int64_t>(params.size()))
        return func.emitError()
               << "has " << params.size()
               << " parameters, but its memref arguments expand to " << expected
               << " (allocated ptr, aligned ptr, offset, sizes, strides each)";
      // Each descriptor's allocated pointer (never dereferenced by a kernel)
      // declares the element size as its alignment, a true fact that puts
      // the element size into the PTX (`.ptr .align N`): a checker that sees
      // only the PTX (the fake CUDA driver) can then bound the bytes each
      // descriptor reaches.
      unsigned param = 0;
      for (Attribute arg : cast<ArrayAttr>(entry.get(mk::kArgs))) {
        auto d = cast<DictionaryAttr>(arg);
        func.setArgAttr(
            param, LLVM::LLVMDialect::getAlignAttrName(),
            b.getI64IntegerAttr(
                cast<IntegerAttr>(d.get(mk::kElementBytes)).getInt()));
        param += cast<IntegerAttr>(d.get(mk::kParams)).getInt();
      }
      update.set(mk::kParams, b.getArrayAttr(params));
      return success();
    };
    if (failed(updateKernelRecords(module, record)))
      signalPassFailure();
  }
};

} // namespace

} // namespace inkling::gpu
