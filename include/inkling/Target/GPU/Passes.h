//===- Passes.h - GPU kernel passes of the NVVM pipeline --------*- C++ -*-===//
//
// The passes `inkling-lower-to-nvvm` adds around upstream MLIR's GPU passes,
// and `inkling-gpu-write-kernels`, which writes the serialized kernels and the
// manifest the runtime's CUDA launcher reads (docs/gpu.md); the in-memory
// bundle writer; the NVPTX chip checks.
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
class NamedAttrList;
namespace LLVM {
class LLVMFuncOp;
} // namespace LLVM
} // namespace mlir

namespace inkling {
class LoopStrategy;
} // namespace inkling

namespace inkling::gpu {

/// The GPU's forms of the shared loop nests (RowThreads.cpp): the fused
/// epilogues' rows across a block's threads.
std::shared_ptr<const LoopStrategy> createGPULoopStrategy();

/// Name of the top-level module attribute that carries, per outlined kernel,
/// what the manifest needs and serialization would lose (an array of
/// dictionaries, one per kernel, in launch order).
constexpr const char *kKernelsAttrName = "inkling.kernels";
/// Key of the `FusedLoc` metadata dictionary that names the sconv op a loop
/// nest (and later the kernel) implements.
constexpr const char *kOpInfoKey = "inkling.op";

// The passes (declared in Passes.td, where each has its description):
// inkling-gpu-check-target, inkling-gpu-tag-ops, inkling-gpu-sink,
// inkling-gpu-workgroup-attributions,
// inkling-gpu-fma-to-llvm, inkling-gpu-record-kernels,
// inkling-gpu-record-params and inkling-gpu-write-kernels{dir=...}; each has a
// `create<Name>Pass()` (and `create<Name>Pass(<Name>PassOptions)` where it
// takes options).
#define GEN_PASS_DECL
#include "inkling/Target/GPU/Passes.h.inc"

/// The module's `inkling.kernels` records, checked: an array of
/// dictionaries holding every key the manifest needs, of its type.
/// Otherwise an error on `module` names the entry, the argument and the key.
mlir::FailureOr<mlir::ArrayAttr> getKernelRecords(mlir::ModuleOp module);

/// After the NVVM lowering: calls `update` with each checked record, its
/// kernel's `llvm.func` (an error if a kernel has none) and the record's
/// attributes to change, then stores the changed records. A module without
/// records (no kernel) is left as it is.
mlir::LogicalResult updateKernelRecords(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(mlir::DictionaryAttr entry,
                                           mlir::LLVM::LLVMFuncOp kernel,
                                           mlir::NamedAttrList &update)>
        update);

/// The kernel bundle of a module lowered by `inkling-lower-to-nvvm`, in
/// memory: calls `addObject(file, bytes)` once per distinct kernel, in
/// manifest order, and sets `manifest` to manifest.json's text. What
/// `inkling-gpu-write-kernels` writes, for callers that load the kernels
/// without a directory. Errors are emitted on `module`.
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

#define GEN_PASS_REGISTRATION
#include "inkling/Target/GPU/Passes.h.inc"

/// Adds the dialects, NVVM target model and LLVM IR translations that the
/// NVVM pipeline and `gpu-module-to-binary` need to `registry`.
void registerNVVMLoweringDialects(mlir::DialectRegistry &registry);

} // namespace inkling::gpu

#endif // INKLING_TARGET_GPU_PASSES_H
