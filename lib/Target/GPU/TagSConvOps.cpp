//===- TagSConvOps.cpp - inkling-gpu-tag-ops ------------------------------===//
//
// Tags each sconv op with its metadata (op name, streams, layout, other
// attributes) in a fused location that survives the GPU outlining.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Target/GPU/Passes.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvInterfaces.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_TAGSCONVOPSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-tag-ops
//===----------------------------------------------------------------------===//

/// The streams an op names (`stream` or `streams`), e.g. {"k", "v"}.
SmallVector<std::string> streamNames(Operation *op) {
  SmallVector<std::string> names;
  auto add = [&](Attribute attr) {
    if (auto stream = dyn_cast<sconv::StreamAttr>(attr))
      names.push_back(sconv::stringifyStream(stream.getValue()).str());
  };
  if (Attribute one = op->getAttr("stream"))
    add(one);
  if (auto many = dyn_cast_or_null<ArrayAttr>(op->getAttr("streams")))
    for (Attribute attr : many)
      add(attr);
  return names;
}

struct TagSConvOpsPass : impl::TagSConvOpsPassBase<TagSConvOpsPass> {

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    getOperation().walk([&](Operation *op) {
      // The ops that become kernels: the cache's and the unfused epilogues.
      if (!isa<sconv::StepCacheAccessOpInterface, sconv::RmsNormOp,
               sconv::KvWriteOp, sconv::AddRmsNormOp>(op) ||
          findOpInfo(op->getLoc()))
        return;
      Builder b(context);
      SmallVector<Attribute> streams;
      for (const std::string &name : streamNames(op))
        streams.push_back(b.getStringAttr(name));
      // The op's attributes, less the layout (kept on its own) and the
      // streams; what remains (residual, activation, and_insert ...) is part
      // of what the kernel computes.
      SmallVector<NamedAttribute> rest;
      for (NamedAttribute attr : op->getAttrDictionary())
        if (attr.getName() != "layout" && attr.getName() != "stream" &&
            attr.getName() != "streams" &&
            attr.getName() != "operandSegmentSizes")
          rest.push_back(attr);
      std::string signature;
      llvm::raw_string_ostream os(signature);
      llvm::interleaveComma(op->getOperandTypes(), os);
      Attribute layout = op->getAttr("layout");
      NamedAttribute entries[] = {
          b.getNamedAttr(kOpInfoKey,
                         b.getStringAttr(op->getName().getStringRef())),
          b.getNamedAttr("streams", b.getArrayAttr(streams)),
          b.getNamedAttr("layout",
                         b.getStringAttr(layout ? printed(layout) : "")),
          b.getNamedAttr("attributes",
                         b.getStringAttr(printed(b.getDictionaryAttr(rest)))),
          b.getNamedAttr("signature", b.getStringAttr(signature)),
      };
      op->setLoc(
          FusedLoc::get(context, {op->getLoc()}, b.getDictionaryAttr(entries)));
    });
  }
};

} // namespace

} // namespace inkling::gpu
