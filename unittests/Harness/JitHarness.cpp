//===- JitHarness.cpp - JIT sconv kernels and feed them memrefs -----------===//

#include "Harness/JitHarness.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/InitInkling.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <omp.h>
#include <sstream>

using namespace inkling;
using namespace inkling::harness;
using namespace inkling::reference;

std::string harness::layoutAttr(const LayoutConfig &c) {
  std::ostringstream os;
  os << "#sconv.layout<kv_heads = " << c.kvHeads << ", head_dim = " << c.headDim
     << ", hidden = " << c.hidden << ", kernel = " << c.kernel
     << ", tp = " << c.tp;
  if (c.blockSize != 0 && c.blockSize != c.kernel)
    os << ", block_size = " << c.blockSize;
  os << ">";
  return os.str();
}

std::string harness::cacheType(const Layout &layout, int64_t pageBytes) {
  int64_t h = layout.headsPerRank, n = layout.blockSize, d = layout.headSize;
  return "memref<?x" + std::to_string(h) + "x" + std::to_string(n) + "x" +
         std::to_string(d) + "xbf16, strided<[" +
         std::to_string(pageBytes / 2) + ", " + std::to_string(n * d) + ", " +
         std::to_string(d) + ", 1]>>";
}

std::string harness::typeOfStream(const Layout &layout, Stream stream,
                                  bool flat, bool strided) {
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

LayerText::LayerText(const LayoutConfig &config, const Layout &layout,
                     int64_t pageBytes)
    : shape_(layout), pageBytes_(pageBytes), kernel_(config.kernel),
      layout_(layoutAttr(config)), cache_(cacheType(layout, pageBytes)) {}

std::string LayerText::weightsType(Stream stream) const {
  return "memref<" +
         std::to_string(shape_.headsPerRank * shape_.range(stream).width) +
         "x" + std::to_string(kernel_) + "xbf16>";
}

std::string LayerText::biasType(Stream stream) const {
  return "memref<" +
         std::to_string(shape_.headsPerRank * shape_.range(stream).width) +
         "xbf16>";
}

std::string LayerText::metadataParams(bool noalias) {
  const char *na = noalias ? " {llvm.noalias}" : "";
  return std::string("%buffer: memref<?xi8>") + na + ", %qsl: memref<?xi32>" +
         na + ", %nc: memref<?xi32>" + na + ", %bt: memref<?x?xi32>" + na +
         ", %slots: memref<?xi64>" + na;
}

std::string LayerText::bindAndStep(bool status, bool tokenSeq) const {
  std::ostringstream os;
  os << "  %cache = sconv.bind %buffer layout " << layout_ << " page_bytes "
     << pageBytes_ << " : memref<?xi8> -> " << cache_ << "\n";
  os << "  %step = sconv.step query_start_loc %qsl num_computed %nc "
        "block_table %bt slot_mapping %slots"
     << (tokenSeq ? " token_seq(%token_seq : memref<?xi32>)" : "")
     << (status ? " status %status" : "")
     << " : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>"
     << (status ? ", memref<?xi64>" : "") << "\n";
  return os.str();
}

std::string LayerText::insert(const std::string &x, Stream stream,
                              const std::string &xType) const {
  return "  sconv.insert %" + x + " into %cache[" + streamName(stream) +
         "] layout " + layout_ + " step %step : " + xType + ", " + cache_ +
         "\n";
}

std::string LayerText::conv(const Conv &c, Stream stream,
                            const std::string &xType) const {
  bool bias = !c.bias.empty();
  std::ostringstream os;
  os << "  sconv.conv %" << c.x << ", %" << c.weights
     << (bias ? " bias %" + c.bias : std::string()) << " history %cache["
     << streamName(stream) << "] layout " << layout_ << " step %step into %"
     << c.out << (c.silu ? " activation silu" : "")
     << (c.residual ? "" : " {residual = false}") << " : " << xType << ", "
     << weightsType(stream) << ", " << cache_
     << (bias ? ", " + biasType(stream) : std::string()) << " -> " << xType
     << "\n";
  return os.str();
}

void harness::initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

mlir::MLIRContext *harness::harnessContext() {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    inkling::registerAllDialects(registry);
    auto *ctx = new mlir::MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  return context;
}

namespace {
/// Parses `source`, collecting diagnostics into `diagnostics`.
mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &source,
                                        std::string &diagnostics) {
  mlir::MLIRContext *context = harnessContext();
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  return mlir::parseSourceString<mlir::ModuleOp>(source, context);
}
} // namespace

