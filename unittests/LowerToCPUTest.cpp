//===- LowerToCPUTest.cpp - JIT the CPU lowering against the reference ----===//
//
// Builds sconv IR for a layout, lowers it with `inkling-lower-to-cpu`, JITs
// it with MLIR's ExecutionEngine (once per layout and test suite) and runs it
// on random steps (mixed batches of prefills from 0, chunked prefills,
// decodes and short speculative chunks), comparing every output and the whole
// cache buffer bit for bit with the independent reference
// (unittests/Reference). Outputs and every cache byte are poisoned
// (0xFFFF, a NaN) before each run, so the comparison of the whole buffer also
// checks that the padding [raw, D), the page padding and every slot the step
// does not store keep their poison.
//
// SiLU alone gets a tolerance of 1 bf16 ulp: exp comes from libm here and
// from the GPU's own exp elsewhere (DESIGN section 4). Everything else is
// compared exactly.
//
//===----------------------------------------------------------------------===//

#include "Reference/Reference.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Runtime/Layout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>

using namespace inkling;
using namespace inkling::reference;

namespace {

constexpr uint16_t kPoison = 0xFFFF;

//===----------------------------------------------------------------------===//
// Memref descriptors
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
      : storage(count * sizeof(T) + 16) {
    auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = reinterpret_cast<T *>((address + 15) & ~uintptr_t(15));
    std::fill(data, data + count, fill);
    size = count;
  }
  std::vector<uint8_t> storage;
  T *data;
  size_t size;
};

//===----------------------------------------------------------------------===//
// A layout under test and its kernels
//===----------------------------------------------------------------------===//

struct ConvVariant {
  const char *name;
  bool residual, silu, bias;
};
constexpr ConvVariant kVariants[] = {
    {"plain", true, false, false},
    {"bias", true, false, true},
    {"silu", false, true, true},
};

struct LayoutCase {
  const char *name;
  LayoutConfig config;
  int64_t pagePaddingBytes; ///< Added to the layout's page (a padded page).
  /// Stream inputs and outputs live in rows of a wider buffer (token stride
  /// larger than the row, dynamic in the IR).
  bool stridedStreams;
  int seeds;
};

void PrintTo(const LayoutCase &lc, std::ostream *os) { *os << lc.name; }

std::string typeOfStream(const Layout &layout, Stream stream, bool flat,
                         bool strided) {
  int64_t h = layout.headsPerRank, w = layout.range(stream).width;
  std::ostringstream os;
  if (flat)
    os << "memref<?x" << h * w << "xbf16"
       << (strided ? ", strided<[?, 1], offset: ?>" : "") << ">";
  else
    os << "memref<?x" << h << "x" << w << "xbf16"
       << (strided ? ", strided<[?, " + std::to_string(w) + ", 1], offset: ?>"
                   : "")
       << ">";
  return os.str();
}

/// attn and mlp use the [T, H*w] form, k and v [T, H, w].
bool isFlat(Stream stream) {
  return stream == Stream::Attn || stream == Stream::Mlp;
}

std::string layoutAttr(const LayoutConfig &c) {
  std::ostringstream os;
  os << "#sconv.layout<kv_heads = " << c.kvHeads << ", head_dim = " << c.headDim
     << ", hidden = " << c.hidden << ", kernel = " << c.kernel
     << ", tp = " << c.tp << ">";
  return os.str();
}

