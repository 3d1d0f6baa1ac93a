//===- Reordering.cpp - When two ops touching sconv caches commute --------===//

#include "inkling/Dialect/SConv/Transforms/Reordering.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace inkling::sconv {

namespace {

/// Follows view-like ops (memref views, casts, `sconv.bind`) to the buffer
/// that owns the memory.
Value rootOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>()) {
    if (view.getViewDest() != value)
      break;
    value = view.getViewSource();
  }
  return value;
}

bool isNoAliasArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return false;
  auto function =
      dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!function || arg.getOwner() != &function.getFunctionBody().front())
    return false;
  return static_cast<bool>(function.getArgAttr(
      arg.getArgNumber(), LLVM::LLVMDialect::getNoAliasAttrName()));
}

/// The buffers an effect touches: a step value stands for its metadata
/// buffers, or for "unknown buffers" (a null value) when the step is not
/// built in view (e.g. a function argument).
void expandTouched(Value value, SmallVectorImpl<Value> &touched) {
  if (!isa<StepType>(value.getType())) {
    touched.push_back(value);
    return;
  }
  auto step = value.getDefiningOp<StepOp>();
  if (!step) {
    touched.push_back(Value());
    return;
  }
  touched.append({step.getQueryStartLoc(), step.getNumComputed(),
                  step.getBlockTable(), step.getSlotMapping()});
  if (Value tokenSeq = step.getTokenSeq())
    touched.push_back(tokenSeq);
}

bool isWrite(const MemoryEffects::EffectInstance &effect) {
  return isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect());
}

/// A conflicting pair of effects on the same cache is harmless when both ops
/// declare which positions of which step they touch, and those are disjoint.
bool cacheAccessesCommute(Operation *first, Operation *second, Value value1,
                          bool write1, Value value2, bool write2) {
  auto access1 = dyn_cast<StepCacheAccessOpInterface>(first);
  auto access2 = dyn_cast<StepCacheAccessOpInterface>(second);
  if (!access1 || !access2)
    return false;
  Value cache = access1.getCacheValue();
  if (value1 != cache || value2 != cache || access2.getCacheValue() != cache ||
      access1.getStepValue() != access2.getStepValue() ||
      access1.getLayoutAttr() != access2.getLayoutAttr())
    return false;
  if (write1 && write2) {
    SmallVector<Stream> streams2 = access2.getStepWrittenStreams();
    for (Stream stream : access1.getStepWrittenStreams())
      if (llvm::is_contained(streams2, stream))
        return false;
    return true;
  }
  // A history read against a step write.
  return write1 ? access2.readsOnlyHistory() : access1.readsOnlyHistory();
}

} // namespace

bool ReorderingOracle::mayAlias(Value lhs, Value rhs) {
  // Unknown buffers may alias anything but a `llvm.noalias` argument, which
  // by definition no other pointer reaches.
  if (!lhs || !rhs) {
    Value known = lhs ? lhs : rhs;
    return !known || !isNoAliasArgument(rootOf(known));
  }
  if (lhs == rhs)
    return true;
  if (aliasAnalysis.alias(lhs, rhs).isNo())
    return false;
  Value lhsRoot = rootOf(lhs), rhsRoot = rootOf(rhs);
  if (lhsRoot != rhsRoot &&
      (isNoAliasArgument(lhsRoot) || isNoAliasArgument(rhsRoot)) &&
      isa<BlockArgument>(lhsRoot) && isa<BlockArgument>(rhsRoot))
    return false;
  return true;
}

bool ReorderingOracle::commute(Operation *first, Operation *second) {
  auto effects1 = getEffectsRecursively(first);
  auto effects2 = getEffectsRecursively(second);
  if (!effects1 || !effects2)
    return false;
  for (const MemoryEffects::EffectInstance &e1 : *effects1) {
    for (const MemoryEffects::EffectInstance &e2 : *effects2) {
      bool write1 = isWrite(e1), write2 = isWrite(e2);
      if (!write1 && !write2)
        continue;
      if (e1.getResource() != e2.getResource())
        continue;
      Value v1 = e1.getValue(), v2 = e2.getValue();
      if (!v1 || !v2)
        return false;
      SmallVector<Value> touched1, touched2;
      expandTouched(v1, touched1);
      expandTouched(v2, touched2);
      for (Value t1 : touched1)
        for (Value t2 : touched2)
          if (mayAlias(t1, t2) &&
              !cacheAccessesCommute(first, second, t1, write1, t2, write2))
            return false;
    }
  }
  return true;
}

/// Whether `op` and `target` share a block and every op strictly between
/// `first` and `last` (`op` and `target` in block order) commutes with
/// `op`, each pair given to `commute` in block order.
bool ReorderingOracle::commutesBetween(Operation *op, Operation *target,
                                       bool down) {
  Operation *first = down ? op : target, *last = down ? target : op;
  if (op->getBlock() != target->getBlock() || !first->isBeforeInBlock(last))
    return false;
  for (Operation *it = first->getNextNode(); it != last; it = it->getNextNode())
    if (!(down ? commute(op, it) : commute(it, op)))
      return false;
  return true;
}

bool ReorderingOracle::canMoveDownTo(Operation *op, Operation *target) {
  if (!commutesBetween(op, target, /*down=*/true))
    return false;
  // Results used in between would be used before their definition.
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers())
      if (user->getBlock() == op->getBlock() && user->isBeforeInBlock(target))
        return false;
  return true;
}

bool ReorderingOracle::canMoveUpTo(Operation *op, Operation *target) {
  if (!commutesBetween(op, target, /*down=*/false))
    return false;
  // Operands defined in between would be used before their definition.
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && def->getBlock() == op->getBlock() &&
        target->isBeforeInBlock(def))
      return false;
  }
  return true;
}

} // namespace inkling::sconv