std::map<std::string, int>
harness::countOpsAfterFusion(const std::string &source,
                             sconv::FusionStrategy strategy,
                             std::string &error) {
  std::map<std::string, int> counts;
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(source, diagnostics);
  if (!module) {
    error = "cannot parse the module: " + diagnostics;
    return counts;
  }
  mlir::PassManager pm(harnessContext());
  sconv::buildFusionPipeline(pm, strategy);
  if (mlir::failed(pm.run(*module))) {
    error = "sconv-fuse failed";
    return counts;
  }
  module->walk([&](mlir::Operation *op) {
    std::string name = op->getName().getStringRef().str();
    ++counts[name];
    if (op->hasAttr("insert"))
      ++counts[name + " and_insert"];
  });
  return counts;
}

namespace {
/// The pipeline options of `compileOptions`.
void toPipelineOptions(const CompileOptions &compileOptions,
                       LowerToCPUOptions &options) {
  options.checked = compileOptions.checked;
  options.fusion = compileOptions.fusion;
  options.splitStreams = compileOptions.splitStreams;
  options.decodeRuns = compileOptions.decodeRuns;
  options.avx512Bf16 = compileOptions.avx512Bf16;
  options.threads = compileOptions.threads;
  options.minParallelIterations = compileOptions.minParallelIterations;
  options.streamingStoresMinIterations =
      compileOptions.streamingStoresMinIterations;
  options.branchCounters = compileOptions.branchCounters;
  options.emitCInterface = true;
}

/// Lowers the parsed `module` and JITs it.
std::unique_ptr<exec::JitEngine>
lowerAndJit(mlir::ModuleOp module, const CompileOptions &compileOptions,
            std::string &diagnostics, std::string &error) {
  // Diagnostics of the pipeline (e.g. a fusion or lowering error).
  mlir::MLIRContext *context = harnessContext();
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::PassManager pm(context);
  LowerToCPUOptions options;
  toPipelineOptions(compileOptions, options);
  buildLowerToCPUPipeline(pm, options);
  if (mlir::failed(pm.run(module))) {
    error = "inkling-lower-to-cpu failed: " + diagnostics;
    return nullptr;
  }
  // INKLING_JIT_DUMP=<file>: append the lowered module (a debugging aid).
  if (const char *dump = std::getenv("INKLING_JIT_DUMP")) {
    std::error_code ec;
    llvm::raw_fd_ostream os(dump, ec, llvm::sys::fs::OF_Append);
    if (!ec)
      module->print(os);
  }
  // -O3, as LayerProgram::compile.
  exec::JitOptions jitOptions;
  jitOptions.cacheDir = compileOptions.cacheDir;
  auto engine = exec::JitEngine::create(module, jitOptions);
  if (!engine) {
    llvm::raw_string_ostream os(error);
    os << "JIT: " << engine.takeError();
    return nullptr;
  }
  return std::move(*engine);
}

/// The process's compiled engines by key, and the counts.
struct CompileCache {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<exec::JitEngine>> engines;
  CompileCacheStats stats;
};
CompileCache &compileCache() {
  // Never destroyed: the engines' code outlives any test (see compileCached).
  static CompileCache *cache = new CompileCache();
  return *cache;
}
} // namespace

/// Initializes the target and parses `source` (null, with `error` set, when
/// it does not parse).
static mlir::OwningOpRef<mlir::ModuleOp> parseSource(const std::string &source,
                                                     std::string &diagnostics,
                                                     std::string &error) {
  initializeNativeTarget();
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(source, diagnostics);
  if (!module)
    error = "cannot parse the module: " + diagnostics + "\n" + source;
  return module;
}

std::unique_ptr<exec::JitEngine>
harness::compile(const std::string &source,
                 const CompileOptions &compileOptions, std::string &error) {
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      parseSource(source, diagnostics, error);
  if (!module)
    return nullptr;
  return lowerAndJit(*module, compileOptions, diagnostics, error);
}