/// The module: `insert_all` (the four inserts), `conv_<stream>_<variant>`,
/// and, with a status buffer, `checked_insert_k` and `checked_conv_k`.
std::string buildModule(const LayoutCase &lc, const Layout &layout,
                        int64_t pageBytes, bool checked) {
  std::ostringstream os;
  std::string l = layoutAttr(lc.config);
  int64_t h = layout.headsPerRank, n = layout.blockSize, d = layout.headSize;
  std::string cacheType =
      "memref<?x" + std::to_string(h) + "x" + std::to_string(n) + "x" +
      std::to_string(d) + "xbf16, strided<[" + std::to_string(pageBytes / 2) +
      ", " + std::to_string(n * d) + ", " + std::to_string(d) + ", 1]>>";
  std::string meta = "%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: "
                     "memref<?xi32>, %bt: memref<?x?xi32>, %slots: "
                     "memref<?xi64>";
  auto prologue = [&](bool status) {
    os << "  %cache = sconv.bind %buffer layout " << l << " page_bytes "
       << pageBytes << " : memref<?xi8> -> " << cacheType << "\n";
    os << "  %step = sconv.step query_start_loc %qsl num_computed %nc "
          "block_table %bt slot_mapping %slots"
       << (status ? " status %status" : "")
       << " : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>"
       << (status ? ", memref<?xi64>" : "") << "\n";
  };
  os << "module {\n";
  if (!checked) {
    os << "func.func @insert_all(" << meta;
    for (Stream s : kAllStreams)
      os << ", %x_" << streamName(s) << ": "
         << typeOfStream(layout, s, isFlat(s), lc.stridedStreams);
    os << ") {\n";
    prologue(false);
    for (Stream s : kAllStreams)
      os << "  sconv.insert %x_" << streamName(s) << " into %cache["
         << streamName(s) << "] layout " << l << " step %step : "
         << typeOfStream(layout, s, isFlat(s), lc.stridedStreams) << ", "
         << cacheType << "\n";
    os << "  return\n}\n";
    for (Stream s : kAllStreams) {
      int64_t channels = h * layout.range(s).width;
      std::string xType = typeOfStream(layout, s, isFlat(s), lc.stridedStreams);
      std::string wType = "memref<" + std::to_string(channels) + "x" +
                          std::to_string(lc.config.kernel) + "xbf16>";
      std::string bType = "memref<" + std::to_string(channels) + "xbf16>";
      for (const ConvVariant &v : kVariants) {
        os << "func.func @conv_" << streamName(s) << "_" << v.name << "("
           << meta << ", %x: " << xType << ", %w: " << wType
           << ", %bias: " << bType << ", %y: " << xType << ") {\n";
        prologue(false);
        os << "  sconv.conv %x, %w" << (v.bias ? " bias %bias" : "")
           << " history %cache[" << streamName(s) << "] layout " << l
           << " step %step into %y" << (v.silu ? " activation silu" : "")
           << (v.residual ? "" : " {residual = false}") << " : " << xType
           << ", " << wType << ", " << cacheType << (v.bias ? ", " + bType : "")
           << " -> " << xType << "\n";
        os << "  return\n}\n";
      }
    }
  } else {
    Stream s = Stream::K;
    int64_t channels = h * layout.range(s).width;
    std::string xType = typeOfStream(layout, s, false, lc.stridedStreams);
    std::string wType = "memref<" + std::to_string(channels) + "x" +
                        std::to_string(lc.config.kernel) + "xbf16>";
    os << "func.func @checked_insert_k(" << meta
       << ", %status: memref<?xi64>, %x: " << xType << ") {\n";
    prologue(true);
    os << "  sconv.insert %x into %cache[k] layout " << l
       << " step %step : " << xType << ", " << cacheType << "\n";
    os << "  return\n}\n";
    os << "func.func @checked_conv_k(" << meta
       << ", %status: memref<?xi64>, %x: " << xType << ", %w: " << wType
       << ", %y: " << xType << ") {\n";
    prologue(true);
    os << "  sconv.conv %x, %w history %cache[k] layout " << l
       << " step %step into %y : " << xType << ", " << wType << ", "
       << cacheType << " -> " << xType << "\n";
    os << "  return\n}\n";
  }
  os << "}\n";
  return os.str();
}

/// Parses, lowers with the pipeline and JITs `source`.
std::unique_ptr<mlir::ExecutionEngine> compile(const std::string &source,
                                               bool checked) {
  mlir::DialectRegistry registry;
  registry.insert<sconv::SConvDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::vector::VectorDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  // The engine keeps no reference to the context once created.
  static mlir::MLIRContext *context = [&] {
    auto *ctx = new mlir::MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, context);
  if (!module) {
    ADD_FAILURE() << "cannot parse the test module:\n" << source;
    return nullptr;
  }
  mlir::PassManager pm(context);
  LowerToCPUOptions options;
  options.checked = checked;
  options.emitCInterface = true;
  buildLowerToCPUPipeline(pm, options);
  if (mlir::failed(pm.run(*module))) {
    ADD_FAILURE() << "inkling-lower-to-cpu failed";
    return nullptr;
  }
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = mlir::makeOptimizingTransformer(3, 0, nullptr);
  auto engine = mlir::ExecutionEngine::create(*module, engineOptions);
  if (!engine) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << engine.takeError();
    ADD_FAILURE() << "ExecutionEngine: " << message;
    return nullptr;
  }
  return std::move(*engine);
}

