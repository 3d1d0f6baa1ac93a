//===- CPULoopStrategy.cpp - The CPU's forms of the loop nests ------------===//
//
// The CPU's LoopStrategy (LoopStrategy.h) and `inkling-cpu-lower-to-loops`,
// the shared loop lowering with it. The token-run nest is in
// ConvTokenRuns.cpp, that of the fused K/V epilogue in EpilogueRuns.cpp.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"
#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_CPULOWERTOLOOPSPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

// Whether a step of `realTokens` real tokens takes the token-run forms.
static Value emitTokenRunsChosen(const ConvNestBuilder &nest, OpBuilder &b,
                                 Location loc, Value realTokens) {
  Value batch = nest.batch();
  return arith::AndIOp::create(
      b, loc,
      cmp(b, loc, arith::CmpIPredicate::uge, realTokens,
          ArithBuilder(b, loc).mul(batch, cIndex(b, loc, nest.kernel()))),
      cmp(b, loc, arith::CmpIPredicate::ugt, batch, cIndex(b, loc, 0)));
}

void cpu::emitRunsOrDecode(
    const ConvNestBuilder &nest, OpBuilder &b, Location loc,
    const CPULoopOptions &options,
    function_ref<void(OpBuilder &, Location, Value)> runs,
    function_ref<void(OpBuilder &, Location)> decode) {
  Value realTokens = emitRealTokens(b, loc, nest.step());
  emitIfElse(
      b, loc, emitTokenRunsChosen(nest, b, loc, realTokens),
      [&](OpBuilder &b, Location loc) {
        if (options.branchCounters)
          emitBranchCount(b, loc, nest.op(), Branch::TokenRunsOn);
        runs(b, loc, realTokens);
      },
      [&](OpBuilder &b, Location loc) {
        if (options.branchCounters)
          emitBranchCount(b, loc, nest.op(), Branch::TokenRunsOff);
        decode(b, loc);
      });
}

void cpu::CPULoopStrategy::emitConvNest(ConvNestBuilder &nest, OpBuilder &b,
                                        Location loc) const {
  // The steps that are not prefill: the decode-run nest, else the
  // (token, head) nest.
  auto decode = [&](OpBuilder &b, Location loc) {
    if (options.decodeRuns)
      emitDecodeRunNest(nest, b, loc, options);
    else
      nest.emitTokenNest(b, loc);
  };
  if (nest.checked()) {
    nest.emitTokenNest(b, loc);
    return;
  }
  if (!options.tokenRuns) {
    decode(b, loc);
    return;
  }
  emitRunsOrDecode(
      nest, b, loc, options,
      [&](OpBuilder &b, Location loc, Value realTokens) {
        emitTokenRunNest(nest, b, loc, realTokens, options);
      },
      decode);
}

namespace {

struct CPULowerToLoopsPass
    : cpu::impl::CPULowerToLoopsPassBase<CPULowerToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    cpu::CPULoopOptions cpuOptions;
    cpuOptions.splitStreams = splitStreams;
    cpuOptions.hoistTaps = hoistTaps;
    cpuOptions.tokenRuns = tokenRuns;
    cpuOptions.decodeRuns = decodeRuns;
    cpuOptions.evenOddLanes = evenOddLanes;
    cpuOptions.avx512Bf16 = avx512Bf16;
    cpuOptions.branchCounters = branchCounters;
    cpu::CPULoopStrategy strategy(cpuOptions);
    SConvToLoopsOptions options;
    options.checked = checked;
    options.strategy = &strategy;
    if (failed(lowerSConvToLoops(getOperation(), options)))
      signalPassFailure();
  }
};

} // namespace
