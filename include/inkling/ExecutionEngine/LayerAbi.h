//===- LayerAbi.h - The layer function's ABI, in one place ------*- C++ -*-===//
//
// What a host must pass a compiled layer function, and the one check of it
// (docs/Design.md section 8, "the layer ABI"): the signature (each
// argument's role, stream, element type, static sizes, strides and offset,
// alignment, written or read), the shape each argument has in a step, and
//
//   * validateArguments: the argument validator (count, rank, sizes and
//     strides against the type and against each other, 2^40 bounds, the
//     alignment contract, no two buffers that overlap where one is
//     written), run by every path that calls a layer (the C/Python call,
//     inkling-run's serving executors, --replay);
//   * validateStepMetadata: the metadata validator (docs/Design.md section
//     3's invariants that keep every access in bounds), for metadata the
//     host can read.
//
// No MLIR types: the C API, the tools and the tests include it. Errors are
// the runtime's Status (a code and a message naming the argument and the
// value): the C API returns the code.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_EXECUTIONENGINE_LAYERABI_H
#define INKLING_EXECUTIONENGINE_LAYERABI_H

#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inkling::exec {

/// Words of a checked kernel's status buffer [count, kind, token, value,
/// limit] (docs/bad-inputs.md).
inline constexpr int64_t kStatusWords = 5;

/// Sizes and strides beyond this (elements) are refused: no buffer is that
/// large, and products of two stay within int64.
inline constexpr int64_t kMaxExtent = int64_t(1) << 40;

/// The most CPU threads a layer's nests may use (`threads` of the C API,
/// Python, `inkling-run --threads`, CompileOptions): beyond it libomp may
/// fail to create them and abort the process.
inline constexpr int64_t kMaxThreads = 1024;

/// `threads` in [0, kMaxThreads] (0: every core), else an error naming it.
Status checkThreadCount(int64_t threads);

struct CallShape;

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
  // The conv's neighbours in the model (docs/Design.md section 4,
  // "Epilogues"; derived from sconv.rms_norm, sconv.kv_write and
  // sconv.add_rms_norm, or the fused ops that hold them).
  KvCache,         ///< The attention layer's paged KV cache of stream k or
                   ///< v: NHD [num_blocks, block_size, H, w] bf16 with a
                   ///< block stride (written).
  AttnSlotMapping, ///< i64 [>= T]: each token's attention slot (-1: not
                   ///< stored).
  NormWeight,      ///< An RMSNorm's weight: [w] (a head row, k_norm) or
                   ///< [H*w] (a hidden row).
  Residual,        ///< The residual stream a stream's output is added to,
                   ///< shaped like x.
  Sum,             ///< h = residual + y, shaped like x (written).
  Normed,          ///< The RMSNorm of h, shaped like x (written).
};
/// "cache", "query_start_loc", ..., "input", "weights", "bias", "output",
/// "kv_cache", "attn_slot_mapping", "norm_weight", "residual", "sum",
/// "normed".
const char *argRoleName(ArgRole role);

/// A dynamic size, stride or offset.
inline constexpr int64_t kDynamic = -1;

struct ArgInfo {
  ArgRole role = ArgRole::Input;
  /// The stream of a stream argument (Input, Weights, Bias, Output,
  /// KvCache, NormWeight, Residual, Sum, Normed).
  std::optional<Stream> stream;
  /// A NormWeight of a hidden row ([H*w]; else a head row [w]).
  bool hiddenRow = false;
  ElementKind element = ElementKind::BF16;
  /// Static sizes (kDynamic where dynamic), strides and offset of the memref
  /// type (identity layouts give the row-major strides).
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  /// The argument's type as written, for messages.
  std::string type;
  /// Bytes the data pointer must be a multiple of: 16 for the cache and
  /// the bf16 tensors (the kernels' 16-byte vector accesses assume it), the
  /// element size for the metadata (scalar accesses).
  int64_t alignment() const;
  /// Whether the layer writes it (cache, outputs, status, KV caches, sums,
  /// normed rows).
  bool written() const;
  /// A per-token stream tensor [T, H, w] or [T, H*w] (input, output,
  /// residual, sum, normed).
  bool perTokenStream() const;
  /// Written per-token rows the host reads back after a call (output, sum,
  /// normed).
  bool isOutput() const;
  /// Read-only parameters that stay where they are between calls
  /// (weights, bias, norm weights).
  bool isParameter() const;
};

/// One convolution of the layer (an `sconv.conv`, or one stream of an
/// `sconv.fused_conv`): out = conv(x, weights, bias, history).
struct ConvInfo {
  Stream stream = Stream::K;
  int x = -1, weights = -1, bias = -1, out = -1; ///< Argument indices.
  bool residual = true;
  bool silu = false;
};

/// A conv's epilogue: its rows (optionally through a head-row RMSNorm)
/// stored into an attention KV cache, or the residual add and the
/// hidden-row RMSNorm. The conv's output may be a buffer of the function
/// (ConvInfo::out -1): then the epilogue's outputs are all the host sees.
struct EpilogueInfo {
  enum class Kind { KvWrite, AddNorm };
  Kind kind = Kind::KvWrite;
  Stream stream = Stream::K;
  int conv = -1;       ///< Index into LayerSignature::convs.
  int normWeight = -1; ///< KvWrite: the k_norm weight, or -1 (not normed).
  float epsilon = 0;
  int kvCache = -1;                      ///< KvWrite: the KV cache argument.
  int residual = -1, sum = -1, out = -1; ///< AddNorm: its arguments; the
                                         ///< residual may be another
                                         ///< epilogue's sum (h1).
};

