//===- Run.h - inkling-run's modes ------------------------------*- C++ -*-===//

#ifndef INKLING_TOOLS_INKLING_RUN_RUN_H
#define INKLING_TOOLS_INKLING_RUN_RUN_H

#include "inkling/ExecutionEngine/LayerProgram.h"
#include "inkling/Runtime/CachePlan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace inkling::run {

/// The synthetic workload and what to do with it.
struct ServeOptions {
  std::string modelPath;
  int64_t layers = 2;
  double budgetMB = 64;
  exec::CompileOptions compile;
  double compileSeconds = 0; ///< Filled by the caller.
  /// What the CPU compile got from the JIT's object cache ("off", "hit",
  /// "miss") and why an entry could not be read or written. By the caller.
  std::string objectCache = "off", objectCacheProblem;
  /// Threads the CPU kernels run on (compile.threads resolved; 0 on the
  /// GPU, where it does not apply). For the report.
  int cpuThreads = 0;
  uint64_t seed = 1;
  int64_t steps = 400;
  int64_t maxBatch = 16;
  int64_t tokenBudget = 256;
  int64_t maxChunk = 96;
  int64_t minPrompt = 8, maxPrompt = 256;
  int64_t minOutput = 8, maxOutput = 96;
  double arrivalRate = 0.25;
  double sharedPrefixRate = 0.5;
  int64_t numSharedPrefixes = 4;
  int64_t vocab = 64;
  int64_t lookahead = 3;
  /// Pads every step's token dimension to a multiple of this (0: none), as
  /// graph capture does; padding outputs are checked to equal their inputs.
  int64_t padTokens = 0;
  /// Async scheduling: each step is scheduled before the previous step's
  /// sampled tokens reach the runtime (scheduleAhead); they arrive just
  /// before the build.
  bool async = false;
  double specRate = 0.5;
  double preemptRate = 0.01;
  double forkRate = 0.01;
  bool prefixCaching = true;
  /// The runtime's prefix policy (window, snapshots, every-block) and its
  /// snapshot interval S in blocks.
  std::string prefixPolicy = "snapshots";
  int64_t snapshotEvery = 8;
  /// Probability that a request with a shared prompt names its end as a
  /// cache point.
  double cachePointRate = 0;
  /// Admission: the fraction of the pool kept free for the running
  /// sequences (vLLM's watermark); < 0: the old rule of thumb (free blocks
  /// >= maxBlocksPerSequence * (1 + running / 4)), for comparison.
  double watermark = 0.01;
  bool check = true;
  bool json = false;
  bool progress = true;
  /// Testing the checker: "input:STEP", "output:STEP" or "cache:STEP"
  /// corrupts one value.
  std::string injectFault;
  /// Testing the layer ABI's validator in serving: "STEP:NAME[I]=V" writes V
  /// into entry I of the step metadata argument NAME (query_start_loc,
  /// num_computed, block_table (flat), slot_mapping, token_seq) before the
  /// step's first layer call.
  std::string corruptMetadata;
};

class Executor;

/// The runtime's cache plan that inkling-run serves through: `layers` sconv
/// layers "layers.<l>.sconv" with the bind's layout and page (the
/// cross-layer layout when the bind holds several layers' pages) for
/// `budgetMB`, plus (--print-plan) attention layers "layers.<i>.attn" at
/// `attentionBlockSizes` with the layout's KV heads and head_dim.
StatusOr<CachePlan>
planCache(const exec::LayerSignature &sig, int64_t layers, double budgetMB,
          const std::vector<int64_t> &attentionBlockSizes = {});

/// Serves the workload through the runtime and the layer's kernels, which
/// `executor` runs; prints the report. Returns the process exit code.
int serve(const exec::LayerSignature &signature, Executor &executor,
          const ServeOptions &options);

struct ReplayOptions {
  std::string modelPath;
  int64_t opIndex = 0;
  std::vector<std::string> inputs; ///< name=file.npy
  std::string outputDir;
  std::string fusion;
  int threads = 0; ///< CompileOptions::threads
};

/// Runs one sconv op on .npy tensors and writes its outputs as .npy.
int replay(exec::LayerProgram &program, const ReplayOptions &options);

/// Points `m` at dense row-major `data` of `sizes` (offset 0).
inline void denseArg(exec::MemRefArg &m, void *data,
                     std::vector<int64_t> sizes) {
  m.data = data;
  m.offset = 0;
  m.strides.assign(sizes.size(), 1);
  for (size_t r = sizes.size(); r-- > 1;)
    m.strides[r - 1] = m.strides[r] * sizes[r];
  m.sizes = std::move(sizes);
}

/// Prints "inkling-run: <message>" to stderr; returns 1.
int fail(const std::string &message);

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_RUN_H
