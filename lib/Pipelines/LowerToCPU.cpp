//===- LowerToCPU.cpp - The inkling-lower-to-cpu pipeline -----------------===//

#include "inkling/Conversion/Passes.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/CPU/LoopStrategy.h"
#include "inkling/Target/CPU/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void inkling::buildLowerToCPUPipeline(OpPassManager &pm,
                                      const LowerToCPUOptions &options) {
  if (options.emitCInterface)
    pm.addPass(inkling::cpu::createEmitCInterfacePass());

  // The engine's cache geometry, once, before anything reads the layout.
  // After it: every bind, layout and cache type at the chosen block size
  // and cross-layer page count.
  if (options.blockSize != 0 || options.crossLayers != 0) {
    inkling::sconv::SConvSetCacheGeometryOptions geometry;
    geometry.blockSize = options.blockSize;
    geometry.layers = options.crossLayers;
    pm.addPass(inkling::sconv::createSConvSetCacheGeometry(geometry));
  }

  // 0. Fusion (sconv -> sconv): with the default conv-insert strategy a
  //    decoder layer's 4 convs + 4 inserts become one fused_conv per group
  //    of convs that are ready together (3 nests when attention and the MLP
  //    sit between them); `none` keeps one nest per op (8).
  inkling::sconv::buildFusionPipeline(pm, options.fusion);

  // 1. sconv -> loops. After it: no sconv op; each insert/conv is a nest of
  //    scf.parallel (token, head) { scf.parallel (16-byte chunk) } over
  //    vector/memref/arith/math ops, the cache a memref.view +
  //    reinterpret_cast of the byte buffer. This is the loop nest that the
  //    GPU pipeline maps to blocks and threads.
  inkling::SConvLowerToLoopsOptions lowerOptions;
  lowerOptions.checked = options.checked;
  // The CPU's forms of the nests (lib/Target/CPU/CPULoopStrategy.cpp,
  // docs/fusion.md): taps chosen per (token, head); for prefill-sized steps
  // a (run of 4 tokens, head) nest, for the others a (run of 4 tokens of
  // any sequences, head) nest, both by 64-byte lines of channels whose f32
  // lanes are in even-odd order.
  inkling::cpu::CPULoopOptions cpuLoops;
  cpuLoops.splitStreams = options.splitStreams;
  cpuLoops.hoistTaps = true;
  cpuLoops.tokenRuns = true;
  cpuLoops.decodeRuns = options.decodeRuns;
  cpuLoops.evenOddLanes = true;
  cpuLoops.avx512Bf16 = options.avx512Bf16;
  cpuLoops.branchCounters = options.branchCounters;
  pm.addPass(inkling::createSConvLowerToLoops(
      lowerOptions, std::make_shared<inkling::cpu::CPULoopStrategy>(cpuLoops)));
  // 2. Fold the index arithmetic of the nests (constants, dims of static
  //    shapes). The nests stay parallel; canonicalization may merge the two
  //    levels of a nest, which the CPU does not care about.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // 3. Higher-dimensional vector ops (none from the lowering; user code may
  //    have some) -> scf loops of 1-D vector ops.
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass());

  // 4a. With streaming-stores-min-iterations > 0 (default 4096), large
  //     steps store through non-temporal stores: each nest is an scf.if on
  //     one flag computed before it (its iterations >= the threshold, and
  //     the bases of its 64-byte line stores 64-byte aligned) between a
  //     copy whose stores are non-temporal and the nest as it was; the
  //     bits stored do not change.
  if (options.streamingStoresMinIterations > 0) {
    inkling::cpu::StreamingStoresPassOptions streaming;
    streaming.minIterations = options.streamingStoresMinIterations;
    streaming.branchCounters = options.branchCounters;
    pm.addPass(inkling::cpu::createStreamingStoresPass(streaming));
  }

  // 4b. Threads (threads != 1). After it: each nest is an scf.if on the
  //     step's size: small steps run the nest as scf.for loops on the
  //     calling thread (no OpenMP call); larger ones (at least
  //     `min-parallel-iterations` outer iterations: (token, head) pairs,
  //     or (run of 4 tokens, head) in the run nests) run it as an
  //     omp.parallel + omp.wsloop over them (static schedule,
  //     `threads` threads or the OpenMP default) whose chunk loops are
  //     scf.for. Each iteration is computed by one thread exactly as in the
  //     sequential nest: the same bits whatever the thread count.
  if (options.threads != 1) {
    inkling::cpu::ParallelDispatchPassOptions dispatch;
    dispatch.minIterations = options.minParallelIterations;
    dispatch.branchCounters = options.branchCounters;
    pm.addPass(inkling::cpu::createParallelDispatchPass(dispatch));
    pm.addPass(inkling::cpu::createSerializeInnerLoopsPass());
    ConvertSCFToOpenMPPassOptions openmp;
    openmp.numThreads = options.threads;
    pm.addPass(createConvertSCFToOpenMPPass(openmp));
  }

  // 4c. After it: every fixed-size scratch buffer of a nest (memref.alloca)
  //     is allocated once per thread, at the top of its omp.parallel or
  //     function, instead of once per loop iteration.
  pm.addPass(inkling::cpu::createHoistStaticAllocasPass());
  if (options.threads != 1) {
    // Inlines the memref.alloca_scope that convert-scf-to-openmp wraps each
    // loop body in (their allocas hoisted above); scf -> cf below would
    // otherwise give it several blocks, which it may not have.
    pm.addPass(createCanonicalizerPass());
  }

  // 5. Loops -> control flow. After it: scf.for/if/while (and, with one
  //    thread, scf.parallel) are branches in cf; a sequential nest runs on
  //    the calling thread.
  pm.addPass(createSCFToControlFlowPass());

  // 6. bf16: no bf16 arithmetic remains (emulated in f32), and every
  //    bf16 <-> f32 conversion becomes integer arithmetic: `arith.truncf`
  //    rounds to nearest even (NaN stays NaN) without calling libgcc's
  //    `__truncsfbf2`, which libgcc 12 lacks.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addNestedPass<func::FuncOp>(
      arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addNestedPass<func::FuncOp>(arith::createArithExpandOpsPass(expand));

  // 7. To the LLVM dialect. math.fma becomes llvm.intr.fma (always fused,
  //    never contracted differently), math.exp llvm.intr.exp; vector ops
  //    become LLVM vector ops keeping their `alignment`; strided memref
  //    metadata is expanded to index arithmetic (affine -> arith) before the
  //    memref descriptors are lowered.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // The omp regions' operands and block arguments to LLVM types (with the
  // arith, cf, func and memref patterns the regions' bodies need).
  if (options.threads != 1)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // 8. After it: only LLVM dialect ops (and builtin.module) remain.
  pm.addPass(createReconcileUnrealizedCastsPass());
  // 9. bf16 moves through memory as i16 (the x86 backend has no bf16
  //    registers; see inkling-bf16-memory-as-i16).
  pm.addPass(inkling::cpu::createBF16MemoryAsI16Pass());
}

void inkling::registerLowerToCPUPipeline() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "inkling-lower-to-cpu",
      "Lower sconv IR to the LLVM dialect for the CPU (mlir-runner, "
      "ExecutionEngine): sconv-fuse (option fusion), sconv-lower-to-loops, scf "
      "-> cf, bf16 conversions "
      "expanded (round to nearest even, no libgcc call), then everything to "
      "LLVM",
      inkling::buildLowerToCPUPipeline);
}
