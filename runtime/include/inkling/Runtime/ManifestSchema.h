//===- ManifestSchema.h - The kernel manifest's keys ------------*- C++ -*-===//
//
// The one spelling of every key of `manifest.json` and of the compiler's
// `inkling.kernels` module attribute it is written from: the recording
// passes and `inkling-gpu-write-kernels` (lib/Target/GPU) write these keys, the
// runtime's reader (KernelManifest.cpp) reads them. No MLIR, LLVM or JSON
// here, so both sides can include it. docs/gpu.md describes the format.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_MANIFESTSCHEMA_H
#define INKLING_RUNTIME_MANIFESTSCHEMA_H

#include <cstdint>

namespace inkling::manifest {

/// The format version the writer writes and the reader reads.
inline constexpr int64_t kFormatVersion = 1;
/// The `generator` the writer records.
inline constexpr char kGeneratorName[] = "inkling-gpu-write-kernels";
/// A grid entry that stands for the token count T.
inline constexpr char kTokensGrid[] = "T";
/// The kernel file formats (`format`).
inline constexpr char kPtx[] = "ptx";
inline constexpr char kCubin[] = "cubin";
inline constexpr char kFatbin[] = "fatbin";
/// Lowered parameter types (`params` of a kernel).
inline constexpr char kPtrParam[] = "ptr";
inline constexpr char kI64Param[] = "i64";

// The document.
inline constexpr char kVersion[] = "version";
inline constexpr char kGenerator[] = "generator";
inline constexpr char kTarget[] = "target";
inline constexpr char kKernels[] = "kernels";
inline constexpr char kHosts[] = "hosts";

// `target`.
inline constexpr char kChip[] = "chip";
inline constexpr char kFeatures[] = "features";
inline constexpr char kFormat[] = "format"; ///< Also a kernel's.
inline constexpr char kOptLevel[] = "opt_level";

// A kernel (`kernels[i]`, and an entry of `inkling.kernels`).
inline constexpr char kName[] = "name"; ///< Also a host's.
inline constexpr char kEntry[] = "entry";
inline constexpr char kFile[] = "file";
inline constexpr char kHost[] = "host";
inline constexpr char kOp[] = "op";
inline constexpr char kStreams[] = "streams";
inline constexpr char kLayout[] = "layout";
inline constexpr char kAttributes[] = "attributes";
inline constexpr char kKey[] = "key";
inline constexpr char kGrid[] = "grid";
inline constexpr char kBlock[] = "block";
inline constexpr char kArgs[] = "args";
inline constexpr char kParams[] = "params"; ///< Also an argument's (a count).
inline constexpr char kTokensArg[] = "tokens_arg";
/// Also a launch's: host argument i >= 0, or scratch buffer -1 - i.
inline constexpr char kHostArgs[] = "host_args";
/// A kernel entry's and a host's device scratch buffers (`scratch[i]`):
/// buffers the host function allocates itself (an unfused op's output that
/// the next kernel reads), which the launcher allocates on the device.
inline constexpr char kScratch[] = "scratch";
/// The file of the kernel's host form (EmulationAbi.h): what the fake CUDA
/// driver executes. Optional; real drivers never read it.
inline constexpr char kHostForm[] = "host_form";
// PTX statistics the writer adds (the tests read them; the launcher not).
inline constexpr char kPtxGlobalV4Loads[] = "ptx_global_v4_loads";
inline constexpr char kPtxGlobalV4Stores[] = "ptx_global_v4_stores";
inline constexpr char kPtxGlobalB16Accesses[] = "ptx_global_b16_accesses";

// A kernel argument (`args[i]`).
inline constexpr char kType[] = "type";
inline constexpr char kElement[] = "element";
inline constexpr char kElementBytes[] = "element_bytes";
inline constexpr char kAlign[] = "align";
inline constexpr char kRank[] = "rank";
inline constexpr char kShape[] = "shape";
inline constexpr char kStrides[] = "strides";
inline constexpr char kOffset[] = "offset";
inline constexpr char kIdentity[] = "identity";

// A scratch buffer (`scratch[i]`; also `type`, `element`, `element_bytes`,
// `shape`): row-major, dim 0 (-1 in `shape`: dynamic) the size of dim
// `size_dim` of host argument `size_host_arg`.
inline constexpr char kIndex[] = "index";
inline constexpr char kSizeHostArg[] = "size_host_arg";
inline constexpr char kSizeDim[] = "size_dim";

// A host function (`hosts[i]`) and its launches.
inline constexpr char kLaunches[] = "launches";
inline constexpr char kKernel[] = "kernel";

} // namespace inkling::manifest

#endif // INKLING_RUNTIME_MANIFESTSCHEMA_H