template <typename Fn>
Fn lookup(mlir::ExecutionEngine &engine, const std::string &name) {
  auto symbol = engine.lookup("_mlir_ciface_" + name);
  if (!symbol) {
    llvm::consumeError(symbol.takeError());
    ADD_FAILURE() << "no function " << name;
    return nullptr;
  }
  return reinterpret_cast<Fn>(*symbol);
}

//===----------------------------------------------------------------------===//
// Random steps
//===----------------------------------------------------------------------===//

uint16_t randomBf16(std::mt19937_64 &rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  return floatToBf16(dist(rng));
}

struct Step {
  StepMetadata meta;
  int64_t numBlocks = 0;
  /// Positions whose rows hold history (b, q): [max(0, nc - (W-1)), nc).
  std::vector<std::pair<int64_t, int64_t>> history;
};

/// A mixed batch: each sequence is a prefill from 0, a chunked prefill, a
/// decode or a short speculative chunk; blocks are distinct, from a shuffled
/// pool that keeps block 0 as the null block. Slots store only the last
/// W-1 positions (the runtime's window), plus a few random -1.
Step randomStep(std::mt19937_64 &rng, const Layout &layout) {
  Step step;
  int64_t kernel = layout.config.kernel, n = layout.blockSize;
  std::uniform_int_distribution<int> numSeqs(1, 4), kind(0, 3), chunk(2, 9),
      computed(1, 13);
  int64_t b = numSeqs(rng);
  std::vector<std::pair<int64_t, int64_t>> seqs; // (num_computed, tokens)
  for (int64_t i = 0; i < b; ++i) {
    switch (kind(rng)) {
    case 0: // prefill from 0
      seqs.push_back({0, chunk(rng)});
      break;
    case 1: // chunked prefill
      seqs.push_back({computed(rng), chunk(rng)});
      break;
    case 2: // decode
      seqs.push_back({computed(rng), 1});
      break;
    default: // a short speculative chunk
      seqs.push_back({computed(rng), 1 + chunk(rng) % 3});
      break;
    }
  }
  int64_t width = 0;
  for (auto [nc, len] : seqs)
    width = std::max<int64_t>(width, (nc + len + n - 1) / n);
  step.meta.blockTableWidth = width;
  step.meta.queryStartLoc.push_back(0);
  std::vector<int32_t> pool;
  int64_t needed = 0;
  for (auto [nc, len] : seqs) {
    int64_t first = std::max<int64_t>(0, nc - (kernel - 1)) / n;
    needed += (nc + len + n - 1) / n - first;
  }
  step.numBlocks = needed + 1 + 2; // the null block and two spare blocks
  for (int32_t i = 1; i < step.numBlocks; ++i)
    pool.push_back(i);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::bernoulli_distribution dropSlot(0.1);
  for (auto [nc, len] : seqs) {
    int64_t first = std::max<int64_t>(0, nc - (kernel - 1)) / n;
    std::vector<int32_t> row(width, 0);
    for (int64_t j = first; j < (nc + len + n - 1) / n; ++j) {
      row[j] = pool.back();
      pool.pop_back();
    }
    step.meta.blockTable.insert(step.meta.blockTable.end(), row.begin(),
                                row.end());
    for (int64_t q = std::max<int64_t>(0, nc - (kernel - 1)); q < nc; ++q)
      step.history.push_back({step.meta.numComputed.size(), q});
    for (int64_t i = 0; i < len; ++i) {
      int64_t p = nc + i;
      bool stored = p >= nc + len - (kernel - 1) && !dropSlot(rng);
      step.meta.slotMapping.push_back(stored ? row[p / n] * n + p % n : -1);
    }
    step.meta.numComputed.push_back(static_cast<int32_t>(nc));
    step.meta.queryStartLoc.push_back(
        static_cast<int32_t>(step.meta.queryStartLoc.back() + len));
  }
  return step;
}

//===----------------------------------------------------------------------===//
// The fixture
//===----------------------------------------------------------------------===//

