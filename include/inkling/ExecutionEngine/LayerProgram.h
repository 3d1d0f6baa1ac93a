//===- LayerProgram.h - JIT-compile and call a model's sconv layer -*- C++
//-*-===//
//
// What `inkling-run` (and any host program that wants to drive a model's
// sconv layer on the CPU) needs from MLIR, behind a header without MLIR
// types:
//
//   * load: parse an IR file, pick the entry function, and discover the role
//     of every argument by walking its sconv ops (the cache buffer of
//     `sconv.bind`, the step metadata of `sconv.step`, each conv's input,
//     weights, bias and output and each insert's input, with their stream);
//     IR the host cannot drive is rejected with one line that says why;
//   * compile: `inkling-lower-to-cpu` (fusion strategy, checked mode,
//     emit-c-interface) and MLIR's ExecutionEngine at -O3, once;
//   * invoke: call the compiled function with one memref descriptor per
//     argument;
//   * compileKernels: or lower it to the GPU's kernel bundle instead, for
//     the runtime's CUDA launcher (`inkling-lower-to-nvvm`).
//
// Replay support: `keepOnlyOp` removes every sconv op but one before
// compiling, so a single op can be run on tensors from elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_EXECUTIONENGINE_LAYERPROGRAM_H
#define INKLING_EXECUTIONENGINE_LAYERPROGRAM_H

#include "inkling/Runtime/Layout.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace inkling::exec {

/// Element types of the arguments a layer can take.
enum class ElementKind { I8, I32, I64, BF16 };
/// "i8", "i32", "i64", "bf16".
const char *elementKindName(ElementKind kind);
/// Bytes of one element.
int64_t elementBytes(ElementKind kind);

/// What an argument of the entry function is to the host.
enum class ArgRole {
  Cache,         ///< The raw byte buffer of `sconv.bind` (one per layer).
  QueryStartLoc, ///< `sconv.step` metadata, i32 [B+1].
  NumComputed,   ///< i32 [B].
  BlockTable,    ///< i32 [B, M].
  SlotMapping,   ///< i64 [>= T].
  TokenSeq,      ///< i32 [>= T], optional: the sequence of each token.
  Status,        ///< i64 [>= 5], checked mode.
  Input,         ///< A stream's input x: [T, H, w] or [T, H*w] bf16.
  Weights,       ///< A conv's weights [H*w, W] bf16.
  Bias,          ///< A conv's bias [H*w] bf16.
  Output,        ///< A conv's output, shaped like x.
};
/// "cache", "query_start_loc", ..., "input", "weights", "bias", "output".
const char *argRoleName(ArgRole role);

/// A dynamic size, stride or offset.
inline constexpr int64_t kDynamic = -1;

struct ArgInfo {
  ArgRole role = ArgRole::Input;
  /// The stream of an Input/Weights/Bias/Output argument.
  std::optional<Stream> stream;
  ElementKind element = ElementKind::BF16;
  /// Static sizes (kDynamic where dynamic), strides and offset of the memref
  /// type (identity layouts give the row-major strides).
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  /// The argument's type as written, for messages.
  std::string type;
};

/// One convolution of the layer (an `sconv.conv`, or one stream of an
/// `sconv.fused_conv`): out = conv(x, weights, bias, history).
struct ConvInfo {
  Stream stream = Stream::K;
  int x = -1, weights = -1, bias = -1, out = -1; ///< Argument indices.
  bool residual = true;
  bool silu = false;
};

/// One sconv op that reads or writes a step (replay unit).
struct OpInfo {
  std::string name;            ///< e.g. "sconv.conv".
  std::vector<Stream> streams; ///< In operand order.
  bool writesCache = false;    ///< insert, insert_packed, and_insert.
  std::vector<int> outputs;    ///< Output arguments.
  std::vector<int> arguments;  ///< Every argument the op (with its bind
                               ///< and step) reads or writes.
  std::string location;        ///< file:line:col.
};

/// The entry function's interface, discovered from its sconv ops.
struct LayerSignature {
  std::string function;
  std::string location; ///< of the function, for messages
  Layout layout;
  int64_t pageBytes = 0;   ///< `page_bytes` of the bind (the block stride).
  int64_t crossLayers = 1; ///< `layers` of the bind: pages per block stride.
  int64_t blockStride = 0; ///< Elements between blocks.
  std::vector<ArgInfo> args;
  int cache = -1, queryStartLoc = -1, numComputed = -1, blockTable = -1,
      slotMapping = -1, status = -1, tokenSeq = -1;
  /// The input argument of each stream (-1: the stream is not used).
  std::array<int, kNumStreams> input{{-1, -1, -1, -1}};
  /// Streams whose inputs are stored into the cache by some op.
  std::array<bool, kNumStreams> inserted{};
  std::vector<ConvInfo> convs;
  std::vector<OpInfo> ops;
  /// The module's `inkling.num_layers` attribute, if present.
  std::optional<int64_t> numLayers;
};

