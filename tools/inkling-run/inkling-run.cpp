//===- inkling-run.cpp - Compile a model's layer and serve a checked workload
//===//
//
//   inkling-run MODEL.mlir [options]
//       compiles the model's sconv layer once (CPU JIT, or CUDA kernels
//       with --device=gpu), creates the runtime
//       for a memory budget and serves a seeded synthetic workload through
//       both, checking every output and every cache row against a
//       full-history reference; prints a report (--json: one JSON object).
//   inkling-run MODEL.mlir --replay=OP --inputs=name=file.npy,... --outputs=DIR
//       runs one sconv op on .npy tensors and writes its outputs as .npy.
//
// docs/inkling-run.md describes the options, the workload and the checks.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Run.h"
#include "inkling/Runtime/SequenceManager.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <unistd.h>

using namespace inkling;
using namespace inkling::exec;
namespace cl = llvm::cl;

int run::fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "inkling-run: %s\n", message.c_str());
  return 1;
}

namespace {

cl::OptionCategory model("Model and compilation");
cl::OptionCategory workload("Workload");
cl::OptionCategory replayCat("Replay one op on .npy tensors");

cl::opt<std::string> modelPath(cl::Positional, cl::desc("MODEL.mlir"),
                               cl::Required, cl::cat(model));
cl::opt<std::string>
    entry("entry",
          cl::desc("The layer function (default: the only function "
                   "with a body)"),
          cl::cat(model));
cl::opt<int64_t> layers("layers",
                        cl::desc("Decoder layers (default: the module's "
                                 "inkling.num_layers attribute, else 2)"),
                        cl::init(0), cl::cat(model));
cl::opt<std::string> device("device",
                            cl::desc("cpu (JIT, default) or gpu (CUDA kernels "
                                     "through the runtime's launcher)"),
                            cl::init("cpu"), cl::cat(model));
cl::opt<std::string>
    gpuChip("gpu-chip",
            cl::desc("--device=gpu: the target (default: sm_<the device's "
                     "compute capability>)"),
            cl::cat(model));
cl::opt<std::string>
    kernelsDir("kernels-dir",
               cl::desc("--device=gpu: also write the kernel bundle (PTX + "
                        "manifest.json, loaded from memory) into DIR"),
               cl::value_desc("DIR"), cl::cat(model));
cl::opt<std::string> kernelsFrom(
    "kernels-from",
    cl::desc("--device=gpu: serve the kernel bundle in DIR (manifest.json and "
             "the files it names, as --kernels-dir writes them) instead of "
             "the one compiled from the layer; the layer's IR still gives "
             "the signature"),
    cl::value_desc("DIR"), cl::cat(model));
cl::opt<std::string>
    cudaDriver("cuda-driver", cl::Hidden, cl::init("libcuda.so.1"),
               cl::desc("--device=gpu: the CUDA driver library to load"));
cl::opt<std::string>
    fusion("fusion",
           cl::desc("conv-insert, packed-inserts or none (default: the "
                    "inkling-lower-to-cpu pipeline's default)"),
           cl::cat(model));
cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("The JIT's object cache: compiled layers kept by the hash of "
             "their LLVM IR and CPU (default: $INKLING_CACHE_DIR; empty: "
             "none)"),
    cl::cat(model));
cl::opt<int64_t> minParallelIterations(
    "min-parallel-iterations",
    cl::desc("With threads: a loop nest forks only for steps of at least "
             "this many outer iterations, (token, head) pairs or (run of 4 "
             "tokens, head) in the CPU's run nests (default 64)"),
    cl::init(64), cl::cat(model));
cl::opt<bool> checked("checked",
                      cl::desc("Compile in checked mode: bad slot or block ids "
                               "are reported through a status buffer"),
                      cl::cat(model));
cl::opt<double> budgetMB("budget-mb",
                         cl::desc("Cache memory across layers in MiB; the "
                                  "runtime's cache plan makes it blocks"),
                         cl::init(64), cl::cat(model));
cl::opt<int64_t>
    blockSize("block-size",
              cl::desc("Cache block size N, tokens per block (default: the "
                       "layout's; the serving engine's choice, independent "
                       "of the kernel)"),
              cl::init(0), cl::cat(model));