/// One sconv op that reads or writes a step (replay unit).
struct OpInfo {
  std::string name;            ///< e.g. "sconv.conv".
  std::vector<Stream> streams; ///< In operand order.
  bool writesCache = false;    ///< insert, insert_packed, and_insert.
  std::vector<int> outputs;    ///< Output arguments.
  /// Indices into LayerSignature::epilogues: the epilogue ops that consume
  /// this conv's rows run with it (a replay keeps them).
  std::vector<int> epilogues;
  std::vector<int> arguments; ///< Every argument the op (with its bind
                              ///< and step) reads or writes.
  std::string location;       ///< file:line:col.
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
  /// The attention slot mapping (-1: no KV write) and the KV caches' block
  /// size (their type's static dim 1).
  int attnSlotMapping = -1;
  int64_t attnBlockSize = 0;
  std::vector<EpilogueInfo> epilogues;
  /// The input argument of each stream (-1: the stream is not used).
  std::array<int, kNumStreams> input{{-1, -1, -1, -1}};
  /// Streams whose inputs are stored into the cache by some op.
  std::array<bool, kNumStreams> inserted{};
  std::vector<ConvInfo> convs;
  std::vector<OpInfo> ops;
  /// The module's `inkling.num_layers` attribute, if present.
  std::optional<int64_t> numLayers;

  /// "cache", "block_table", "input_k", "weights_v": the argument's role
  /// and stream, the name the C API, Python and messages use.
  std::string argName(size_t i) const;
  /// "argument 7 (input_attn)": how messages name argument i.
  std::string describeArg(size_t i) const;
  /// The sizes argument i has in a step of shape `step` (a stream tensor of
  /// rank 3 is [T, H, w], of rank 2 [T, H*w]; weights [H*w, W]; bias
  /// [H*w]; metadata [B+1], [B], [B, M], [T]; status [kStatusWords]; the
  /// cache its bytes, `step.cacheBytes`; a KV cache [kvBlocks,
  /// attnBlockSize, H, w]; the attention slots [T]; a norm weight [w] or
  /// [H*w]; residual, sum and normed rows like a stream tensor).
  std::vector<int64_t> expectedSizes(size_t i, const CallShape &step) const;
  /// Row-major strides for `sizes`, with argument i's static strides where
  /// its type has them (a stream tensor's token stride may be larger).
  std::vector<int64_t> expectedStrides(size_t i,
                                       const std::vector<int64_t> &sizes) const;
};

/// A memref argument: data pointer (host or device), offset, sizes and
/// strides (elements).
struct MemRefArg {
  void *data = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

/// A step's dimensions, as the arguments of one call give them.
struct CallShape {
  int64_t tokens = 0;     ///< T: dim 0 of the stream tensors (padded).
  int64_t rows = 0;       ///< B: sequences (query_start_loc has B + 1).
  int64_t cols = 0;       ///< M: logical blocks per block-table row.
  int64_t cacheBytes = 0; ///< Bytes of the cache argument.
  int64_t numBlocks = 0;  ///< Blocks of the cache (whole pages).
  int64_t kvBlocks = 0;   ///< Blocks of the attention KV caches (dim 0).
};

/// What a checked kernel's status words [count, kind, token, value, limit]
/// report (the kinds of sconv.step's description): "rejected N accesses
/// (first: slot V of token T, limit L)"; for a slot that is not the token's
/// own, the limit is that slot ("..., not its own slot block_table[b][p / N]
/// * N + p % N = L)").
std::string describeCheckedStatus(const int64_t status[5]);

/// Checks a call's arguments against `sig` (one entry per argument of the
/// signature, a status buffer included): rank; sizes >= 0 and <= 2^40,
/// equal to the type's static sizes and to the step's shape (T, B, H, w, W
/// agree between arguments, the KV caches' num_blocks between them; the
/// attention slots >= T); strides equal to the type's static ones,
/// dynamic ones in [1, 2^40] (the strides of size-1 dims and of empty
/// arrays are never used: any value); the offset equal to a static one;
/// a non-null data pointer aligned to `ArgInfo::alignment()`; and no two
/// arguments whose byte ranges overlap where either is written (an output
/// that is an input, two outputs that are one buffer, an input inside the
/// cache, a residual that is its sum's buffer, one buffer for the K and V
/// caches; an argument the IR both writes and reads, the MLP path's h1, is
/// one argument, not an overlap). `declared`: how many of `args` the caller
/// passed (the rest the callee added, e.g. a status buffer), for the count
/// message; -1: all. Returns the step's shape. Errors name the argument and the
/// value.
StatusOr<CallShape> validateArguments(const LayerSignature &sig,
                                      const std::vector<MemRefArg> &args,
                                      int64_t declared = -1);

/// Checks host-resident step metadata of a call that validateArguments
/// accepted (docs/Design.md section 3): query_start_loc starts at 0 and is
/// non-decreasing up to T; num_computed >= 0; every block id a history read
/// of a sequence with tokens reaches is a block of the cache and within its
/// row; every slot -1 or a slot of the cache; no slot stored by two real
/// tokens; a real token's token_seq entry is its sequence; every attention
/// slot -1 or a slot of the KV caches (< kvBlocks * attnBlockSize; the
/// kernels skip any other, as sconv.kv_write defines, but a host that
/// passes one has a bug), none stored by two real tokens.
Status validateStepMetadata(const LayerSignature &sig,
                            const std::vector<MemRefArg> &args,
                            const CallShape &step);

/// Both, for a call whose buffers (metadata included) the host can read:
/// what the CPU call, inkling-run's executors and --replay run.
Status validateHostCall(const LayerSignature &sig,
                        const std::vector<MemRefArg> &args,
                        int64_t declared = -1);

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_LAYERABI_H
