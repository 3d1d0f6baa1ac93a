//===- LoopStrategy.h - The CPU's forms of the loop nests -------*- C++ -*-===//
//
// The CPU's LoopStrategy for `sconv-lower-to-loops` (the shared conversion,
// lib/Conversion/SConvToLoops, emits the nests every backend needs; these
// are the forms only the CPU wants): split streams, hoisted taps, the
// token-run nest of prefill with its even-odd lanes, and the line marks
// that `inkling-cpu-streaming-stores` consumes. The pass
// `inkling-cpu-lower-to-loops` (Passes.td) is the same lowering with them.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_CPU_LOOPSTRATEGY_H
#define INKLING_TARGET_CPU_LOOPSTRATEGY_H

#include "inkling/Conversion/SConvToLoops/LoopStrategy.h"
#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"

#include "llvm/ADT/StringRef.h"

#include <memory>

namespace inkling::cpu {

/// A discardable unit attribute the CPU's token-run nest puts on a
/// `vector.store` of one 64-byte line whose address is a multiple of 64
/// bytes whenever its memref's base (aligned pointer plus offset) is: the
/// layout's strides and offsets prove the rest. `inkling-cpu-streaming-
/// stores` may then claim 64-byte alignment for it after checking the base
/// at run time.
inline constexpr llvm::StringLiteral kLineAlignedAttrName =
    "inkling.line_aligned";

/// A discardable unit attribute on a `vector.store` that
/// `inkling-cpu-streaming-stores` keeps ordinary in its non-temporal copy:
/// a value the next op reads back at once (a decode step's conv output),
/// which a non-temporal store would send to memory.
inline constexpr llvm::StringLiteral kCachedStoreAttrName =
    "inkling.cached_store";

/// A discardable i64 attribute on a nest's outer `scf.parallel`: the
/// `min-iterations` of `inkling-cpu-streaming-stores` for this nest, in
/// place of the pass's option (the decode-run nest: 1, because the only
/// stores it streams are cache rows, which no one reads before the next
/// step, whatever the step's size).
inline constexpr llvm::StringLiteral kStreamMinIterationsAttrName =
    "inkling.stream_min_iterations";

/// The CPU's choices (see the `inkling-cpu-lower-to-loops` pass
/// description for each).
struct CPULoopOptions {
  bool splitStreams = false;
  bool hoistTaps = false;
  /// Unchecked convs, for steps whose sequences average at least `kernel`
  /// tokens (chosen per call): the (run of 4 tokens, head) nest.
  bool tokenRuns = false;
  /// Unchecked convs, for the other steps (decode; chosen per call): the
  /// (run of 4 consecutive tokens of any sequences, head) nest.
  bool decodeRuns = false;
  /// In the run nests, a chunk's f32 lanes in even-odd order.
  bool evenOddLanes = false;
  /// The target has AVX512-F/BW/DQ and AVX512-BF16 (hostHasAvx512Bf16):
  /// the decode nests (a conv's, the fused K/V op's) round their outputs'
  /// 64-byte lines with vcvtne2ps2bf16 where that gives the same bits
  /// (X86Bf16.cpp).
  bool avx512Bf16 = false;
  /// Count each run-time branch taken (BranchCounters.h).
  bool branchCounters = false;
};

/// Whether the host CPU has what `CPULoopOptions::avx512Bf16` needs
/// (llvm::sys::getHostCPUFeatures; X86Bf16.cpp): what the JIT, which
/// compiles for the host, sets it from.
bool hostHasAvx512Bf16();

/// hoist-taps (HoistedTaps.cpp).
class CPUTapHoisting : public TapHoisting {
public:
  llvm::SmallVector<loops::TapSource>
  tapSources(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
             mlir::Location loc, const loops::ConvRow &row) const override;
  llvm::SmallVector<mlir::Value>
  hoistedTaps(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
              mlir::Location loc, const loops::ConvRow &row,
              const loops::ConvPart &part, mlir::Value c,
              int64_t lanes) const override;
  llvm::SmallVector<mlir::Value>
  pairedTapWeights(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                   mlir::Location loc, mlir::Value all, int64_t lanes,
                   loops::LaneOrder order) const override;
  /// Tap `tap` of channels c.. of head h in f32: x[tap.token] in the step,
  /// the cache row of a history position, else 0.
  mlir::Value
  tapValue(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
           mlir::Location loc, const loops::ConvPart &part,
           const loops::TapSource &tap, mlir::Value h, mlir::Value c,
           int64_t lanes,
           loops::LaneOrder order = loops::LaneOrder::Natural) const;
};

class CPULoopStrategy : public LoopStrategy {
public:
  explicit CPULoopStrategy(const CPULoopOptions &options) : options(options) {}

  bool splitStreams() const override { return options.splitStreams; }
  const TapHoisting *tapHoisting() const override {
    return options.hoistTaps ? &hoisting : nullptr;
  }
  /// With token-runs or decode-runs (unchecked): the run-time choice
  /// between the token-run nest (ConvTokenRuns.cpp) and the decode-run nest
  /// (ConvDecodeRuns.cpp) or the (token, head) nest.
  void emitConvNest(loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                    mlir::Location loc) const override;
  /// With token-runs (unchecked): the same run-time choice, between the
  /// token-run form of the fused epilogue (EpilogueRuns.cpp) and the shared
  /// (token, head) nest.
  void emitKvWriteNest(loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                       mlir::Location loc,
                       const loops::KvEpilogue &epilogue) const override;

private:
  CPULoopOptions options;
  CPUTapHoisting hoisting;
};

/// The decode-run nest of `nest`'s conv at `b`'s insertion point
/// (ConvDecodeRuns.cpp).
void emitDecodeRunNest(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                       mlir::Location loc, const CPULoopOptions &options);

/// The token-run nest of `nest`'s conv at `b`'s insertion point, over the
/// step's first `realTokens` tokens (ConvTokenRuns.cpp).
void emitTokenRunNest(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                      mlir::Location loc, mlir::Value realTokens,
                      const CPULoopOptions &options);

/// The run-time choice between a nest's two CPU forms (CPULoopStrategy.cpp):
/// `runs`, given the step's real token count, when its sequences average at
/// least `kernel` real tokens (most windows come from x: prefill), else
/// `decode`; each branch counted (TokenRunsOn, TokenRunsOff) when
/// `options.branchCounters`.
void emitRunsOrDecode(
    const loops::ConvNestBuilder &nest, mlir::OpBuilder &b, mlir::Location loc,
    const CPULoopOptions &options,
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location,
                            mlir::Value realTokens)>
        runs,
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location)> decode);

/// The token-run form of an `sconv.fused_conv_kv_write`: `nest`'s conv and
/// `epilogue` over the step's first `realTokens` tokens (EpilogueRuns.cpp).
void emitKvRunNest(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                   mlir::Location loc, mlir::Value realTokens,
                   const loops::KvEpilogue &epilogue,
                   const CPULoopOptions &options);

} // namespace inkling::cpu

#endif // INKLING_TARGET_CPU_LOOPSTRATEGY_H