cl::opt<bool>
    crossLayer("cross-layer",
               cl::desc("Cross-layer pages: one allocation, a block holds "
                        "every layer's page side by side (block stride = "
                        "layers x page, layer l at byte l x page)"),
               cl::cat(model));
cl::opt<bool> printPlan("print-plan",
                        cl::desc("Print the runtime's cache plan for the "
                                 "layers and --budget-mb, and exit"),
                        cl::cat(model));
cl::list<int64_t> planAttention(
    "plan-attention", cl::CommaSeparated, cl::cat(model),
    cl::desc("With --print-plan: attention layers beside the sconv layers at "
             "these block sizes (the layout's KV heads and head_dim, bf16)"),
    cl::value_desc("N,..."));
cl::opt<bool> listOps("list-ops",
                      cl::desc("Print the function's argument roles and sconv "
                               "ops (the --replay indices) and exit"),
                      cl::cat(model));

cl::opt<uint64_t> seed("seed", cl::desc("Workload and data seed"), cl::init(1),
                       cl::cat(workload));
cl::opt<int64_t> steps("steps", cl::desc("Steps to serve"), cl::init(400),
                       cl::cat(workload));
cl::opt<int64_t> maxBatch("max-batch",
                          cl::desc("Most running sequences (rows of a step)"),
                          cl::init(16), cl::cat(workload));
cl::opt<int64_t> tokenBudget("token-budget", cl::desc("Most tokens per step"),
                             cl::init(256), cl::cat(workload));
cl::opt<int64_t> maxChunk("max-chunk",
                          cl::desc("Most prefill tokens of one sequence per "
                                   "step (chunked prefill)"),
                          cl::init(96), cl::cat(workload));
cl::opt<int64_t> minPrompt("min-prompt", cl::init(8), cl::cat(workload),
                           cl::desc("Shortest prompt"));
cl::opt<int64_t> maxPrompt("max-prompt", cl::init(256), cl::cat(workload),
                           cl::desc("Longest prompt"));
cl::opt<int64_t> minOutput("min-output", cl::init(8), cl::cat(workload),
                           cl::desc("Fewest generated tokens"));
cl::opt<int64_t> maxOutput("max-output", cl::init(96), cl::cat(workload),
                           cl::desc("Most generated tokens"));
cl::opt<double> arrivalRate("arrival-rate", cl::init(0.25), cl::cat(workload),
                            cl::desc("Mean new requests per step"));
cl::opt<double> sharedPrefixRate(
    "shared-prefix-rate", cl::init(0.5), cl::cat(workload),
    cl::desc("Probability that a request starts with a shared prompt"));
cl::opt<int64_t> sharedPrefixes("shared-prefixes", cl::init(4),
                                cl::cat(workload),
                                cl::desc("Number of shared prompts"));
cl::opt<int64_t> vocab("vocab", cl::init(64), cl::cat(workload),
                       cl::desc("Token ids are drawn from [0, vocab)"));
cl::opt<int64_t> padTokens(
    "pad-tokens", cl::init(0), cl::cat(workload),
    cl::desc("Pad every step's token dimension to a multiple of K, as graph "
             "capture does (0: no padding); padding outputs must equal their "
             "inputs"),
    cl::value_desc("K"));
cl::opt<bool> async(
    "async", cl::cat(workload),
    cl::desc("Async scheduling: schedule each step before the previous "
             "step's sampled tokens reach the runtime (scheduleAhead); they "
             "arrive just before the build"));
cl::opt<int64_t> lookahead("lookahead", cl::init(3), cl::cat(workload),
                           cl::desc("Most speculative drafts per decode step "
                                    "(the runtime's lookahead)"));
cl::opt<double> specRate("spec-rate", cl::init(0.5), cl::cat(workload),
                         cl::desc("Probability that a decode step is "
                                  "speculative (1 + 1..lookahead drafts, "
                                  "random acceptance)"));
cl::opt<double> preemptRate("preempt-rate", cl::init(0.01), cl::cat(workload),
                            cl::desc("Probability per step of preempting a "
                                     "random running sequence"));
