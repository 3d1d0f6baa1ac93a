//===- Pipelines.h - Inkling's named lowering pipelines ---------*- C++ -*-===//
//
// The pipelines an ML compiler links to lower sconv IR (docs/Design.md section
// 5).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_PIPELINES_PIPELINES_H
#define INKLING_PIPELINES_PIPELINES_H

#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace inkling {

/// The engine's cache geometry, an option pair both pipelines take (their
/// first stage, sconv-set-cache-geometry, applies it).
template <typename Derived>
struct CacheGeometryOptions : mlir::PassPipelineOptions<Derived> {
  template <typename T>
  using Option =
      typename mlir::PassPipelineOptions<Derived>::template Option<T>;
  Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("The engine's tokens per cache block N, applied first "
                     "(sconv-set-cache-geometry): 0 (default), the "
                     "layout's"),
      llvm::cl::init(0)};
  Option<int64_t> crossLayers{
      *this, "cross-layers",
      llvm::cl::desc("Pages of this many layers side by side in one block "
                     "stride, applied first (sconv-set-cache-geometry): 0 "
                     "(default), as the IR's bind says; 1, a page per block"),
      llvm::cl::init(0)};
};

/// Options of `inkling-lower-to-cpu`.
struct LowerToCPUOptions : CacheGeometryOptions<LowerToCPUOptions> {
  Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Guard slot and block ids at run time (the "
                     "sconv-lower-to-loops option of the same name): "
                     "out-of-range ids are skipped and reported in the step's "
                     "status buffer, or stop the program through cf.assert "
                     "when the step has none"),
      llvm::cl::init(false)};
  Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Mark every public function with a body "
                     "`llvm.emit_c_interface`, so that the ExecutionEngine "
                     "(or C code) can call it with memref descriptors"),
      llvm::cl::init(false)};
  Option<sconv::FusionStrategy> fusion{
      *this, "fusion",
      llvm::cl::desc(
          "How a layer's sconv inserts and convs are fused before the loop "
          "lowering (the sconv-fuse pipeline). Default conv-insert: every "
          "insert folds into the conv of the same input and the convs that "
          "are ready together fuse, 3 loop nests per decoder layer instead "
          "of 8, x read once for conv and insert (inkling-bench-fusion "
          "measures the strategies against each other: docs/fusion.md)"),
      llvm::cl::init(sconv::FusionStrategy::ConvInsert),
      sconv::fusionStrategyValues()};
  Option<bool> splitStreams{
      *this, "split-streams",
      llvm::cl::desc(
          "In a fused op's nest, one inner loop per stream (the "
          "inkling-cpu-lower-to-loops option of the same name): on by default "
          "on "
          "the CPU, where a plain per-stream loop vectorizes; off gives the "
          "GPU's loop over the concatenated chunks"),
      llvm::cl::init(true)};
  Option<bool> decodeRuns{
      *this, "decode-runs",
      llvm::cl::desc(
          "For the steps that are not prefill (decode), the (run of 4 "
          "tokens, head) nest by 64-byte lines with the weights loaded once "
          "per run (the inkling-cpu-lower-to-loops option of the same name); "
          "off: the (token, head) nest by 16-byte chunks. The same bits "
          "either way (inkling-bench-fusion measures both: docs/fusion.md)"),
      llvm::cl::init(true)};
  Option<bool> avx512Bf16{
      *this, "avx512-bf16",
      llvm::cl::desc(
          "The target has AVX512-F, -BW, -DQ and AVX512-BF16 (the "
          "inkling-cpu-lower-to-loops option of the same name): decode rounds "
          "its outputs to bf16 with vcvtne2ps2bf16 where that gives the same "
          "bits. Off by default (the code runs on any x86-64 or AArch64); "
          "the JIT (LayerProgram::compile) sets it from the host's features"),
      llvm::cl::init(false)};
  Option<int> threads{
      *this, "threads",
      llvm::cl::desc(
          "Threads for the outer (token, head) loop of each nest, through "
          "OpenMP (convert-scf-to-openmp; the program then needs LLVM's "
          "OpenMP runtime, libomp). 1 (default): no OpenMP, the nests run "
          "on the calling thread; 0: the OpenMP runtime's default "
          "(OMP_NUM_THREADS, else every core); N > 1: N threads. The results "
          "are the same bits for every value"),
      llvm::cl::init(1)};
  Option<int64_t> minParallelIterations{
      *this, "min-parallel-iterations",
      llvm::cl::desc(
          "With threads != 1: a nest forks its threads only when it has at "
          "least this many outer iterations ((token, head), or (run of 4 "
          "tokens, head) in the CPU's run nests), decided at run time on "
          "each call (the omp.parallel `if` clause); smaller steps run on the "
          "calling thread without a fork (docs/fusion.md measures it)"),
      llvm::cl::init(64)};
  Option<int64_t> streamingStoresMinIterations{
      *this, "streaming-stores-min-iterations",
      llvm::cl::desc(
          "A nest of at least this many outer iterations ((token, head) "
          "pairs, or (run of 4 tokens, head) in a prefill's token-run nest) "
          "stores its outputs and cache rows with non-temporal stores (no "
          "read for ownership, no cache pollution: a prefill's megabytes); "
          "smaller steps keep ordinary stores, decided at run time on each "
          "call (inkling-cpu-streaming-stores, which also checks the bases "
          "of 64-byte line stores). 0: never. Default 4096: a prefill of "
          "2048 tokens at the real layout and up (inkling-bench-fusion "
          "measures both kinds of stores: docs/fusion.md)"),
      llvm::cl::init(4096)};
  Option<bool> branchCounters{
      *this, "branch-counters",
      llvm::cl::desc(
          "Count each run-time branch of the nests taken (token runs, "
          "unrolled runs, streaming stores, threads) in public i64 globals "
          "(include/inkling/Target/CPU/BranchCounters.h), for tests; off "
          "(default): no counter in the IR"),
      llvm::cl::init(false)};
};

