//===- KernelManifest.h - The GPU kernel bundle's manifest ------*- C++ -*-===//
//
// `inkling-gpu-write-kernels` writes a directory of kernels (PTX, cubin or
// fatbin) and `manifest.json`, which says for every kernel its file and entry
// symbol, the sconv op it implements, its argument ABI and its launch grid
// as a function of the token count T; and for every host function the
// kernels it launches, in order, with the host arguments each takes. This is
// the runtime's reader (no LLVM here: nlohmann-json, strict about duplicate
// keys and types, kept out of this header) and the ABI packing, both testable
// without a GPU. docs/gpu.md has the format.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_KERNELMANIFEST_H
#define INKLING_RUNTIME_KERNELMANIFEST_H

#include "inkling/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inkling {

//===----------------------------------------------------------------------===//
// The manifest
//===----------------------------------------------------------------------===//

/// One kernel argument: a memref, passed as its expanded descriptor
/// (allocated ptr, aligned ptr, offset, sizes[rank], strides[rank]).
struct KernelArgSpec {
  std::string type;    ///< The MLIR type, e.g. "memref<?x8x128xbf16>".
  std::string element; ///< "bf16", "i32", "i64", "i8" ...
  int64_t elementBytes = 0;
  /// The base (aligned pointer) alignment the kernel assumes: 16 where it
  /// issues 16-byte vector accesses, else the element size. The launcher
  /// checks it (a misaligned vector access faults on the device).
  int64_t align = 0;
  int64_t rank = 0;
  std::vector<int64_t> shape;   ///< -1: dynamic (the caller gives it).
  std::vector<int64_t> strides; ///< -1: dynamic.
  int64_t offset = 0;           ///< -1: dynamic.
  bool identity = false; ///< Row-major contiguous: dynamic strides follow.
  int64_t params = 0;    ///< 3 + 2 * rank.
};

/// A grid dimension: a constant, or the token count T.
struct GridDim {
  bool tokens = false;
  int64_t value = 1;
};

struct KernelSpec {
  std::string name;   ///< Unique in the bundle.
  std::string entry;  ///< The kernel symbol inside its file.
  std::string file;   ///< Relative to the bundle directory.
  std::string format; ///< "ptx", "cubin" or "fatbin".
  /// The kernel's host form (inkling/Runtime/EmulationAbi.h), relative to
  /// the bundle directory; empty when the bundle has none. Only an
  /// emulating driver (the fake one) reads it.
  std::string hostForm;
  std::string host; ///< The host function it was outlined from.
  std::string op;   ///< e.g. "sconv.conv", "sconv.fused_conv".
  std::vector<std::string> streams;
  std::string layout;     ///< e.g. "#sconv.layout<kv_heads = 8, ...>".
  std::string attributes; ///< The op's other attributes, as MLIR prints them.
  std::string key;        ///< Dedupe key (op, streams, layout, ABI).
  std::array<GridDim, 3> grid;
  std::array<int64_t, 3> block = {1, 1, 1};
  std::vector<KernelArgSpec> args;
  std::vector<std::string> params; ///< Lowered parameter types ("ptr", "i64").
  int64_t tokensArg = -1; ///< Kernel argument whose dim 0 is T (-1: none).

  /// The grid for `tokens` tokens.
  std::array<int64_t, 3> gridFor(int64_t tokens) const;
};

struct LaunchSpec {
  std::string kernel; ///< A KernelSpec name.
  /// What each kernel argument is bound to: host argument i >= 0, or the
  /// host's scratch buffer -1 - i.
  std::vector<int64_t> hostArgs;
};

/// A buffer the host function allocates itself (the output of an unfused op
/// that a later kernel reads): the launcher allocates it on the device.
/// Row-major; dim 0 of `shape` is -1 when it is the size of dim `sizeDim`
/// of host argument `sizeHostArg` (the token count), the rest static.
struct ScratchSpec {
  std::string type; ///< The MLIR type, e.g. "memref<?x2x8xbf16>".
  std::string element;
  int64_t elementBytes = 0;
  std::vector<int64_t> shape;
  int64_t sizeHostArg = -1;
  int64_t sizeDim = 0;
};

struct HostSpec {
  std::string name;
  std::vector<LaunchSpec> launches; ///< In program order.
  std::vector<ScratchSpec> scratch;
};

struct KernelManifest {
  int64_t version = 0;
  std::string chip;     ///< e.g. "sm_90".
  std::string features; ///< e.g. "+ptx80".
  std::string format;   ///< "ptx", "cubin" or "fatbin".
  std::vector<KernelSpec> kernels;
  std::vector<HostSpec> hosts;

  const KernelSpec *findKernel(std::string_view name) const;
  const HostSpec *findHost(std::string_view name) const;

  /// Parses and validates a manifest: every field present with its type,
  /// descriptor sizes consistent with `params`, grid and block sizes
  /// positive (T only in the grid, with a tokens argument), file names
  /// without directories, launches naming existing kernels with one host
  /// argument or scratch buffer per kernel argument (a scratch buffer of
  /// the kernel argument's type).
  static StatusOr<KernelManifest> parse(std::string_view json);
  /// Reads `<directory>/manifest.json`.
  static StatusOr<KernelManifest> load(const std::string &directory);
};

//===----------------------------------------------------------------------===//
// The argument ABI
//===----------------------------------------------------------------------===//

/// A buffer passed to a kernel: its device address and the sizes of every
/// dimension (static ones must match the type). `strides` may be left empty:
/// static strides come from the type, dynamic ones of an identity layout are
/// row-major; a dynamic stride of another layout must be given.
struct MemRefArg {
  uint64_t address = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

/// The kernel's parameters as 8-byte slots (pointers and i64; an i32
/// parameter uses the low 4 bytes), in the order of `kernel.params`.
StatusOr<std::vector<uint64_t>>
packKernelParams(const KernelSpec &kernel, const std::vector<MemRefArg> &args);

/// The sizes of scratch buffer `scratch` for a call with `hostArgs` (dim 0
/// from its host argument); an error when that argument is missing or too
/// small in rank, or the buffer's bytes overflow.
StatusOr<std::vector<int64_t>>
scratchSizes(const ScratchSpec &scratch,
             const std::vector<MemRefArg> &hostArgs);

/// T for a launch of `kernel` with `args` (dim 0 of the tokens argument), or
/// 0 when the grid does not depend on it.
StatusOr<int64_t> tokenCount(const KernelSpec &kernel,
                             const std::vector<MemRefArg> &args);

} // namespace inkling

#endif // INKLING_RUNTIME_KERNELMANIFEST_H
