//===- BranchCounters.h - Counters of the CPU nests' run-time branches ----===//
//
// With `branch-counters` (off by default: production IR has none), each
// run-time branch of the CPU's nests adds 1 to its counter each time it is
// taken: a public one-element i64 global (`memref.global`, an LLVM global
// [1 x i64]) that a JIT caller reads by symbol name. What the tests use to
// assert which branch a step of a given shape takes (issue #32).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_CPU_BRANCHCOUNTERS_H
#define INKLING_TARGET_CPU_BRANCHCOUNTERS_H

#include "llvm/ADT/StringRef.h"

#include <array>

namespace mlir {
class Location;
class OpBuilder;
class Operation;
} // namespace mlir

namespace inkling::cpu {

enum class Branch {
  /// A conv's run-time choice (inkling-cpu-lower-to-loops token-runs): the
  /// token-run nest, or the (token, head) nest.
  TokenRunsOn,
  TokenRunsOff,
  /// In the token-run nest, per (run, head, sequence): the whole run's
  /// tokens unrolled, or a loop over the sequence's tokens in the run.
  RunsUnrolled,
  RunsLooped,
  /// In the decode-run nest (decode-runs) and the fused K/V op's decode
  /// form, per (run, head): a whole run of 4 tokens, or the step's last,
  /// shorter one.
  DecodeRunsWhole,
  DecodeRunsPartial,
  /// In a whole decode run: every token live and every tap a history row
  /// (the usual decode step), its taps loaded unselected.
  DecodeRunsFromCache,
  /// inkling-cpu-streaming-stores: the non-temporal copy, or the nest.
  StreamingOn,
  StreamingOff,
  /// inkling-cpu-parallel-dispatch: the parallel nest, or the scf.for one.
  Threaded,
  Sequential,
  /// With avx512-bf16, per 64-byte line of a decode nest's output (a conv's
  /// decode-run nest, the fused K/V op's decode nest): rounded by
  /// vcvtne2ps2bf16, or (a NaN or denormal lane) by the software rounding.
  X86RoundedLine,
  SoftwareRoundedLine,
};

inline constexpr std::array<Branch, 13> kBranches = {
    Branch::TokenRunsOn,         Branch::TokenRunsOff,
    Branch::RunsUnrolled,        Branch::RunsLooped,
    Branch::DecodeRunsWhole,     Branch::DecodeRunsPartial,
    Branch::DecodeRunsFromCache, Branch::StreamingOn,
    Branch::StreamingOff,        Branch::Threaded,
    Branch::Sequential,          Branch::X86RoundedLine,
    Branch::SoftwareRoundedLine};

/// The counters' symbols, in the order of Branch.
inline constexpr std::array<llvm::StringLiteral, kBranches.size()>
    kBranchCounterSymbols = {"inkling_branch_token_runs_on",
                             "inkling_branch_token_runs_off",
                             "inkling_branch_runs_unrolled",
                             "inkling_branch_runs_looped",
                             "inkling_branch_decode_runs_whole",
                             "inkling_branch_decode_runs_partial",
                             "inkling_branch_decode_runs_from_cache",
                             "inkling_branch_streaming_on",
                             "inkling_branch_streaming_off",
                             "inkling_branch_threaded",
                             "inkling_branch_sequential",
                             "inkling_branch_x86_rounded_line",
                             "inkling_branch_software_rounded_line"};

/// The symbol of `branch`'s counter.
inline llvm::StringRef branchCounterSymbol(Branch branch) {
  return kBranchCounterSymbols[static_cast<size_t>(branch)];
}

/// Adds 1 (atomically: the branch may be inside a threaded nest) to
/// `branch`'s counter at `b`'s insertion point, declaring the counter on
/// first use in the module that holds `anchor` (an op of the nest's
/// function: the insertion block may not be attached yet).
void emitBranchCount(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Operation *anchor, Branch branch);

} // namespace inkling::cpu

#endif // INKLING_TARGET_CPU_BRANCHCOUNTERS_H
