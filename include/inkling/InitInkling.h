//===- InitInkling.h - Register Inkling in a host compiler -------*- C++
//-*-===//
//
// What an ML compiler that links Inkling calls once: the sconv dialect and
// the dialects its lowerings produce, the sconv/conversion/GPU passes and the
// named pipelines (`sconv-fuse`, `inkling-lower-to-cpu`,
// `inkling-lower-to-nvvm`). Typed pipeline construction is in
// `inkling/Pipelines/Pipelines.h`; compiling a layer to an in-memory kernel
// bundle in `inkling/KernelBundle.h`. Never pulls in mlir/InitAll*.h.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_INITINKLING_H
#define INKLING_INITINKLING_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace inkling {

/// The Inkling version of the libraries ("0.1.0").
const char *getVersion();
/// The MLIR release the libraries were built against ("22.1.8").
const char *getMLIRVersion();

/// Adds to `registry`: the sconv dialect; the dialects sconv IR uses and
/// its lowerings produce (arith, func, memref, scf, vector, cf, math, llvm,
/// gpu, nvvm, index, ub) with their ConvertToLLVM interfaces; the NVVM target
/// model; and the LLVM IR translations of the builtin, llvm, gpu and nvvm
/// dialects (for `gpu-module-to-binary` and MLIR's ExecutionEngine).
void registerAllDialects(mlir::DialectRegistry &registry);

/// `registerAllDialects` on the context's registry (dialects load lazily).
void registerAllDialects(mlir::MLIRContext &context);

/// Registers every Inkling pass and pipeline with MLIR's global registries,
/// so that textual pipelines (`PassManager` parsing, `mlir-opt`-style tools,
/// the C API) can name them. Safe to call more than once and from several
/// threads.
void registerAllPasses();

} // namespace inkling

#endif // INKLING_INITINKLING_H