cl::opt<double> forkRate("fork-rate", cl::init(0.01), cl::cat(workload),
                         cl::desc("Probability per step of forking a decoding "
                                  "sequence (parallel sampling)"));
cl::opt<bool> noPrefixCaching("no-prefix-caching", cl::cat(workload),
                              cl::desc("Disable the runtime's prefix cache"));
cl::opt<std::string> prefixPolicy(
    "prefix-policy", cl::init("snapshots"), cl::cat(workload),
    cl::desc("What prefill stores for prefix hits: window (its final window "
             "only), snapshots (also the block before each chunk end, every "
             "S-th block boundary and cache points) or every-block"));
cl::opt<int64_t> snapshotEvery(
    "snapshot-every", cl::init(8), cl::cat(workload),
    cl::desc("S: the snapshots policy also snapshots every S-th block "
             "boundary (S in [1, 2^20])"));
cl::opt<double> cachePointRate(
    "cache-point-rate", cl::init(0), cl::cat(workload),
    cl::desc("Probability that a request with a shared prompt names its end "
             "as a cache point"));
cl::opt<double> watermark(
    "watermark", cl::init(0.01), cl::cat(workload),
    cl::desc("Admission keeps this fraction of the pool free for the running "
             "sequences' next steps (the runtime's admission query, vLLM's "
             "watermark); -1: the old rule of thumb, for comparison"));
cl::opt<bool> noCheck("no-check", cl::cat(workload),
                      cl::desc("Skip the reference checks (timing)"));
cl::opt<bool> json("json", cl::cat(workload),
                   cl::desc("Print the report as one JSON object"));
cl::opt<bool>
    noProgress("no-progress", cl::cat(workload),
               cl::desc("No progress bar (shown only on a terminal)"));
cl::opt<std::string>
    injectFault("inject-fault", cl::Hidden,
                cl::desc("input:STEP, output:STEP, cache:STEP or "
                         "padding:STEP (a padding token's output, with "
                         "--pad-tokens), each with :LAYER (default 0): "
                         "corrupt one value (tests the checker)"));

cl::opt<std::string> corruptMetadata(
    "corrupt-metadata", cl::Hidden,
    cl::desc("STEP:NAME[I]=V: write V into entry I of the step metadata "
             "argument NAME before the step's first layer call (tests the "
             "layer ABI's validator in serving)"));

cl::opt<int64_t> replayOp("replay", cl::init(-1), cl::cat(replayCat),
                          cl::desc("Run the OP-th sconv op (see --list-ops) "
                                   "on --inputs and write --outputs"),
                          cl::value_desc("OP"));
cl::list<std::string> inputs("inputs", cl::CommaSeparated, cl::cat(replayCat),
                             cl::desc("name=file.npy,... (bf16 as uint16, "
                                      "metadata int32/int64)"));
cl::opt<std::string> outputs("outputs", cl::cat(replayCat),
                             cl::desc("Directory for the output .npy files"),
                             cl::value_desc("DIR"));

int listModel(const LayerSignature &sig) {
  std::printf(
      "@%s: layout kv_heads %lld, head_dim %lld, hidden %lld, kernel "
      "%lld, tp %lld, block_size %lld, page_bytes %lld\n",
      sig.function.c_str(), (long long)sig.layout.config.kvHeads,
      (long long)sig.layout.config.headDim, (long long)sig.layout.config.hidden,
      (long long)sig.layout.config.kernel, (long long)sig.layout.config.tp,
      (long long)sig.layout.blockSize, (long long)sig.pageBytes);
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgInfo &arg = sig.args[i];
    std::printf("  argument %zu: %s%s%s : %s\n", i,
                arg.stream ? streamName(*arg.stream) : "",
                arg.stream ? " " : "", argRoleName(arg.role), arg.type.c_str());
  }
  for (size_t i = 0; i < sig.ops.size(); ++i) {
    const OpInfo &op = sig.ops[i];
    std::string streams;
    for (Stream s : op.streams)
      streams += std::string(streams.empty() ? "" : ", ") + streamName(s);
    std::printf("  op %zu: %s [%s] at %s\n", i, op.name.c_str(),
                streams.c_str(), op.location.c_str());
    // The epilogues that read its rows run with it (a replay keeps them).
    for (int index : op.epilogues) {
      const EpilogueInfo &e = sig.epilogues[index];
      bool kv = e.kind == EpilogueInfo::Kind::KvWrite;
      std::printf(
          "    epilogue [%s]: %s -> %s\n", streamName(e.stream),
          kv ? (e.normWeight >= 0 ? "rms_norm, kv_write" : "kv_write")
             : "add, rms_norm",
          kv ? sig.argName(e.kvCache).c_str()
             : (sig.argName(e.sum) + ", " + sig.argName(e.out)).c_str());
    }
  }
  return 0;
}