using MemI8 = StridedMemRefType<int8_t, 1>;
using MemI32 = StridedMemRefType<int32_t, 1>;
using MemI32x2 = StridedMemRefType<int32_t, 2>;
using MemI64 = StridedMemRefType<int64_t, 1>;
using Mem3 = StridedMemRefType<uint16_t, 3>;
using Mem2 = StridedMemRefType<uint16_t, 2>;
using Mem1 = StridedMemRefType<uint16_t, 1>;

/// A stream buffer: T rows of `tokenStride` elements, the stream in each
/// row's first H*w elements (the rest is filler).
struct StreamData {
  StreamData(int64_t tokens, int64_t tokenStride)
      : tokenStride(tokenStride),
        buffer(std::max<int64_t>(1, tokens) * tokenStride, kPoison) {}
  int64_t tokenStride;
  AlignedBuffer<uint16_t> buffer;
  ConstStreamBuffer view() const { return {buffer.data, tokenStride}; }
  StreamBuffer mutableView() { return {buffer.data, tokenStride}; }
};

/// Everything a kernel call takes, as descriptors.
struct Call {
  MemI8 cache;
  MemI32 qsl, nc;
  MemI32x2 bt;
  MemI64 slots;
};

class LowerToCPUTest : public ::testing::TestWithParam<LayoutCase> {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  struct Compiled {
    Layout layout;
    int64_t pageBytes;
    std::unique_ptr<mlir::ExecutionEngine> engine, checkedEngine;
  };

  /// JIT-compiles each layout (and mode) once per test process, on demand:
  /// ctest runs every test in its own process.
  Compiled &compiled(bool checked = false) {
    // Never destroyed: tearing the JIT down during static destruction, after
    // LLVM's own globals, crashes the process at exit.
    static auto *cache = new std::map<std::string, std::unique_ptr<Compiled>>();
    const LayoutCase &lc = GetParam();
    auto &slot = (*cache)[lc.name];
    if (!slot) {
      auto derived = Layout::derive(lc.config);
      EXPECT_TRUE(derived.isOk());
      slot = std::make_unique<Compiled>();
      slot->layout = *derived;
      slot->pageBytes = derived->pageBytes() + lc.pagePaddingBytes;
    }
    auto &engine = checked ? slot->checkedEngine : slot->engine;
    if (!engine)
      engine = compile(buildModule(lc, slot->layout, slot->pageBytes, checked),
                       checked);
    return *slot;
  }

  int64_t tokenStride(const Layout &layout, Stream stream) const {
    int64_t row = layout.headsPerRank * layout.range(stream).width;
    return GetParam().stridedStreams ? row + 24 : row;
  }

  /// The stream descriptor: [T, H, w] or [T, H*w] with the row stride.
  void *streamDescriptor(const Layout &layout, Stream stream, bool flat,
                         StreamData &data, int64_t tokens,
                         std::vector<std::unique_ptr<char[]>> &keep) {
    int64_t h = layout.headsPerRank, w = layout.range(stream).width;
    if (flat) {
      auto *d = new Mem2(descriptor<uint16_t, 2>(
          data.buffer.data, {tokens, h * w}, {data.tokenStride, 1}));
      keep.emplace_back(reinterpret_cast<char *>(d));
      return d;
    }
    auto *d = new Mem3(descriptor<uint16_t, 3>(data.buffer.data, {tokens, h, w},
                                               {data.tokenStride, w, 1}));
    keep.emplace_back(reinterpret_cast<char *>(d));
    return d;
  }
};

/// The cache buffer: poisoned bytes, then random history rows [0, raw).
AlignedBuffer<uint16_t> makeCache(std::mt19937_64 &rng, const Layout &layout,
                                  const Step &step, int64_t blockStride) {
  AlignedBuffer<uint16_t> cache(step.numBlocks * blockStride, kPoison);
  int64_t n = layout.blockSize, d = layout.headSize;
  for (auto [b, q] : step.history) {
    int64_t block = step.meta.blockTable[b * step.meta.blockTableWidth + q / n];
    for (int64_t h = 0; h < layout.headsPerRank; ++h)
      for (int64_t c = 0; c < layout.rawWidth; ++c)
        cache.data[block * blockStride + (h * n + q % n) * d + c] =
            randomBf16(rng, 4.0f);
  }
  return cache;
}

