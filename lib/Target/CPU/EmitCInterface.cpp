//===- EmitCInterface.cpp - inkling-cpu-emit-c-interface ------------------===//

#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_EMITCINTERFACEPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {
struct EmitCInterfacePass
    : inkling::cpu::impl::EmitCInterfacePassBase<EmitCInterfacePass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      if (func.isPublic() && !func.isExternal())
        func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      UnitAttr::get(func.getContext()));
    });
  }
};
} // namespace