/// The tool's own options; 0 or the exit code of a printed error.
int checkToolOptions(int threads) {
  if (device != "cpu" && device != "gpu")
    return run::fail("--device=" + device + ": expected cpu or gpu");
  if (Status s = exec::checkThreadCount(threads); !s)
    return run::fail("--" + s.message());
  if (minParallelIterations < 0)
    return run::fail("--min-parallel-iterations=" +
                     std::to_string(minParallelIterations) + ": expected >= 0");
  return 0;
}

int replayOneOp(LayerProgram &program, int threads) {
  if (device == "gpu")
    return run::fail("--replay runs on the CPU; drop --device=gpu");
  if (outputs.empty())
    return run::fail("--replay needs --outputs=DIR");
  if (crossLayer)
    return run::fail("--cross-layer serves a workload; --replay runs one "
                     "layer's op (use --block-size for its geometry)");
  run::ReplayOptions options;
  options.modelPath = modelPath;
  options.opIndex = replayOp;
  options.inputs.assign(inputs.begin(), inputs.end());
  options.outputDir = outputs;
  options.fusion = fusion;
  options.threads = threads;
  return run::replay(program, options);
}

/// Every workload option is range-checked before any arithmetic on it
/// (products of these bounds fit int64 and the allocations they size); the
/// error names the option and the value as given. False if one is out of
/// range (printed).
bool workloadInRange() {
  auto intIn = [](const char *name, int64_t value, int64_t lo, int64_t hi,
                  const char *note = "") {
    if (value >= lo && value <= hi)
      return true;
    run::fail(std::string("--") + name + "=" + std::to_string(value) +
              ": expected an integer in [" + std::to_string(lo) + ", " +
              std::to_string(hi) + "]" + note);
    return false;
  };
  auto realIn = [](const char *name, double value, double lo, double hi,
                   bool openLo = false) {
    if (std::isfinite(value) && (openLo ? value > lo : value >= lo) &&
        value <= hi)
      return true;
    char text[256];
    std::snprintf(text, sizeof(text),
                  "--%s=%g: expected a number in %c%.17g, %.17g]", name, value,
                  openLo ? '(' : '[', lo, hi);
    run::fail(text);
    return false;
  };
  constexpr int64_t kMaxTokens = int64_t(1) << 20;
  if (!intIn("layers", layers, 0, 1024,
             " (0: the module's inkling.num_layers, else 2)") ||
      !realIn("budget-mb", budgetMB, 0, 1 << 20, /*openLo=*/true) ||
      !intIn("steps", steps, 0, int64_t(1) << 30) ||
      !intIn("max-batch", maxBatch, 1, 4096) ||
      !intIn("token-budget", tokenBudget, 1, kMaxTokens) ||
      !intIn("max-chunk", maxChunk, 1, kMaxTokens) ||
      !intIn("min-prompt", minPrompt, 1, kMaxTokens) ||
      !intIn("max-prompt", maxPrompt, minPrompt, kMaxTokens) ||
      !intIn("min-output", minOutput, 1, kMaxTokens) ||
      !intIn("max-output", maxOutput, minOutput, kMaxTokens) ||
      !intIn("vocab", vocab, 1, int64_t(1) << 30) ||
      !intIn("lookahead", lookahead, 0, 16) ||
      !intIn("pad-tokens", padTokens, 0, kMaxTokens) ||
      !realIn("arrival-rate", arrivalRate, 0, 1024) ||
      !intIn("shared-prefixes", sharedPrefixes, 0, 4096) ||
      !realIn("spec-rate", specRate, 0, 1) ||
      !realIn("preempt-rate", preemptRate, 0, 1) ||
      !realIn("fork-rate", forkRate, 0, 1) ||
      (watermark != -1 && !realIn("watermark", watermark, 0, 1)) ||
      !realIn("shared-prefix-rate", sharedPrefixRate, 0, 1))
    return false;
  // The caches live in host memory (also with --device=gpu: the checker's
  // copies): a budget beyond it would only thrash or fail later.
  double physicalMB = double(sysconf(_SC_PHYS_PAGES)) *
                      double(sysconf(_SC_PAGE_SIZE)) / (1 << 20);
  if (physicalMB > 0 && budgetMB > physicalMB) {
    char text[256];
    std::snprintf(text, sizeof(text),
                  "--budget-mb=%g: more than this machine's memory (%.0f MiB)",
                  double(budgetMB), physicalMB);
    run::fail(text);
    return false;
  }
  return true;
}