Call makeCall(uint16_t *cache, int64_t cacheBytes, Step &step) {
  Call call;
  call.cache = descriptor<int8_t, 1>(reinterpret_cast<int8_t *>(cache),
                                     {cacheBytes}, {1});
  call.qsl = descriptor<int32_t, 1>(
      step.meta.queryStartLoc.data(),
      {static_cast<int64_t>(step.meta.queryStartLoc.size())}, {1});
  call.nc = descriptor<int32_t, 1>(
      step.meta.numComputed.data(),
      {static_cast<int64_t>(step.meta.numComputed.size())}, {1});
  call.bt = descriptor<int32_t, 2>(
      step.meta.blockTable.data(),
      {step.meta.numSequences(), step.meta.blockTableWidth},
      {step.meta.blockTableWidth, 1});
  call.slots = descriptor<int64_t, 1>(step.meta.slotMapping.data(),
                                      {step.meta.numTokens()}, {1});
  return call;
}

/// Bit-exact comparison (or within `ulps` bf16 steps when both are finite).
::testing::AssertionResult sameBits(const uint16_t *expected,
                                    const uint16_t *actual, size_t count,
                                    int ulps, const std::string &what) {
  for (size_t i = 0; i < count; ++i) {
    if (expected[i] == actual[i])
      continue;
    float e = bf16ToFloat(expected[i]), a = bf16ToFloat(actual[i]);
    bool close =
        ulps > 0 && std::isfinite(e) && std::isfinite(a) &&
        std::abs(int(expected[i] & 0x7fff) - int(actual[i] & 0x7fff)) <= ulps &&
        ((expected[i] ^ actual[i]) & 0x8000) == 0;
    if (!close) {
      char text[96];
      std::snprintf(text, sizeof(text),
                    "expected 0x%04x (%g), found 0x%04x (%g)", expected[i], e,
                    actual[i], a);
      return ::testing::AssertionFailure()
             << what << ": element " << i << " " << text;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(LowerToCPUTest, InsertMatchesReference) {
  Compiled &c = compiled();
  ASSERT_TRUE(c.engine);
  const Layout &layout = c.layout;
  using InsertFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                            void *, void *, void *, void *);
  auto insert = lookup<InsertFn>(*c.engine, "insert_all");
  ASSERT_TRUE(insert);
  int64_t blockStride = c.pageBytes / 2;
  for (int seed = 0; seed < GetParam().seeds; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    Step step = randomStep(rng, layout);
    int64_t tokens = step.meta.numTokens();
    AlignedBuffer<uint16_t> cache = makeCache(rng, layout, step, blockStride);
    std::vector<uint16_t> expected(cache.data, cache.data + cache.size);
    std::vector<std::unique_ptr<StreamData>> inputs;
    std::vector<std::unique_ptr<char[]>> keep;
    void *args[4];
    for (Stream s : kAllStreams) {
      auto data = std::make_unique<StreamData>(tokens, tokenStride(layout, s));
      for (size_t i = 0; i < data->buffer.size; ++i)
        data->buffer.data[i] = randomBf16(rng, 8.0f);
      args[static_cast<int>(s)] =
          streamDescriptor(layout, s, isFlat(s), *data, tokens, keep);
      referenceInsert(layout, s, data->view(), step.meta,
                      {expected.data(), blockStride, step.numBlocks});
      inputs.push_back(std::move(data));
    }
    Call call = makeCall(cache.data, step.numBlocks * c.pageBytes, step);
    insert(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, args[0],
           args[1], args[2], args[3]);
    ASSERT_TRUE(
        sameBits(expected.data(), cache.data, cache.size, 0,
                 "cache after insert (seed " + std::to_string(seed) + ")"));
  }
}

TEST_P(LowerToCPUTest, ConvMatchesReference) {
  Compiled &c = compiled();
  ASSERT_TRUE(c.engine);
  const Layout &layout = c.layout;
  using ConvFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                          void *, Mem2 *, Mem1 *, void *);
  int64_t blockStride = c.pageBytes / 2;
  int64_t kernel = layout.config.kernel;
  for (Stream s : kAllStreams) {
    for (const ConvVariant &v : kVariants) {
      std::string name = std::string("conv_") + streamName(s) + "_" + v.name;
      auto conv = lookup<ConvFn>(*c.engine, name);
      ASSERT_TRUE(conv);
      int64_t channels = layout.headsPerRank * layout.range(s).width;
      for (int seed = 0; seed < GetParam().seeds; ++seed) {
        std::mt19937_64 rng(7000 + seed * 31 + static_cast<int>(s));
        Step step = randomStep(rng, layout);
        int64_t tokens = step.meta.numTokens();
        AlignedBuffer<uint16_t> cache =
            makeCache(rng, layout, step, blockStride);
        std::vector<uint16_t> cacheBefore(cache.data, cache.data + cache.size);
        StreamData x(tokens, tokenStride(layout, s));
        for (size_t i = 0; i < x.buffer.size; ++i)
          x.buffer.data[i] = randomBf16(rng, 4.0f);
        AlignedBuffer<uint16_t> weights(channels * kernel, 0);
        for (size_t i = 0; i < weights.size; ++i)
          weights.data[i] = randomBf16(rng, 1.0f);
        AlignedBuffer<uint16_t> bias(channels, 0);
        for (size_t i = 0; i < bias.size; ++i)
          bias.data[i] = randomBf16(rng, 1.0f);
        StreamData y(tokens, tokenStride(layout, s)); // poisoned
        StreamData expected(tokens, tokenStride(layout, s));
        ConvOptions options;
        options.residual = v.residual;
        options.silu = v.silu;
        options.bias = v.bias ? bias.data : nullptr;
        referenceConv(layout, s, x.view(), weights.data, step.meta,
                      {cache.data, blockStride, step.numBlocks}, options,
                      expected.mutableView());
        std::vector<std::unique_ptr<char[]>> keep;
        void *xd = streamDescriptor(layout, s, isFlat(s), x, tokens, keep);
        void *yd = streamDescriptor(layout, s, isFlat(s), y, tokens, keep);
        Mem2 wd = descriptor<uint16_t, 2>(weights.data, {channels, kernel},
                                          {kernel, 1});
        Mem1 bd = descriptor<uint16_t, 1>(bias.data, {channels}, {1});
        Call call = makeCall(cache.data, step.numBlocks * c.pageBytes, step);
        conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, xd, &wd,
             &bd, yd);
        std::string what = name + " (seed " + std::to_string(seed) + ")";
        // The whole output buffer: the filler between rows keeps its poison.
        ASSERT_TRUE(sameBits(expected.buffer.data, y.buffer.data, y.buffer.size,
                             v.silu ? 1 : 0, what));
        ASSERT_TRUE(sameBits(cacheBefore.data(), cache.data, cache.size, 0,
                             what + ": the conv wrote the cache"));
      }
    }
  }
}