exec::JitEngine *harness::compileCached(const std::string &source,
                                        const CompileOptions &compileOptions,
                                        std::string &error) {
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      parseSource(source, diagnostics, error);
  if (!module)
    return nullptr;
  // The key: the pipeline with its options, then the IR without locations
  // (the printer's default), so that equal layers give equal keys whatever
  // their spelling in `source`.
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    LowerToCPUOptions options;
    toPipelineOptions(compileOptions, options);
    os << "inkling-lower-to-cpu";
    options.print(os);
    os << "\n";
    module->print(os, mlir::OpPrintingFlags());
  }
  CompileCache &cache = compileCache();
  // One compile at a time: the MLIRContext is shared.
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.engines.find(key);
  if (it != cache.engines.end()) {
    ++cache.stats.hits;
    return it->second.get();
  }
  ++cache.stats.misses;
  std::unique_ptr<exec::JitEngine> engine =
      lowerAndJit(*module, compileOptions, diagnostics, error);
  if (!engine)
    return nullptr;
  exec::JitEngine *result = engine.get();
  cache.engines.emplace(std::move(key), std::move(engine));
  return result;
}

CompileCacheStats harness::compileCacheStats() {
  CompileCache &cache = compileCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.stats;
}

int harness::defaultThreadCount() { return omp_get_max_threads(); }

int64_t *harness::branchCounter(exec::JitEngine &engine, cpu::Branch branch) {
  auto symbol = engine.lookup(cpu::branchCounterSymbol(branch));
  if (!symbol) {
    llvm::consumeError(symbol.takeError());
    return nullptr;
  }
  return static_cast<int64_t *>(*symbol);
}

void *harness::lookupFunction(exec::JitEngine &engine,
                              const std::string &name) {
  auto symbol = engine.lookup("_mlir_ciface_" + name);
  if (!symbol) {
    llvm::consumeError(symbol.takeError());
    return nullptr;
  }
  return *symbol;
}

uint16_t harness::randomBf16(std::mt19937_64 &rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  return floatToBf16(dist(rng));
}

/// A step of `seqs` ((num_computed, tokens) each): blocks distinct, from a
/// shuffled pool that keeps block 0 as the null block; slots store only
/// the last W-1 positions, plus a few random -1.
static Step stepOf(std::mt19937_64 &rng, const Layout &layout,
                   const std::vector<std::pair<int64_t, int64_t>> &seqs) {
  Step step;
  int64_t kernel = layout.config.kernel, n = layout.blockSize;
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

Step harness::randomStep(std::mt19937_64 &rng, const Layout &layout,
                         int maxChunk) {
  std::uniform_int_distribution<int> numSeqs(1, 4), kind(0, 3),
      chunk(2, maxChunk), computed(1, 13);
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
  return stepOf(rng, layout, seqs);
}

Step harness::randomDecodeStep(std::mt19937_64 &rng, const Layout &layout,
                               int64_t sequences) {
  // Most positions past W - 1 (every tap a history row), some before it.
  std::uniform_int_distribution<int64_t> computed(0, layout.config.kernel +
                                                         3 * layout.blockSize);
  std::bernoulli_distribution draft(0.1);
  std::vector<std::pair<int64_t, int64_t>> seqs;
  for (int64_t i = 0; i < sequences; ++i)
    seqs.push_back({computed(rng), draft(rng) ? 2 : 1});
  return stepOf(rng, layout, seqs);
}

AlignedBuffer<uint16_t>
harness::makeCache(std::mt19937_64 &rng, const Layout &layout, const Step &step,
                   int64_t blockStride, uint16_t poison) {
  AlignedBuffer<uint16_t> cache(step.numBlocks * blockStride, poison);
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

Call harness::makeCall(uint16_t *cache, int64_t cacheBytes,
                       StepMetadata &meta) {
  Call call;
  call.cache = descriptor<int8_t, 1>(reinterpret_cast<int8_t *>(cache),
                                     {cacheBytes}, {1});
  call.qsl = descriptor<int32_t, 1>(
      meta.queryStartLoc.data(),
      {static_cast<int64_t>(meta.queryStartLoc.size())}, {1});
  call.nc = descriptor<int32_t, 1>(
      meta.numComputed.data(), {static_cast<int64_t>(meta.numComputed.size())},
      {1});
  call.bt = descriptor<int32_t, 2>(meta.blockTable.data(),
                                   {meta.numSequences(), meta.blockTableWidth},
                                   {meta.blockTableWidth, 1});
  call.slots = descriptor<int64_t, 1>(meta.slotMapping.data(),
                                      {meta.numPaddedTokens()}, {1});
  return call;
}
