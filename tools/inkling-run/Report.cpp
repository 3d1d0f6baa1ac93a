//===- Report.cpp - inkling-run's serving report --------------------------===//

#include "Report.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

namespace {

struct Totals {
  double serveTime, tokensPerS, kernelTokensPerS;
  const char *fusion;
  explicit Totals(const ReportInputs &in) {
    const Stats &s = in.stats;
    serveTime = s.schedule + s.inputs + s.kernels + s.checking;
    tokensPerS = serveTime > 0 ? s.tokens / serveTime : 0;
    kernelTokensPerS = s.kernels > 0 ? s.tokens / s.kernels : 0;
    fusion = in.opt.compile.fusion.empty() ? "default"
                                           : in.opt.compile.fusion.c_str();
  }
};

bool crossLayer(const CachePlan &plan) {
  return plan.layoutKind == CacheLayoutKind::CrossLayer;
}

void printJson(const ReportInputs &in) {
  const ServeOptions &opt = in.opt;
  const Stats &stats = in.stats;
  const Executor &executor = in.exec;
  const CachePlan &plan = in.plan;
  Totals totals(in);
  llvm::json::Object time{{"compile", opt.compileSeconds},
                          {"object_cache", opt.objectCache},
                          {"schedule", stats.schedule},
                          {"inputs", stats.inputs},
                          {"kernels", stats.kernels},
                          {"transfers", executor.transferSeconds()},
                          {"device_kernels", executor.deviceSeconds()},
                          {"checking", stats.checking},
                          {"total", opt.compileSeconds + totals.serveTime}};
  llvm::json::Object o{
      {"model", opt.modelPath},
      {"function", in.sig.function},
      {"device", executor.description()},
      {"launches", executor.launches()},
      {"layers", opt.layers},
      {"fusion", totals.fusion},
      {"threads", opt.cpuThreads},
      {"checked", opt.compile.checked},
      {"check", opt.check},
      {"async", opt.async},
      {"pad_tokens", opt.padTokens},
      {"padding_tokens", stats.paddingTokens},
      {"seed", static_cast<int64_t>(opt.seed)},
      {"num_blocks", plan.numBlocks},
      {"page_bytes", plan.layers[0].blockStrideBytes},
      {"kernel", in.sig.layout.config.kernel},
      {"block_size", in.sig.layout.blockSize},
      {"cross_layer", crossLayer(plan)},
      {"layer_page_bytes", plan.pageBytes},
      {"steps", stats.steps},
      {"tokens", stats.tokens},
      {"prefill_tokens", stats.prefillTokens},
      {"decode_tokens", stats.decodeTokens},
      {"spec_proposed", stats.specProposed},
      {"spec_accepted", stats.specAccepted},
      {"arrivals", stats.arrivals},
      {"finished", stats.finished},
      {"preemptions", stats.preemptions},
      {"out_of_blocks_preemptions", stats.oobPreemptions},
      {"recomputed_tokens", stats.recomputedTokens},
      {"admissions_deferred", stats.admissionsDeferred},
      {"watermark", opt.watermark},
      {"resumes", stats.resumes},
      {"prefix_hits", stats.prefixHits},
      {"prefix_hit_tokens", stats.prefixHitTokens},
      {"prefix_hit_tokens_ideal", stats.prefixHitTokensIdeal},
      {"prefix_policy", opt.prefixPolicy},
      {"snapshot_every", opt.snapshotEvery},
      {"cache_point_rate", opt.cachePointRate},
      {"forks", stats.forks},
      {"block_copies", stats.blockCopies},
      {"mismatches", stats.mismatches},
      {"outputs_checked", stats.outputsChecked},
      {"cache_values_checked", stats.cacheValuesChecked},
      {"kv_rows_stored", stats.kvRowsStored},
      {"kv_values_checked", stats.kvValuesChecked},
      {"peak_blocks", stats.peakBlocks},
      {"baseline_peak_blocks", stats.baselinePeakBlocks},
      {"peak_idle_blocks", stats.peakIdleBlocks},
      {"peak_snapshot_blocks", stats.peakSnapshotBlocks},
      {"peak_idle_sequence_blocks", stats.peakIdleSequenceBlocks},
      {"max_blocks_between_steps", in.maxBlocksBetweenSteps},
      {"max_blocks_per_sequence", in.maxBlocksPerSequence},
      {"time_s", std::move(time)},
      {"tokens_per_s", totals.tokensPerS},
      {"kernel_tokens_per_s", totals.kernelTokensPerS},
  };
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o)))
               << "\n";
  llvm::outs().flush();
}