/// checked=true: out-of-range slots and block ids are skipped and reported
/// in the status buffer; in-range accesses still happen.
TEST_P(LowerToCPUTest, CheckedReportsOutOfRangeIds) {
  Compiled &c = compiled(/*checked=*/true);
  ASSERT_TRUE(c.checkedEngine);
  const Layout &layout = c.layout;
  using InsertFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                            MemI64 *, void *);
  using ConvFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                          MemI64 *, void *, Mem2 *, void *);
  auto insert = lookup<InsertFn>(*c.checkedEngine, "checked_insert_k");
  auto conv = lookup<ConvFn>(*c.checkedEngine, "checked_conv_k");
  ASSERT_TRUE(insert && conv);
  int64_t blockStride = c.pageBytes / 2;
  int64_t n = layout.blockSize, kernel = layout.config.kernel;
  Stream s = Stream::K;
  int64_t channels = layout.headsPerRank * layout.range(s).width;

  std::mt19937_64 rng(42);
  // One sequence decoding at position 2*N + 1 (its history, when W > 1,
  // starts in logical block 1 or 2), plus a second 3-token chunk.
  Step step;
  int64_t nc = 2 * n + 1;
  step.meta.queryStartLoc = {0, 1, 4};
  step.meta.numComputed = {static_cast<int32_t>(nc), 0};
  step.meta.blockTableWidth = 3 + 3 / n + 1;
  step.numBlocks = 6;
  step.meta.blockTable.assign(2 * step.meta.blockTableWidth, 1);
  // Sequence 0: every logical block maps to block 99: out of range.
  for (int64_t j = 0; j < step.meta.blockTableWidth; ++j)
    step.meta.blockTable[j] = 99;
  // Token 0: slot beyond the cache; token 1: -1 (fine); token 2: -7 (bad);
  // token 3: a valid slot in block 2.
  step.meta.slotMapping = {step.numBlocks * n + 1, -1, -7, 2 * n + 1};
  AlignedBuffer<uint16_t> cache(step.numBlocks * blockStride, kPoison);
  std::vector<uint16_t> before(cache.data, cache.data + cache.size);
  StreamData x(4, tokenStride(layout, s));
  for (size_t i = 0; i < x.buffer.size; ++i)
    x.buffer.data[i] = randomBf16(rng, 4.0f);
  std::vector<std::unique_ptr<char[]>> keep;
  void *xd = streamDescriptor(layout, s, false, x, 4, keep);
  std::vector<int64_t> status(5, 0);
  MemI64 sd = descriptor<int64_t, 1>(status.data(), {5}, {1});
  Call call = makeCall(cache.data, step.numBlocks * c.pageBytes, step);
  insert(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, &sd, xd);
  // Two bad tokens; the first one reported is token 0 (the CPU runs the
  // loops in order): kind 1 (slot), its slot, the limit num_blocks * N.
  EXPECT_EQ(status[0], 2);
  EXPECT_EQ(status[1], 1);
  EXPECT_EQ(status[2], 0);
  EXPECT_EQ(status[3], step.numBlocks * n + 1);
  EXPECT_EQ(status[4], step.numBlocks * n);
  // Only token 3's row was written.
  StepMetadata valid = step.meta;
  valid.slotMapping = {-1, -1, -1, 2 * n + 1};
  referenceInsert(layout, s, x.view(), valid,
                  {before.data(), blockStride, step.numBlocks});
  EXPECT_TRUE(
      sameBits(before.data(), cache.data, cache.size, 0, "checked insert"));

  if (kernel == 1)
    return; // no history taps, no block ids to check
  AlignedBuffer<uint16_t> weights(channels * kernel, 0);
  for (size_t i = 0; i < weights.size; ++i)
    weights.data[i] = randomBf16(rng, 1.0f);
  Mem2 wd =
      descriptor<uint16_t, 2>(weights.data, {channels, kernel}, {kernel, 1});
  StreamData y(4, tokenStride(layout, s));
  void *yd = streamDescriptor(layout, s, false, y, 4, keep);
  std::fill(status.begin(), status.end(), 0);
  conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, &sd, xd, &wd,
       yd);
  // Token 0 reads W-1 history taps, all through block 99.
  EXPECT_EQ(status[0], kernel - 1);
  EXPECT_EQ(status[1], 2);
  EXPECT_EQ(status[2], 0);
  EXPECT_EQ(status[3], 99);
  EXPECT_EQ(status[4], step.numBlocks);
}

