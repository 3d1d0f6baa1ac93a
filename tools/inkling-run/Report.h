//===- Report.h - inkling-run's serving report ------------------*- C++ -*-===//

#ifndef INKLING_TOOLS_INKLING_RUN_REPORT_H
#define INKLING_TOOLS_INKLING_RUN_REPORT_H

#include "Serving.h"

#include "inkling/Runtime/CachePlan.h"

namespace inkling::run {

/// What the report describes: the run, its cache and its counters.
struct ReportInputs {
  const exec::LayerSignature &sig;
  const ServeOptions &opt;
  const Executor &exec;
  const CachePlan &plan;
  const Stats &stats;
  int64_t maxBlocksBetweenSteps = 0, maxBlocksPerSequence = 0;
};

/// Prints the report (--json: one JSON object on stdout); returns
/// `exitCode`.
int report(const ReportInputs &in, int exitCode);

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_REPORT_H