/// Without --layers: the module's count, else the bind's cross-layer count,
/// else 2. 0 or the exit code of a printed error.
int resolveLayers(LayerProgram &program, int64_t &resolved) {
  const LayerSignature &sig = program.signature();
  resolved = layers > 0
                 ? int64_t(layers)
                 : sig.numLayers.value_or(sig.crossLayers > 1 ? sig.crossLayers
                                                              : int64_t(2));
  if (resolved < 1 || resolved > 1024)
    return run::fail(modelPath +
                     ": inkling.num_layers = " + std::to_string(resolved) +
                     ": expected an integer in [1, 1024] (or pass --layers)");
  if (crossLayer)
    if (llvm::Error e = program.setCacheGeometry(0, resolved))
      return run::fail("--cross-layer: " + llvm::toString(std::move(e)));
  return 0;
}

int printCachePlan(const LayerSignature &sig, int64_t numLayers) {
  std::vector<int64_t> attention(planAttention.begin(), planAttention.end());
  StatusOr<CachePlan> plan =
      run::planCache(sig, numLayers, budgetMB, attention);
  if (!plan)
    return run::fail("--print-plan: " + plan.status().message());
  std::fputs(plan->describe().c_str(), stdout);
  return 0;
}

/// The prefix cache's options; 0 or the exit code of a printed error.
int checkPrefixOptions() {
  if (!std::isfinite(cachePointRate) || cachePointRate < 0 ||
      cachePointRate > 1)
    return run::fail("--cache-point-rate=" + std::to_string(cachePointRate) +
                     " is a probability in [0, 1]");
  if (snapshotEvery < 1 || snapshotEvery > kMaxSnapshotEvery)
    return run::fail("--snapshot-every=" + std::to_string(snapshotEvery) +
                     " must be in [1, 2^20] blocks");
  if (StatusOr<PrefixPolicy> policy = parsePrefixPolicy(prefixPolicy);
      !policy) {
    llvm::errs() << "inkling-run: --prefix-policy: "
                 << policy.status().message() << "\n";
    return 1;
  }
  return 0;
}

run::ServeOptions serveOptions(int64_t numLayers, int threads) {
  run::ServeOptions options;
  options.modelPath = modelPath;
  options.layers = numLayers;
  options.budgetMB = budgetMB;
  options.compile.checked = checked;
  options.compile.fusion = fusion;
  options.compile.threads = threads;
  options.compile.minParallelIterations = minParallelIterations;
  if (cacheDir.getNumOccurrences())
    options.compile.cacheDir = cacheDir;
  options.seed = seed;
  options.steps = steps;
  options.maxBatch = maxBatch;
  options.tokenBudget = tokenBudget;
  options.maxChunk = maxChunk;
  options.minPrompt = minPrompt;
  options.maxPrompt = maxPrompt;
  options.minOutput = minOutput;
  options.maxOutput = maxOutput;
  options.arrivalRate = arrivalRate;
  options.sharedPrefixRate = sharedPrefixRate;
  options.numSharedPrefixes = sharedPrefixes;
  options.vocab = vocab;
  options.lookahead = lookahead;
  options.padTokens = padTokens;
  options.async = async;
  options.specRate = specRate;
  options.preemptRate = preemptRate;
  options.forkRate = forkRate;
  options.prefixCaching = !noPrefixCaching;
  options.prefixPolicy = prefixPolicy;
  options.snapshotEvery = snapshotEvery;
  options.cachePointRate = cachePointRate;
  options.watermark = watermark;
  options.check = !noCheck;
  options.json = json;
  options.progress = !noProgress;
  options.injectFault = injectFault;
  options.corruptMetadata = corruptMetadata;
  return options;
}

