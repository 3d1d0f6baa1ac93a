//===- BranchCounters.cpp - Counters of the CPU nests' branches -----------===//

#include "inkling/Target/CPU/BranchCounters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

void inkling::cpu::emitBranchCount(OpBuilder &b, Location loc,
                                   Operation *anchor, Branch branch) {
  auto module = anchor->getParentOfType<ModuleOp>();
  assert(module && "a branch counter needs an enclosing module");
  StringRef name = branchCounterSymbol(branch);
  auto type = MemRefType::get({1}, b.getI64Type());
  if (!SymbolTable::lookupSymbolIn(module, name)) {
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    memref::GlobalOp::create(
        top, loc, top.getStringAttr(name), /*sym_visibility=*/StringAttr(),
        TypeAttr::get(type),
        DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                               ArrayRef<int64_t>{0}),
        /*constant=*/UnitAttr(), /*alignment=*/IntegerAttr());
  }
  Value counter = memref::GetGlobalOp::create(b, loc, type, name);
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, one, counter,
                              ValueRange{zero});
}