/// Appends the CPU lowering to `pm` (anchored on `builtin.module`): the
/// fusion passes of `options.fusion`, sconv ->
/// scf.parallel + vector loops -> cf -> LLVM dialect, with bf16 conversions
/// expanded to integer arithmetic (round to nearest even, no libgcc
/// `__truncsfbf2` call). The result runs in `mlir-runner` or MLIR's
/// ExecutionEngine.
void buildLowerToCPUPipeline(mlir::OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers `inkling-lower-to-cpu` with the pass pipeline registry.
void registerLowerToCPUPipeline();

/// Options of `inkling-lower-to-nvvm`.
struct LowerToNVVMOptions : CacheGeometryOptions<LowerToNVVMOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (sm_90: H100/H200)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features of the target (+ptx80: PTX ISA 8.0, which "
                     "sm_90 needs and CUDA 12+ ptxas accepts)"),
      llvm::cl::init("+ptx80")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level of the kernels"),
                       llvm::cl::init(3)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu-module-to-binary produces: isa (PTX text, no "
                     "tool needed), bin (cubin, runs ptxas from PATH or "
                     "/usr/local/cuda), fatbin (needs fatbinary too)"),
      llvm::cl::init("isa")};
  Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Guard slot and block ids at run time (the "
                     "sconv-lower-to-loops option of the same name)"),
      llvm::cl::init(false)};
  Option<sconv::FusionStrategy> fusion{
      *this, "fusion",
      llvm::cl::desc("The sconv-fuse strategy run first, as on the CPU "
                     "(default conv-insert: a decoder layer whose ops are "
                     "ready together is one kernel launch instead of 8)"),
      llvm::cl::init(sconv::FusionStrategy::ConvInsert),
      sconv::fusionStrategyValues()};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit path for bin/fatbin and libdevice (empty: "
                     "MLIR's default lookup)"),
      llvm::cl::init("")};
  Option<bool> hostForm{
      *this, "host-form",
      llvm::cl::desc("Record each kernel's host form "
                     "(inkling-gpu-emit-host-form): the bundle then runs on "
                     "the fake CUDA driver's emulator too"),
      llvm::cl::init(true)};
};

/// Appends the GPU lowering to `pm` (anchored on `builtin.module`): the same
/// sconv loop nests as the CPU pipeline, the outer (token, head) loop mapped
/// to blocks and the inner 16-byte chunk loop to threads (consecutive
/// threads, consecutive chunks: coalesced), outlined into one kernel per nest,
/// lowered to NVVM and serialized by `gpu-module-to-binary`. The module
/// keeps each kernel's ABI in its `inkling.kernels` attribute for
/// `inkling-gpu-write-kernels` (docs/gpu.md).
void buildLowerToNVVMPipeline(mlir::OpPassManager &pm,
                              const LowerToNVVMOptions &options);

/// Registers `inkling-lower-to-nvvm` and the GPU passes
/// (`inkling-gpu-write-kernels` ...) with the registries. A tool that runs them
/// also needs `inkling::gpu::registerNVVMLoweringDialects` on its registry.
void registerLowerToNVVMPipeline();

} // namespace inkling

#endif // INKLING_PIPELINES_PIPELINES_H