/// The layer, compiled once: JIT-compiled for the CPU, or lowered to a
/// kernel bundle that the runtime's CUDA launcher loads (the driver is
/// dlopen-ed: without one, this is a one-line error); then served.
int compileAndServe(LayerProgram &program, run::ServeOptions &options,
                    int threads) {
  std::string error;
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<run::Executor> executor;
  if (device == "gpu") {
    run::GpuExecutorOptions gpuOptions;
    gpuOptions.driverLibrary = cudaDriver;
    gpuOptions.kernelsDir = kernelsDir;
    gpuOptions.kernelsFrom = kernelsFrom;
    gpuOptions.chip = gpuChip;
    gpuOptions.compile = options.compile;
    executor = run::createGpuExecutor(program, gpuOptions, error);
  } else if (llvm::Error e = program.compile(options.compile)) {
    error = llvm::toString(std::move(e));
  } else {
    executor = run::createCpuExecutor(program);
    options.cpuThreads =
        threads > 0 ? int(threads) : LayerProgram::defaultThreadCount();
  }
  if (!executor)
    return run::fail(error);
  options.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  options.objectCache = exec::cacheOutcomeName(program.cacheOutcome()).str();
  options.objectCacheProblem = program.cacheProblem();
  return run::serve(program.signature(), *executor, options);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // libLLVM registers an internal `-threads` option of its own, so this
  // tool's `--threads` is registered once that one is out of the way (a
  // global cl::opt of the same name would abort at load time).
  if (cl::Option *llvmThreads = cl::getRegisteredOptions().lookup("threads"))
    llvmThreads->removeArgument();
  cl::opt<int> threads(
      "threads",
      cl::desc("CPU threads for the layer's loop nests (OpenMP): 0 (default), "
               "every core (OMP_NUM_THREADS if set); 1, the calling thread "
               "alone. Nests of fewer than --min-parallel-iterations "
               "outer iterations run on one thread either way"),
      cl::init(0), cl::cat(model));
  cl::HideUnrelatedOptions({&model, &workload, &replayCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "inkling-run: compile a model's sconv layer and serve a checked "
      "synthetic workload through the runtime and the kernels\n\n"
      "  inkling-run MODEL.mlir [options]\n"
      "  inkling-run MODEL.mlir --replay=OP --inputs=name=file.npy,... "
      "--outputs=DIR\n");

  if (int rc = checkToolOptions(threads))
    return rc;
  auto loaded = LayerProgram::load(modelPath, entry);
  if (!loaded)
    return run::fail(llvm::toString(loaded.takeError()));
  std::unique_ptr<LayerProgram> program = std::move(*loaded);
  if (blockSize < 0)
    return run::fail("--block-size=" + std::to_string(blockSize) +
                     ": expected a block size >= 1");
  if (blockSize > 0)
    if (llvm::Error e = program->setCacheGeometry(blockSize, 0))
      return run::fail("--block-size=" + std::to_string(blockSize) + ": " +
                       llvm::toString(std::move(e)));
  if (listOps)
    return listModel(program->signature());
  if (replayOp >= 0)
    return replayOneOp(*program, threads);
  if (!inputs.empty() || !outputs.empty())
    return run::fail("--inputs and --outputs go with --replay=OP");

  if (!workloadInRange())
    return 1;
  int64_t numLayers = 0;
  if (int rc = resolveLayers(*program, numLayers))
    return rc;
  if (!planAttention.empty() && !printPlan)
    return run::fail("--plan-attention goes with --print-plan");
  if (printPlan)
    return printCachePlan(program->signature(), numLayers);
  if (int rc = checkPrefixOptions())
    return rc;
  run::ServeOptions options = serveOptions(numLayers, threads);
  return compileAndServe(*program, options, threads);
}
