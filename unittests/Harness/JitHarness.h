//===- JitHarness.h - JIT sconv kernels and feed them memrefs ---*- C++ -*-===//
//
// What the lowering's JIT tests and the fusion benchmark share: 16-byte
// aligned buffers, memref descriptors, the IR spelling of layouts and stream
// operands, compiling a module with `inkling-lower-to-cpu` and the JIT
// (inkling/ExecutionEngine/JitEngine.h), and random mixed-batch steps. No
// GoogleTest dependency.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_JITHARNESS_H
#define INKLING_UNITTESTS_HARNESS_JITHARNESS_H

#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace inkling::exec {
class JitEngine;
} // namespace inkling::exec

namespace inkling::harness {

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

template <typename T, int N>
StridedMemRefType<T, N> descriptor(T *data, std::array<int64_t, N> sizes,
                                   std::array<int64_t, N> strides) {
  StridedMemRefType<T, N> d;
  d.basePtr = data;
  d.data = data;
  d.offset = 0;
  for (int i = 0; i < N; ++i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = strides[i];
  }
  return d;
}

/// 16-byte aligned storage (the lowering's alignment contract).
template <typename T> struct AlignedBuffer {
  explicit AlignedBuffer(size_t count, T fill)
      : storage(count * sizeof(T) + 64) {
    auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = reinterpret_cast<T *>((address + 63) & ~uintptr_t(63));
    std::fill(data, data + count, fill);
    size = count;
  }
  std::vector<uint8_t> storage;
  T *data;
  size_t size;
};

using MemI8 = StridedMemRefType<int8_t, 1>;
using MemI32 = StridedMemRefType<int32_t, 1>;
using MemI32x2 = StridedMemRefType<int32_t, 2>;
using MemI64 = StridedMemRefType<int64_t, 1>;
using Mem3 = StridedMemRefType<uint16_t, 3>;
using Mem2 = StridedMemRefType<uint16_t, 2>;
using Mem1 = StridedMemRefType<uint16_t, 1>;

/// The descriptor of a stream buffer as the kernels take it: [T, H, w], or
/// [T, H*w] when `flat`, `tokenStride` elements between tokens. `keep` owns
/// the descriptor (char storage, freed as such).
inline void *streamDescriptor(uint16_t *data, int64_t tokens, int64_t heads,
                              int64_t width, int64_t tokenStride, bool flat,
                              std::vector<std::unique_ptr<char[]>> &keep) {
  if (flat) {
    auto storage = std::make_unique<char[]>(sizeof(Mem2));
    auto *d = new (storage.get()) Mem2(descriptor<uint16_t, 2>(
        data, {tokens, heads * width}, {tokenStride, 1}));
    keep.push_back(std::move(storage));
    return d;
  }
  auto storage = std::make_unique<char[]>(sizeof(Mem3));
  auto *d = new (storage.get()) Mem3(descriptor<uint16_t, 3>(
      data, {tokens, heads, width}, {tokenStride, width, 1}));
  keep.push_back(std::move(storage));
  return d;
}

//===----------------------------------------------------------------------===//
// IR spelling
//===----------------------------------------------------------------------===//

/// `#sconv.layout<...>` of `config`.
std::string layoutAttr(const LayoutConfig &config);

/// The cache type bound with a page of `pageBytes`:
/// `memref<?xHxNxDxbf16, strided<[pageBytes/2, N*D, D, 1]>>`.
std::string cacheType(const Layout &layout, int64_t pageBytes);

/// A stream operand: `[T, H, w]`, or `[T, H*w]` when `flat`; with
/// `strided`, a dynamic token stride and offset.
std::string typeOfStream(const Layout &layout, Stream stream, bool flat,
                         bool strided);

/// attn and mlp use the [T, H*w] form, k and v [T, H, w].
inline bool isFlat(Stream stream) {
  return stream == Stream::Attn || stream == Stream::Mlp;
}

/// The text of a layer's sconv ops for one layout and page size, as the
/// JIT tests and the benchmark write their modules.
class LayerText {
public:
  LayerText(const LayoutConfig &config, const Layout &layout,
            int64_t pageBytes);

  const std::string &layout() const { return layout_; }
  const std::string &cache() const { return cache_; }
  /// `memref<H*w x W x bf16>` and `memref<H*w x bf16>` of `stream`.
  std::string weightsType(Stream stream) const;
  std::string biasType(Stream stream) const;

  /// `%buffer: memref<?xi8>, %qsl: ..., %slots: memref<?xi64>`, each
  /// followed by ` {llvm.noalias}` when `noalias`.
  static std::string metadataParams(bool noalias);
  /// The `%cache = sconv.bind %buffer ...` and `%step = sconv.step ...`
  /// lines (with `status %status` when `status`, with
  /// `token_seq(%token_seq : memref<?xi32>)` when `tokenSeq`).
  std::string bindAndStep(bool status = false, bool tokenSeq = false) const;
  /// `sconv.insert %<x> into %cache[<stream>] ...` (one line).
  std::string insert(const std::string &x, Stream stream,
                     const std::string &xType) const;