// kv_heads 8 / head_dim 128 / hidden 4096 / kernel 4 is the real model; the
// small layouts have odd widths (scalar tails, unaligned stream offsets),
// padded pages whose block stride is not a multiple of 8 (unaligned cache
// rows), strided stream rows, and kernels 1, 2, 3 and 8.
INSTANTIATE_TEST_SUITE_P(
    Layouts, LowerToCPUTest,
    ::testing::Values(
        LayoutCase{"real_tp1", {8, 128, 4096, 4, 1, "bf16"}, 0, false, 4},
        LayoutCase{
            "real_tp2_padded", {8, 128, 4096, 4, 2, "bf16"}, 8192, false, 4},
        LayoutCase{
            "real_tp2_strided", {8, 128, 4096, 4, 2, "bf16"}, 0, true, 3},
        LayoutCase{"odd_k3_padded6", {2, 3, 10, 3, 1, "bf16"}, 6, false, 25},
        LayoutCase{"tails_k2_strided", {4, 8, 40, 2, 2, "bf16"}, 32, true, 25},
        LayoutCase{"wide_k8", {2, 16, 16, 8, 1, "bf16"}, 0, false, 20},
        LayoutCase{"tiny_k1", {1, 8, 8, 1, 1, "bf16"}, 2, false, 15}),
    [](const ::testing::TestParamInfo<LayoutCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
