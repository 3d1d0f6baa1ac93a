//===- Passes.h - GPU kernel passes of the NVVM pipeline --------*- C++ -*-===//
//
// The passes `inkling-lower-to-nvvm` adds around upstream MLIR's GPU passes,
// and `inkling-write-kernels`, which writes the serialized kernels and the
// manifest the runtime's CUDA launcher reads (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_GPU_PASSES_H
#define INKLING_TARGET_GPU_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace inkling::gpu {

/// Name of the top-level module attribute that carries, per outlined kernel,
/// what the manifest needs and serialization would lose (an array of
/// dictionaries, one per kernel, in launch order).
constexpr const char *kKernelsAttrName = "inkling.kernels";
/// Key of the `FusedLoc` metadata dictionary that names the sconv op a loop
/// nest (and later the kernel) implements.
constexpr const char *kOpInfoKey = "inkling.op";

/// `inkling-gpu-tag-ops`: records on every sconv op with a step (insert,
/// conv and the fused ops) what it implements (op name, streams, layout,
/// attributes, operand types) as `FusedLoc` metadata of its location. The
/// loop lowering builds the nest with the op's location, so the metadata
/// reaches the `gpu.launch` and the outlined kernel.
std::unique_ptr<mlir::Pass> createTagSConvOpsPass();

/// `inkling-gpu-map-nests`: sets `gpu.loop_dim_map` on the loop nests of
/// the lowering: the dimensions of an outermost `scf.parallel` go to block
/// x, y, z; those of the `scf.parallel` ops nested in it (the 16-byte chunk
/// loops) to thread x, y, z; anything deeper runs sequentially.
std::unique_ptr<mlir::Pass> createMapSConvNestsPass();

/// `inkling-gpu-sink`: moves every side-effect-free, region-free op whose
/// result a `gpu.launch` uses into the launch (constants, dims, index math,
/// and the view ops: memref.view, reinterpret_cast, collapse_shape), so that
/// the outlined kernel takes only the host function's own arguments.
std::unique_ptr<mlir::Pass> createSinkIntoLaunchPass();

/// `inkling-gpu-fma-to-llvm`: math.fma (scalar or vector) ->
/// llvm.intr.fma, so that NVPTX emits `fma.rn.f32` rather than a call to
/// libdevice's `__nv_fmaf` (same rounding: one fused multiply-add).
std::unique_ptr<mlir::Pass> createFmaToLLVMPass();

/// `inkling-gpu-record-kernels` (after `gpu-kernel-outlining`): gives each
/// outlined kernel a readable unique name (`<host>_k<i>_<op>_<streams>`) and
/// records its entry in the module's `inkling.kernels` attribute: host
/// function, op metadata, dedupe key, argument ABI (host argument index and
/// memref type of each kernel argument) and launch-grid rule.
std::unique_ptr<mlir::Pass> createRecordKernelsPass();

/// `inkling-gpu-record-params` (after the kernels are in the LLVM dialect):
/// adds the lowered kernel's parameter types (the `llvm.func` signature the
/// driver sees) to each `inkling.kernels` entry.
std::unique_ptr<mlir::Pass> createRecordKernelParamsPass();

/// `inkling-write-kernels{dir=...}`: writes every `gpu.binary` object of
/// the module to `dir` (`.ptx` for assembly, `.cubin` for bin, `.fatbin`),
/// one file per distinct kernel (kernels with the same dedupe key share one),
/// and `dir/manifest.json`.
std::unique_ptr<mlir::Pass> createWriteKernelsPass(std::string dir = "");

/// The kernel bundle of a module lowered by `inkling-lower-to-nvvm`, in
/// memory: calls `addObject(file, bytes)` once per distinct kernel, in
/// manifest order, and sets `manifest` to manifest.json's text. What
/// `inkling-write-kernels` writes, for callers that load the kernels without
/// a directory. Errors are emitted on `module`.
mlir::LogicalResult serializeKernelBundle(
    mlir::ModuleOp module, std::string &manifest,
    llvm::function_ref<void(llvm::StringRef file, llvm::StringRef bytes)>
        addObject);

/// Whether LLVM's NVPTX backend knows `chip` ("sm_80", "sm_90a", ...). The
/// backend stops the process on an unknown chip rather than failing the
/// pipeline: check a chip that comes from a user or a device first.
bool isKnownNVPTXChip(llvm::StringRef chip);

/// The PTX features for `chip` when none are given: "+ptx80" (PTX ISA 8.0,
/// what CUDA 12 accepts) up to sm_90; for newer chips "", the backend's
/// default, the first PTX ISA that supports them (an older one would stop
/// the backend).
std::string defaultPTXFeatures(llvm::StringRef chip);

/// Registers the passes above with the pass registry.
void registerGPUPasses();

/// Adds the dialects, NVVM target model and LLVM IR translations that the
/// NVVM pipeline and `gpu-module-to-binary` need to `registry`.
void registerNVVMLoweringDialects(mlir::DialectRegistry &registry);

} // namespace inkling::gpu

#endif // INKLING_TARGET_GPU_PASSES_H