  struct Conv {
    std::string x, weights, bias, out; ///< Value names (bias: empty = none).
    bool silu = false;
    bool residual = true;
  };
  /// `sconv.conv %<x>, %<w> [bias %<b>] history %cache[<stream>] ...`.
  std::string conv(const Conv &conv, Stream stream,
                   const std::string &xType) const;

private:
  Layout shape_;
  int64_t pageBytes_;
  int64_t kernel_;
  std::string layout_, cache_;
};

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

/// The `inkling-lower-to-cpu` options a JIT-ed module is lowered with
/// (emit-c-interface is always on).
struct CompileOptions {
  bool checked = false;
  sconv::FusionStrategy fusion = sconv::FusionStrategy::ConvInsert;
  bool splitStreams = true;
  /// The pipeline's `decode-runs` (its default).
  bool decodeRuns = true;
  /// The pipeline's `avx512-bf16`: as LayerProgram::compile sets it, from
  /// the host's features.
  bool avx512Bf16 = cpu::hostHasAvx512Bf16();
  /// The pipeline's `threads` (1: no OpenMP) and `min-parallel-iterations`.
  int threads = 1;
  int64_t minParallelIterations = 64;
  /// The pipeline's `streaming-stores-min-iterations` (its default).
  int64_t streamingStoresMinIterations = 4096;
  /// The pipeline's `branch-counters` (branchCounter reads them).
  bool branchCounters = false;
  /// The JIT's object cache directory ("": none); unset: $INKLING_CACHE_DIR
  /// (JitEngine.h). Not part of compileCached's key.
  std::optional<std::string> cacheDir;
};

/// The OpenMP runtime's default team size (OMP_NUM_THREADS, else the
/// cores): what `threads = 0` gives. (Also what makes the harness's users
/// load libomp, whose __kmpc_* entry points the threaded JIT code calls.)
int defaultThreadCount();

/// Parses `source`, lowers it with `inkling-lower-to-cpu` (`options`) and
/// JITs it at -O3. On failure returns null
/// and sets `error`. (One MLIRContext for the process; the engine keeps no
/// reference to it.)
std::unique_ptr<exec::JitEngine> compile(const std::string &source,
                                         const CompileOptions &options,
                                         std::string &error);

/// `compile` once per distinct (IR, options) in the process: the cache key
/// is the `inkling-lower-to-cpu` options in their textual form, then the
/// parsed module printed without locations (as KernelCompiler's key), so
/// that tests sharing a layer variant in one process compile it once. The
/// engines are never destroyed (see JitFixture.h's testCaseState). Returns
/// null and sets `error` on failure (a failure is not cached).
exec::JitEngine *compileCached(const std::string &source,
                               const CompileOptions &options,
                               std::string &error);

/// The compile cache's counts so far in this process.
struct CompileCacheStats {
  int64_t hits = 0, misses = 0;
};
CompileCacheStats compileCacheStats();

/// Parses `source`, runs the `sconv-fuse` passes of `strategy` and counts
/// the ops of the result by name (empty, with `error` set, on failure).
std::map<std::string, int> countOpsAfterFusion(const std::string &source,
                                               sconv::FusionStrategy strategy,
                                               std::string &error);

/// The address of `_mlir_ciface_<name>`, or null.
void *lookupFunction(exec::JitEngine &engine, const std::string &name);

/// The counter of `branch` in an engine compiled with `branchCounters`
/// (inkling/Target/CPU/BranchCounters.h), or null when the module has none
/// (no nest has that branch, or no counters).
int64_t *branchCounter(exec::JitEngine &engine, cpu::Branch branch);

/// Initializes the native target (once).
void initializeNativeTarget();

/// The one MLIRContext of the process, every dialect of inkling-opt loaded;
/// never destroyed, since the engines' code outlives any test or benchmark.
mlir::MLIRContext *harnessContext();

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

uint16_t randomBf16(std::mt19937_64 &rng, float scale);

struct Step {
  reference::StepMetadata meta;
  int64_t numBlocks = 0;
  /// Positions whose rows hold history (b, q): [max(0, nc - (W-1)), nc).
  std::vector<std::pair<int64_t, int64_t>> history;
};

/// A mixed batch: each sequence is a prefill from 0, a chunked prefill, a
/// decode or a short speculative chunk; blocks are distinct, from a shuffled
/// pool that keeps block 0 as the null block. Slots store only the last
/// W-1 positions (the runtime's window), plus a few random -1. Prefill
/// chunks have 2..maxChunk tokens (kLongChunk: sequences that span many of the
/// CPU conv's token runs).
Step randomStep(std::mt19937_64 &rng, const Layout &layout, int maxChunk = 9);
constexpr int kLongChunk = 150;

/// A decode batch of `sequences` sequences of one token (a few of two, as
/// drafts), each at a random position (most of them past W - 1), blocks and
/// slots as randomStep's.
Step randomDecodeStep(std::mt19937_64 &rng, const Layout &layout,
                      int64_t sequences);

/// The cache buffer: poisoned bytes, then random history rows [0, raw).
AlignedBuffer<uint16_t> makeCache(std::mt19937_64 &rng, const Layout &layout,
                                  const Step &step, int64_t blockStride,
                                  uint16_t poison);

/// The step's buffers and the cache as descriptors.
struct Call {
  MemI8 cache;
  MemI32 qsl, nc;
  MemI32x2 bt;
  MemI64 slots;
};
Call makeCall(uint16_t *cache, int64_t cacheBytes,
              reference::StepMetadata &meta);

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_JITHARNESS_H
