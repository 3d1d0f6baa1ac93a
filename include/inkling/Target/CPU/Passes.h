//===- Passes.h - CPU passes of inkling-lower-to-cpu -----------*- C++ -*-===//
//
// The passes `inkling-lower-to-cpu` adds around upstream MLIR's conversions
// (declared in Passes.td, where each has its description):
// inkling-cpu-lower-to-loops{...} (the CPU's LoopStrategy,
// LoopStrategy.h), inkling-cpu-emit-c-interface,
// inkling-cpu-serialize-inner-loops,
// inkling-cpu-parallel-dispatch{min-iterations=...},
// inkling-cpu-streaming-stores{min-iterations=...},
// inkling-cpu-hoist-static-allocas and inkling-bf16-memory-as-i16. Each
// has a `create<Name>()` (and `create<Name>(<Name>Options)` where it takes
// options).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_CPU_PASSES_H
#define INKLING_TARGET_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace inkling::cpu {

#define GEN_PASS_DECL
#include "inkling/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "inkling/Target/CPU/Passes.h.inc"

} // namespace inkling::cpu

#endif // INKLING_TARGET_CPU_PASSES_H