void printText(const ReportInputs &in) {
  const ServeOptions &opt = in.opt;
  const Stats &stats = in.stats;
  const Executor &executor = in.exec;
  const CachePlan &plan = in.plan;
  const LayerSignature &sig = in.sig;
  const Layout &layout = sig.layout;
  Totals totals(in);
  const char *fusion = totals.fusion;
  double tokensPerS = totals.tokensPerS,
         kernelTokensPerS = totals.kernelTokensPerS;
  int64_t N = layout.blockSize, layerPage = plan.pageBytes,
          numBlocks = plan.numBlocks,
          blockStrideBytes = plan.layers[0].blockStrideBytes;
  auto ll = [](int64_t v) { return static_cast<long long>(v); };
  std::string threads = opt.cpuThreads > 0
                            ? ", " + std::to_string(opt.cpuThreads) +
                                  (opt.cpuThreads == 1 ? " thread" : " threads")
                            : "";
  std::printf("inkling-run: %s @%s, %lld layers, fusion %s%s, %s%s\n",
              opt.modelPath.c_str(), sig.function.c_str(), ll(opt.layers),
              fusion, opt.compile.checked ? ", checked" : "",
              executor.description().c_str(), threads.c_str());
  std::printf("  layout         kv_heads %lld, head_dim %lld, hidden %lld, "
              "kernel %lld, tp %lld: H %lld, N %lld, D %lld, page %lld bytes\n",
              ll(layout.config.kvHeads), ll(layout.config.headDim),
              ll(layout.config.hidden), ll(layout.config.kernel),
              ll(layout.config.tp), ll(layout.headsPerRank), ll(N),
              ll(layout.headSize), ll(layerPage));
  if (crossLayer(plan))
    std::printf("  cache          %g MiB: %lld blocks of %lld layers' pages "
                "side by side (block stride %lld bytes; block 0 null)\n",
                opt.budgetMB, ll(numBlocks), ll(plan.layers.size()),
                ll(blockStrideBytes));
  else
    std::printf("  cache          %g MiB: %lld blocks per layer (block 0 "
                "null)\n",
                opt.budgetMB, ll(numBlocks));
  std::printf("  steps          %lld\n", ll(stats.steps));
  if (opt.async || opt.padTokens > 0)
    std::printf("  step contract  %s%lld padding tokens (--pad-tokens=%lld)\n",
                opt.async ? "async scheduling (scheduleAhead); " : "",
                ll(stats.paddingTokens), ll(opt.padTokens));
  std::printf("  tokens         %lld (prefill %lld, decode %lld; speculative "
              "drafts %lld proposed, %lld accepted)\n",
              ll(stats.tokens), ll(stats.prefillTokens), ll(stats.decodeTokens),
              ll(stats.specProposed), ll(stats.specAccepted));
  std::printf("  sequences      %lld arrived, %lld finished, %lld forks, %lld "
              "preemptions (%lld out of blocks), %lld resumes\n",
              ll(stats.arrivals), ll(stats.finished), ll(stats.forks),
              ll(stats.preemptions), ll(stats.oobPreemptions),
              ll(stats.resumes));
  if (opt.watermark < 0)
    std::printf("  admission      rule of thumb (--watermark=-1); %lld "
                "prefill tokens recomputed after preemptions\n",
                ll(stats.recomputedTokens));
  else
    std::printf("  admission      watermark %g of the pool; %lld admissions "
                "deferred; %lld prefill tokens recomputed after "
                "preemptions\n",
                opt.watermark, ll(stats.admissionsDeferred),
                ll(stats.recomputedTokens));
  std::printf("  prefix cache   %s policy: %lld hits, %lld tokens not "
              "recomputed (an unbounded every-block cache: %lld); %lld "
              "copy-on-write pages\n",
              opt.prefixPolicy.c_str(), ll(stats.prefixHits),
              ll(stats.prefixHitTokens), ll(stats.prefixHitTokensIdeal),
              ll(stats.blockCopies));
  bool silu = std::any_of(sig.convs.begin(), sig.convs.end(),
                          [](const ConvInfo &conv) { return conv.silu; });
  if (opt.check)
    std::printf("  mismatches     %lld (%lld outputs and %lld cache values "
                "checked against the full-history reference: bit-exact%s)\n",
                ll(stats.mismatches), ll(stats.outputsChecked),
                ll(stats.cacheValuesChecked),
                silu ? "; SiLU outputs within 1 bf16 ulp" : "");
  if (opt.check && sig.attnSlotMapping >= 0)
    std::printf("  KV caches      %lld rows stored at their attention slots; "
                "%lld KV values compared (rows no slot addresses unchanged)\n",
                ll(stats.kvRowsStored), ll(stats.kvValuesChecked));
  if (!opt.check)
    std::printf("  mismatches     not checked (--no-check)\n");
  std::printf("  peak blocks    %lld (window-only) vs %lld "
              "(allocate-the-whole-chunk); %lld held between steps, %lld "
              "snapshot blocks in a step\n",
              ll(stats.peakBlocks), ll(stats.baselinePeakBlocks),
              ll(stats.peakIdleBlocks), ll(stats.peakSnapshotBlocks));
  if (opt.check)
    std::printf("  per sequence   %lld blocks at most between steps (bound "
                "%lld = ceil((W-2)/N) + 1); bound during a step %lld\n",
                ll(stats.peakIdleSequenceBlocks), ll(in.maxBlocksBetweenSteps),
                ll(in.maxBlocksPerSequence));
  std::printf(
      "  time           compile %.2f s%s, schedule %.2f s, inputs %.2f s, "
      "kernels %.2f s, checking %.2f s\n",
      opt.compileSeconds,
      opt.objectCache == "off"
          ? ""
          : (" (object cache " + opt.objectCache + ")").c_str(),
      stats.schedule, stats.inputs, stats.kernels, stats.checking);
  if (!opt.objectCacheProblem.empty())
    std::printf("  object cache   %s\n", opt.objectCacheProblem.c_str());
  if (executor.launches() > 0)
    std::printf("  device         %lld kernel launches, %.3f s on the device "
                "(CUDA events); host<->device copies %.2f s (counted in "
                "kernels and checking)\n",
                ll(executor.launches()), executor.deviceSeconds(),
                executor.transferSeconds());
  std::printf("  throughput     %.0f tokens/s (%.0f tokens/s in the kernels; "
              "%lld layers per token)\n",
              tokensPerS, kernelTokensPerS, ll(opt.layers));
  std::fflush(stdout);
}

} // namespace

int run::report(const ReportInputs &in, int exitCode) {
  if (in.opt.json)
    printJson(in);
  else
    printText(in);
  return exitCode;
}