/// A memref argument: data pointer, offset, sizes and strides (elements).
struct MemRefArg {
  void *data = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct CompileOptions {
  /// Run-time checks of slot and block ids (sconv-lower-to-loops checked).
  bool checked = false;
  /// With `checked`: give the step a status buffer (a new last argument of
  /// role Status) when the IR has none, so that a bad id is reported rather
  /// than stopping the process.
  bool addStatus = true;
  /// "conv-insert", "packed-inserts" or "none"; empty: the pipeline's
  /// default.
  std::string fusion;
  /// LLVM optimization level of the JIT.
  unsigned optLevel = 3;
  /// Threads of the CPU nests (the pipeline's `threads`): 0, the OpenMP
  /// runtime's default (OMP_NUM_THREADS, else every core); 1, no OpenMP.
  int threads = 0;
  /// Steps of fewer (token, head) pairs than this run on the calling thread
  /// (the pipeline's `min-parallel-iterations`).
  int64_t minParallelIterations = 64;
};

/// The GPU target of `compileKernels` (the `inkling-lower-to-nvvm` options).
struct KernelTarget {
  /// A chip LLVM's NVPTX backend knows (checked).
  std::string chip = "sm_90";
  /// Empty: +ptx80 up to sm_90, the backend's default for newer chips.
  std::string features;
  /// "isa" (PTX, which the driver JIT-compiles for its device), "bin"
  /// (cubin, needs ptxas) or "fatbin".
  std::string format = "isa";
  /// CUDA toolkit for bin/fatbin and libdevice (empty: MLIR's lookup).
  std::string toolkit;
};

/// A kernel bundle in memory (what `inkling-gpu-write-kernels` would write):
/// manifest.json's text and the bytes of each file it names.
struct KernelFiles {
  std::string manifest;
  std::map<std::string, std::string> objects;
};

/// What a checked kernel's status words [count, kind, token, value, limit]
/// report (the kinds of sconv.step's description): "rejected N accesses
/// (first: slot V of token T, limit L)"; for a slot that is not the token's
/// own, the limit is that slot ("..., not its own slot block_table[b][p / N]
/// * N + p % N = L)").
std::string describeCheckedStatus(const int64_t status[5]);

class LayerProgram {
public:
  ~LayerProgram();

  /// Parses `path` and analyzes `entry` (empty: the only function with a
  /// body). Returns null with a one-line `error` (starting with the file
  /// name or the location) when the file cannot be read or parsed, or the
  /// function cannot be driven.
  static std::unique_ptr<LayerProgram>
  load(const std::string &path, const std::string &entry, std::string &error);
  /// The same from IR text in memory; `name` stands for the file in
  /// messages and locations.
  static std::unique_ptr<LayerProgram> fromSource(const std::string &source,
                                                  const std::string &name,
                                                  const std::string &entry,
                                                  std::string &error);

  const LayerSignature &signature() const;

  /// The threads `CompileOptions::threads = 0` gives: the OpenMP runtime's
  /// default team size.
  static int defaultThreadCount();

  /// Removes every sconv op of the function but `ops[index]` (before
  /// compile). The signature keeps every argument; the others are unused.
  bool keepOnlyOp(int64_t index, std::string &error);

  /// Rewrites the cache geometry before compile: block size N (0: the
  /// layout's) in every layout and cache type of the function, and with
  /// `layers` > 1 cross-layer pages (the bind's block stride holds `layers`
  /// pages; the host passes layer l the allocation from byte l * page on;
  /// 1: a page per block; 0: as the IR's bind says). A layer's page keeps
  /// its padding. The signature is analyzed again. Errors name the value.
  bool setCacheGeometry(int64_t blockSize, int64_t layers, std::string &error);

  /// Lowers and JIT-compiles the function (once). May add a Status argument
  /// (see CompileOptions::addStatus).
  bool compile(const CompileOptions &options, std::string &error);

  /// Lowers the function to CUDA kernels: the fusion of `options` (default:
  /// the CPU pipeline's), then `inkling-lower-to-nvvm`; `bundle` gets the
  /// kernels and manifest the runtime's `cuda::KernelBundle` loads. The
  /// manifest's host function is the signature's function with the
  /// signature's arguments (checked mode may add a Status argument, as for
  /// compile). The module itself is not lowered: compile() may still follow.
  bool compileKernels(const CompileOptions &options, const KernelTarget &target,
                      KernelFiles &bundle, std::string &error);

  /// Checks `args` against the signature, as every caller of invoke()
  /// should first: one entry per argument, of its rank, sizes >= 0 and
  /// equal to the type's static sizes, strides and offset equal to its
  /// static ones, and a data pointer 16-byte aligned for the cache and the
  /// bf16 tensors (the kernels' alignment contract: their 16-byte vector
  /// accesses assume it), element-aligned for the metadata. The error names
  /// the argument, its type and the value.
  bool checkArguments(const std::vector<MemRefArg> &args,
                      std::string &error) const;

  /// Calls the compiled function; `args` has one entry per argument of the
  /// signature, with as many sizes and strides as the argument's rank (see
  /// checkArguments).
  void invoke(const std::vector<MemRefArg> &args);

private:
  LayerProgram();
  static std::unique_ptr<LayerProgram>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
             const std::string &path, const std::string &entry,
             std::string &error);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_LAYERPROGRAM_H
