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

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <chrono>
#include <cstdio>

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
cl::opt<std::string>
    cudaDriver("cuda-driver", cl::Hidden, cl::init("libcuda.so.1"),
               cl::desc("--device=gpu: the CUDA driver library to load"));
cl::opt<std::string>
    fusion("fusion",
           cl::desc("conv-insert, packed-inserts or none (default: the "
                    "inkling-lower-to-cpu pipeline's default)"),
           cl::cat(model));
cl::opt<bool> checked("checked",
                      cl::desc("Compile in checked mode: bad slot or block ids "
                               "are reported through a status buffer"),
                      cl::cat(model));
cl::opt<double> budgetMB("budget-mb",
                         cl::desc("Cache memory across layers in MiB; "
                                  "blocks = budget / (layers * page bytes)"),
                         cl::init(64), cl::cat(model));
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
                         "--pad-tokens): corrupt one value (tests the "
                         "checker)"));

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
  std::printf("@%s: layout kv_heads %lld, head_dim %lld, hidden %lld, kernel "
              "%lld, tp %lld, page_bytes %lld\n",
              sig.function.c_str(), (long long)sig.layout.config.kvHeads,
              (long long)sig.layout.config.headDim,
              (long long)sig.layout.config.hidden,
              (long long)sig.layout.config.kernel,
              (long long)sig.layout.config.tp, (long long)sig.pageBytes);
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
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&model, &workload, &replayCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "inkling-run: compile a model's sconv layer and serve a checked "
      "synthetic workload through the runtime and the kernels\n\n"
      "  inkling-run MODEL.mlir [options]\n"
      "  inkling-run MODEL.mlir --replay=OP --inputs=name=file.npy,... "
      "--outputs=DIR\n");

  if (device != "cpu" && device != "gpu")
    return run::fail("--device=" + device + ": expected cpu or gpu");
  bool gpu = device == "gpu";

  std::string error;
  auto program = LayerProgram::load(modelPath, entry, error);
  if (!program)
    return run::fail(error);
  const LayerSignature &sig = program->signature();
  if (listOps)
    return listModel(sig);

  if (replayOp >= 0) {
    if (gpu)
      return run::fail("--replay runs on the CPU; drop --device=gpu");
    if (outputs.empty())
      return run::fail("--replay needs --outputs=DIR");
    run::ReplayOptions options;
    options.modelPath = modelPath;
    options.opIndex = replayOp;
    options.inputs.assign(inputs.begin(), inputs.end());
    options.outputDir = outputs;
    options.fusion = fusion;
    return run::replay(*program, options);
  }
  if (!inputs.empty() || !outputs.empty())
    return run::fail("--inputs and --outputs go with --replay=OP");

  run::ServeOptions options;
  options.modelPath = modelPath;
  options.layers =
      layers > 0 ? int64_t(layers) : sig.numLayers.value_or(int64_t(2));
  if (layers < 0 || options.layers < 1)
    return run::fail("--layers=" + std::to_string(options.layers) +
                     ": expected at least 1");
  auto need = [](bool ok, const std::string &what) {
    if (!ok)
      run::fail(what);
    return ok;
  };
  if (!need(budgetMB > 0, "--budget-mb must be positive") ||
      !need(steps >= 0, "--steps must be >= 0") ||
      !need(maxBatch >= 1, "--max-batch must be >= 1") ||
      !need(tokenBudget >= 1, "--token-budget must be >= 1") ||
      !need(maxChunk >= 1, "--max-chunk must be >= 1") ||
      !need(minPrompt >= 1 && minPrompt <= maxPrompt,
            "--min-prompt and --max-prompt: need 1 <= min <= max") ||
      !need(minOutput >= 1 && minOutput <= maxOutput,
            "--min-output and --max-output: need 1 <= min <= max") ||
      !need(vocab >= 1 && vocab <= (int64_t(1) << 30),
            "--vocab must be in [1, 2^30]") ||
      !need(lookahead >= 0 && lookahead <= 16,
            "--lookahead must be in [0, 16]") ||
      !need(padTokens >= 0 && padTokens <= (int64_t(1) << 20),
            "--pad-tokens must be in [0, 2^20]") ||
      !need(arrivalRate >= 0, "--arrival-rate must be >= 0") ||
      !need(sharedPrefixes >= 0, "--shared-prefixes must be >= 0") ||
      !need(specRate >= 0 && specRate <= 1 && preemptRate >= 0 &&
                preemptRate <= 1 && forkRate >= 0 && forkRate <= 1 &&
                sharedPrefixRate >= 0 && sharedPrefixRate <= 1,
            "--spec-rate, --preempt-rate, --fork-rate and "
            "--shared-prefix-rate are probabilities in [0, 1]"))
    return 1;
  options.budgetMB = budgetMB;
  options.compile.checked = checked;
  options.compile.fusion = fusion;
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
  options.check = !noCheck;
  options.json = json;
  options.progress = !noProgress;
  options.injectFault = injectFault;

  // The layer, compiled once: JIT-compiled for the CPU, or lowered to a
  // kernel bundle that the runtime's CUDA launcher loads (the driver is
  // dlopen-ed: without one, this is a one-line error).
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<run::Executor> executor;
  if (gpu) {
    run::GpuExecutorOptions gpuOptions;
    gpuOptions.driverLibrary = cudaDriver;
    gpuOptions.kernelsDir = kernelsDir;
    gpuOptions.chip = gpuChip;
    gpuOptions.compile = options.compile;
    executor = run::createGpuExecutor(*program, gpuOptions, error);
  } else if (program->compile(options.compile, error)) {
    executor = run::createCpuExecutor(*program);
  }
  if (!executor)
    return run::fail(error);
  options.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return run::serve(sig, *executor, options);
}
