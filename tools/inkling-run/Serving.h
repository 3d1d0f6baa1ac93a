//===- Serving.h - What inkling-run's serving parts share -------*- C++ -*-===//
//
// Serve.cpp runs the loop; Workload, StepIO, Checker and Report each do one
// job of it. They share the counters of the report and the way a failure of
// the runtime or of the executor is printed.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_SERVING_H
#define INKLING_TOOLS_INKLING_RUN_SERVING_H

#include "Executor.h"
#include "Run.h"

#include "inkling/Runtime/Status.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace inkling::run {

using Clock = std::chrono::steady_clock;
inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The workload's counters and the time spent in each part of a step.
struct Stats {
  int64_t steps = 0, tokens = 0, prefillTokens = 0, decodeTokens = 0;
  int64_t specProposed = 0, specAccepted = 0;
  int64_t arrivals = 0, finished = 0, preemptions = 0, oobPreemptions = 0,
          resumes = 0, prefixHits = 0, prefixHitTokens = 0, forks = 0,
          blockCopies = 0;
  /// Prefill positions computed again after a preemption (beyond the hit).
  int64_t recomputedTokens = 0;
  /// Admissions the admission query deferred (the pool was short).
  int64_t admissionsDeferred = 0;
  /// What an unbounded every-block cache would hit on the same admissions,
  /// from the requests' token chains alone (not the runtime).
  int64_t prefixHitTokensIdeal = 0;
  int64_t peakBlocks = 0, baselinePeakBlocks = 0;
  /// Blocks held between steps (after commit; cached blocks not counted)
  /// and snapshot blocks during a step.
  int64_t peakIdleBlocks = 0, peakSnapshotBlocks = 0;
  /// The most blocks one sequence held between steps (checked runs).
  int64_t peakIdleSequenceBlocks = 0;
  int64_t outputsChecked = 0, cacheValuesChecked = 0;
  /// Epilogue layers: the KV rows (token, head) stored at attention slots,
  /// and the KV cache values compared (stored rows and untouched ones).
  int64_t kvRowsStored = 0, kvValuesChecked = 0;
  int64_t paddingTokens = 0;
  int64_t mismatches = 0;
  double schedule = 0, inputs = 0, kernels = 0, checking = 0;
};

/// Prints a runtime call that failed at `step` (a bug: the workload only
/// makes valid calls); returns 1.
inline int internalError(int64_t step, const std::string &what,
                         const Status &status) {
  return fail("internal error at step " + std::to_string(step) + ": " + what +
              ": " + status.toString());
}

/// Prints a failure of the executor (a driver error, not a mismatch).
inline bool executorOk(const Executor &exec, int64_t step, const char *what,
                       const Status &status) {
  if (!status)
    fail("step " + std::to_string(step) + ": " + what + " on " +
         exec.description() + ": " + status.message());
  return status.isOk();
}

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_SERVING_H
