//===- LowerToNVVM.cpp - The inkling-lower-to-nvvm pipeline ---------------===//
//
// The GPU backend of docs/Design.md section 5: the loop nests the CPU pipeline
// runs become one CUDA kernel each (outer (token, head) loop -> blocks, inner
// 16-byte chunk loop -> threads), lowered to NVVM and serialized to PTX or
// cubin. Stages follow upstream's gpu-lower-to-nvvm-pipeline, with Inkling's
// own mapping, sinking and ABI recording in between (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/Passes.h"
#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"

using namespace mlir;

void inkling::buildLowerToNVVMPipeline(OpPassManager &pm,
                                       const LowerToNVVMOptions &options) {
  // 0. The chip must be one the NVPTX backend knows (it would stop the
  //    process at serialization otherwise). After it: a known chip.
  gpu::CheckTargetPassOptions target;
  target.chip = options.chip;
  target.format = options.format;
  pm.addPass(gpu::createCheckTargetPass(target));

  // The engine's cache geometry, once, before anything reads the layout.
  // After it: every bind, layout and cache type at the chosen block size
  // and cross-layer page count.
  if (options.blockSize != 0 || options.crossLayers != 0) {
    sconv::SConvSetCacheGeometryOptions geometry;
    geometry.blockSize = options.blockSize;
    geometry.layers = options.crossLayers;
    pm.addPass(sconv::createSConvSetCacheGeometry(geometry));
  }

  // 0b. Fusion (sconv -> sconv), as in the CPU pipeline: with conv-insert a
  //     decoder layer's ops that are ready together become one fused_conv
  //     that also inserts (one kernel instead of 8); `none` keeps one
  //     kernel per op.
  sconv::buildFusionPipeline(pm, options.fusion);

  // 1. Tag every sconv op with what it implements (FusedLoc metadata of its
  //    location; the loops, the launch and the kernel inherit it).
  pm.addPass(gpu::createTagSConvOpsPass());

  // 2. sconv -> loops, exactly as for the CPU. After it: per op, a nest
  //    scf.parallel (token, head) { scalar per-token work;
  //    scf.parallel (chunk) { vector<8xbf16> accesses, alignment 16 } }.
  //    No canonicalize here: it would merge the two levels of a nest and
  //    leave nothing for the threads.
  inkling::SConvLowerToLoopsOptions lowerOptions;
  lowerOptions.checked = options.checked;
  pm.addPass(inkling::createSConvLowerToLoops(lowerOptions,
                                              gpu::createGPULoopStrategy()));

  // 3. Mapping: outermost scf.parallel dims -> block x, y (token, head);
  //    the chunk scf.parallel inside -> thread x, so a warp's 32 threads
  //    touch 32 consecutive 16-byte chunks of a row (coalesced). Upstream's
  //    gpu-map-parallel-loops (outermost-first) does exactly this for the
  //    nests of step 2 (test/Target/GPU/map-nests.mlir).
  pm.addNestedPass<func::FuncOp>(mlir::createGpuMapParallelLoopsPass());

  // 4. Nests -> gpu.launch (grid (T, H, 1), block (chunks, 1, 1)); the
  //    affine bounds this leaves are folded and lowered, so a grid size is
  //    a constant or `memref.dim %x, 0` (the token count T).
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  // 4b. A block's buffer (the fused epilogues' heads' sums) -> a workgroup
  //     attribution of its launch.
  pm.addPass(gpu::createWorkgroupAttributionsPass());

  // 5. Sink constants, dims, index math and memref views into the launches:
  //    index constants stay inside the kernels (not kernel parameters), and
  //    every kernel argument is one of the host function's own buffers.
  pm.addPass(gpu::createSinkIntoLaunchPass());

  // 6. Outline: one gpu.module + gpu.func per launch; then name each kernel
  //    `<host>_k<i>_<op>_<streams>` and record its op, ABI (host argument
  //    of each kernel argument, memref types) and grid rule in the module's
  //    `inkling.kernels` attribute.
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(gpu::createRecordKernelsPass());

  // 7. Common lowering (upstream gpu-lower-to-nvvm-pipeline's first part):
  //    loops to control flow, host functions to LLVM, strided metadata
  //    expanded, the NVVM target attached to every gpu.module. The
  //    `{alignment = 16}` of the vector accesses is an attribute of the op
  //    inside the kernel, so it survives outlining.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.features = options.features;
  attach.optLevel = options.optLevel;
  std::string toolkit =
      options.toolkit.empty() ? "/usr/local/cuda" : options.toolkit.getValue();
  std::string libdevice = toolkit + "/nvvm/libdevice/libdevice.10.bc";
  if (llvm::sys::fs::exists(libdevice))
    attach.linkLibs.push_back(libdevice);
  pm.addPass(createGpuNVVMAttachTarget(attach));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions index;
  index.indexBitwidth = 64;
  pm.addPass(createConvertIndexToLLVMPass(index));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // 8. Kernels -> NVVM + LLVM dialect (memref descriptors expanded into
  //    parameters: allocated ptr, aligned ptr, offset, sizes, strides);
  //    math.fma first becomes llvm.intr.fma (fma.rn.f32, the CPU's rounding)
  //    rather than a libdevice call; other math (silu's exp) goes to
  //    libdevice, linked when the toolkit has it;
  //    then record those parameter types (the ABI the driver sees).
  pm.addNestedPass<mlir::gpu::GPUModuleOp>(gpu::createFmaToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<mlir::gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<mlir::gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<mlir::gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<mlir::gpu::GPUModuleOp>(
      createReconcileUnrealizedCastsPass());
  pm.addPass(gpu::createRecordKernelParamsPass());
  // 8b. Beside each kernel, its host form: this same LLVM IR with the
  //     special registers and every global access routed through the fake
  //     CUDA driver's emulator, which executes it (docs/gpu.md).
  if (options.hostForm)
    pm.addPass(gpu::createEmitHostFormPass());

  // 9. Host launches -> LLVM (gpu.launch_func on lowered operands), and
  //    every gpu.module -> gpu.binary holding PTX (isa), cubin (bin) or a
  //    fatbin, for the attached chip. After it: no gpu.module remains.
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void inkling::registerLowerToNVVMPipeline() {
  PassPipelineRegistration<LowerToNVVMOptions>(
      "inkling-lower-to-nvvm",
      "Lower sconv IR to CUDA kernels: the loop nests mapped to blocks "
      "(token, head) and threads (16-byte chunk), outlined, lowered to NVVM "
      "and serialized (format isa|bin|fatbin); follow with "
      "inkling-gpu-write-kernels{dir=...} for the runtime's bundle",
      inkling::buildLowerToNVVMPipeline);
  gpu::registerGPUPasses();
}
