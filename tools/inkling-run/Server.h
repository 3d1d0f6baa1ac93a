//===- Server.h - inkling-run's serving loop --------------------*- C++ -*-===//
//
// Drives the runtime's SequenceManager the way a serving engine does
// (arrivals, chunked prefill under a token budget, decode, speculative
// decoding with random acceptance, preemption and resume, prefix-cache hits,
// forks, finishes) and runs the compiled layer for every layer of every
// step. The parts: Workload (requests and their data), StepIO (the host
// buffers and the layer calls), Checker (the full-history reference checks
// after every layer and step), Report. The Server holds the runtime and the
// requests: Schedule.cpp decides each step, Serve.cpp sets up and runs it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_SERVER_H
#define INKLING_TOOLS_INKLING_RUN_SERVER_H

#include "AttentionSlots.h"
#include "Checker.h"
#include "Report.h"
#include "Serving.h"
#include "StepIO.h"
#include "Workload.h"

#include "inkling/Runtime/CachePlan.h"
#include "inkling/Runtime/SequenceManager.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace inkling::run {

/// Serves the workload: schedules every step through the runtime (the
/// admission and scheduling policy, Schedule.cpp) and runs it (Serve.cpp).
class Server {
public:
  Server(const exec::LayerSignature &signature, Executor &executor,
         const ServeOptions &options)
      : sig_(signature), exec_(executor), opt_(options),
        workload_(opt_, signature.layout.blockSize),
        io_(signature, executor, opt_),
        checker_(signature, executor, opt_, workload_, io_, stats_) {}

  int run();

private:
  // Setting up.
  int setUp();
  /// The layer's arguments as inkling-run serves them (0 or printed).
  int checkSignature();
  /// The runtime's cache plan for --budget-mb and the sequence manager.
  int createRuntime();
  /// Host step buffers for the workload's longest sequence, bound.
  int bindStepBuffers();

  // Scheduling.
  void arrive();
  void maybePreempt();
  /// A fork for parallel sampling: a child of an idle decoding sequence.
  bool maybeFork();
  void admit();
  // Each admits the first in its queue, or returns false (nothing changes)
  // when the admission query says the pool is short.
  bool admitPreempted();
  bool admitWaiting();
  bool admits(int64_t numTokens, int64_t hit);
  void preempt(Request *r, bool outOfBlocks);
  bool scheduleBatch();
  /// Schedules n tokens of r, preempting the newest sequences while out of
  /// blocks; false on a runtime error (printed).
  bool scheduleRequest(Request *r, int64_t n);
  void recordStepTokens(Request *r, bool decode, int64_t n);
  bool commitBatch();
  bool finishDone();
  /// --async: gives the runtime r's sampled token if it has not got it.
  bool deliverToken(Request *r);

  // The loop.
  /// Builds the scheduled step's metadata and copies its pages; 0, -1 (no
  /// step: nothing scheduled) or an exit code.
  int buildStep(Clock::time_point t0);
  void recordPeakBlocks();
  /// Every layer of the step, checked; 0 or an exit code.
  int runLayers();
  /// Commits the step and checks the caches; 0 or an exit code.
  int finishStep();
  void printProgress(Clock::time_point start) const;

  int report(int exitCode) {
    return run::report({sig_, opt_, exec_, plan_, stats_,
                        manager_->maxBlocksBetweenSteps(),
                        manager_->maxBlocksPerSequence()},
                       exitCode);
  }
  int internalError(const std::string &what, const Status &status) const {
    return run::internalError(step_, what, status);
  }
  bool crossLayer() const {
    return plan_.layoutKind == CacheLayoutKind::CrossLayer;
  }
  CheckedStep checkedStep() const { return {step_, &batch_, &running_, info_}; }

  const exec::LayerSignature &sig_;
  Executor &exec_;
  ServeOptions opt_;
  Stats stats_;
  Workload workload_;
  StepIO io_;
  Checker checker_;
  FaultPlan fault_;
  std::string failure_; // a kernel status report
  int64_t step_ = 0;
  int64_t N_ = 0;

  CachePlan plan_;
  std::unique_ptr<SequenceManager> manager_;
  std::unique_ptr<StepBuffers> stepBuffers_;
  /// The attention layer's block table (layers with a KV write).
  AttentionSlots attention_;
  StepInfo info_;

  std::vector<std::unique_ptr<Request>> live_; // running or preempted
  std::vector<Request *> running_;
  std::deque<Request *> preempted_;
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<Request *> batch_;
  int64_t nextAdmit_ = 0;
};

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_SERVER_H
