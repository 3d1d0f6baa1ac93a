//===- FusionBench.cpp - Fused vs unfused sconv kernels on the CPU --------===//
//
// inkling-bench-fusion: JIT-compiles, once, a decoder layer's sconv work at
// the real layout (kv_heads 8, head_dim 128, hidden 4096, kernel 4, tp 1)
// with each fusion strategy of `inkling-lower-to-cpu`, then times
//
//   insert/packed      the four-stream packed insert (sconv.insert_packed)
//   insert/separate    four per-stream inserts (sconv.insert x 4)
//   insert/memcpy      memcpy of the bytes the insert writes
//   insert/*-plain     insert/packed and insert/separate without
//                      non-temporal stores (streaming-stores-min-iterations
//                      =0): with them, both reach the memory bound at 8192
//                      tokens and the packed insert's one pass over the
//                      rows no longer shows
//   layer/conv-insert  the layer with the default strategy: one fused_conv
//                      of the four streams, and_insert (x read once)
//   layer/packed       fused_conv of the four streams, then insert_packed
//   layer/none         4 convs, then 4 inserts (8 loop nests)
//   layer/token-seq    layer/conv-insert with sconv.step's token_seq operand:
//                      each token's sequence loaded, not searched for
//   layer/threads      layer/conv-insert on every core (the pipeline's
//                      threads=0: OpenMP's default team), forking for steps
//                      of >= 64 (token, head) pairs
//   layer/memcpy       memcpy of the step's row bytes (the bound's unit
//                      until 2026-12-03, scaled to the layer's traffic)
//   layer/traffic-copy memcpy of half the layer's traffic (it reads and
//                      writes each byte it copies): the memory bound below
//   layer/token-nest   layer/conv-insert with decode-runs=false: decode
//                      steps in the (token, head) nest by 16-byte chunks
//                      (the baseline of the decode-run nest)
//   layer/portable     layer/conv-insert with avx512-bf16=false (decode's
//                      rounding in software; the default takes the
//                      host's AVX512-BF16 where it has one: the baseline
//                      of that choice; skipped on other hosts)
//   layer/plain-stores layer/conv-insert without non-temporal stores
//                      (streaming-stores-min-iterations=0; the default,
//                      4096, streams the stores of large steps)
//   layer/hand-avx512  decode only: the same layer written by hand with
//                      AVX-512 intrinsics (HandDecodeKernel.cpp), on the
//                      same inputs, its y and cache checked bit for bit
//                      against layer/conv-insert's first: how far the
//                      compiler's decode is from a hand-written kernel on
//                      this machine
//   layer/access-runs  decode only: the layer's loads and stores without its
//                      arithmetic (DecodeAccessPattern.cpp: xors in its
//                      place), in the decode-run nest's order, its output
//                      checked first; layer/access-tokens: the same token by
//                      token, the next token's history rows prefetched. The
//                      faster is the floor of the layer's own access pattern
//                      (its scattered 2.5 KiB row pieces), which the memcpy
//                      bound does not see
//   layer/*-cold       decode only: layer/conv-insert, layer/traffic-copy
//                      and layer/access-* with every cache level emptied
//                      before each call (ColdCaches.h), as in serving,
//                      where the model's other layers run between two steps
//                      of a layer; 40 calls, the emptying not timed
//
// at T = 1, 8, 64, 256 decode tokens (one sequence each, history in the
// cache) and 8192 prefill tokens (one sequence from position 0). Every slot
// is valid and distinct. Bytes are counted as the bytes the insert writes:
// T * H * raw * 2 (raw = 1280 channels of a head row, 2 bytes each; 20 KiB
// per token); memcpy copies exactly that many bytes (it also reads that many,
// like the insert reads its inputs). The layer benchmarks report the same
// count (the row bytes of the step) so their bytes/s compare directly.
//
// After the run two summary tables print the ratios, from times measured in
// this process: packed vs memcpy, separate vs packed, and each layer
// strategy vs conv-insert; then 1 thread vs every core, and the layer vs
// its memcpy-equivalent bound: the time memcpy takes to move the bytes the
// layer must move (x read once, y and the cache rows written, the weights
// read, and in decode the W-1 history rows each token reads from the
// cache), copying half of them (a copy reads and writes each byte). The
// copy is of the same size as the traffic, so that it runs from the same
// level of the memory hierarchy as the layer: the row bytes' copy scaled
// up (the "row-scaled" column) ran from a cache level the layer's working
// set does not fit in (L2 at T = 64, L3 at T = 256 on a 2 MiB / 32 MiB
// machine) and understated the bound. Last, decode against the hand-written
// kernel (layer/hand-avx512): its time, the compiler's over it, and both
// over the bound; decode against the floor of its access pattern; and
// decode, its bound and that floor from cold caches.
//
//===----------------------------------------------------------------------===//

#include "BenchSteps.h"
#include "ColdCaches.h"
#include "DecodeAccessPattern.h"
#include "HandDecodeKernel.h"
#include "Harness/JitHarness.h"
#include "Harness/StreamParams.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Layout.h"

#include "benchmark/benchmark.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::harness;
using sconv::FusionStrategy;

namespace {

constexpr int64_t kTokenCounts[] = {1, 8, 64, 256, 8192};
constexpr int64_t kPrefillTokens = 8192;

const LayoutConfig kReal{8, 128, 4096, 4, 1, "bf16"};

/// The module: @inserts (the four inserts) and @layer (conv + insert per
/// stream, the order of a decoder layer without calls between).
std::string buildModule(const Layout &layout, int64_t pageBytes) {
  LayerText text(kReal, layout, pageBytes);
  std::ostringstream os;
  const char *na = " {llvm.noalias}";
  auto xType = [&](Stream s) {
    return typeOfStream(layout, s, isFlat(s), false);
  };
  auto signature = [&](const char *name, bool convs, bool tokenSeq = false) {
    os << "func.func @" << name << "(" << LayerText::metadataParams(true);
    if (tokenSeq)
      os << ", %token_seq: memref<?xi32>" << na;
    auto weights = [&](Stream s) { return text.weightsType(s); };
    os << streamParams("x_", xType, na);
    if (convs)
      os << streamParams("w_", weights, na) << streamParams("y_", xType, na);
    os << ") {\n" << text.bindAndStep(false, tokenSeq);
  };
  os << "module {\n";
  signature("inserts", false);
  for (Stream s : kAllStreams)
    os << text.insert(std::string("x_") + streamName(s), s, xType(s));
  os << "  return\n}\n";
  signature("layer", true);
  for (Stream s : kAllStreams) {
    std::string n = streamName(s);
    os << text.conv({"x_" + n, "w_" + n, "", "y_" + n}, s, xType(s));
    os << text.insert("x_" + n, s, xType(s));
  }
  os << "  return\n}\n";
  signature("layer_seq", true, /*tokenSeq=*/true);
  for (Stream s : kAllStreams) {
    std::string n = streamName(s);
    os << text.conv({"x_" + n, "w_" + n, "", "y_" + n}, s, xType(s));
    os << text.insert("x_" + n, s, xType(s));
  }
  os << "  return\n}\n}\n";
  return os.str();
}

using InsertsFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                           void *, void *, void *, void *);
using LayerFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                         void *, void *, void *, void *, Mem2 *, Mem2 *, Mem2 *,
                         Mem2 *, void *, void *, void *, void *);
using LayerSeqFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                            MemI32 *, void *, void *, void *, void *, Mem2 *,
                            Mem2 *, Mem2 *, Mem2 *, void *, void *, void *,
                            void *);

/// Everything one token count needs: the step, the buffers, descriptors.
struct Workload {
  int64_t tokens;
  reference::StepMetadata meta;
  std::unique_ptr<AlignedBuffer<uint16_t>> cache;
  std::vector<std::unique_ptr<AlignedBuffer<uint16_t>>> xs, ys, ws;
  Call call;
  std::vector<int32_t> tokenSeq;
  MemI32 tokenSeqDesc;
  Mem3 x3[2], y3[2];
  Mem2 x2[2], y2[2], w[4];
  void *x[4], *y[4];
  std::unique_ptr<AlignedBuffer<uint8_t>> copySource, copyDest;
  /// Buffers of half the layer's traffic each, for layer/traffic-copy
  /// (allocated by it).
  std::unique_ptr<AlignedBuffer<uint8_t>> trafficSource, trafficDest;
  /// Decode: each token's history and slot rows, for layer/hand-avx512.
  std::vector<bench::HandDecodeToken> handTokens;
  int64_t rowBytes; ///< T * H * raw * 2: what the insert writes.
  /// Bytes the layer must read and write (see the file comment).
  int64_t layerTraffic;
};

struct Engines {
  Layout layout;
  int64_t pageBytes;
  std::map<FusionStrategy, std::unique_ptr<exec::JitEngine>> engines;
  /// conv-insert with threads = 0 (every core).
  std::unique_ptr<exec::JitEngine> threaded;
  /// conv-insert with ordinary stores only.
  std::unique_ptr<exec::JitEngine> plainStores;
  /// conv-insert without the decode-run nest (decode-runs=false).
  std::unique_ptr<exec::JitEngine> tokenNest;
  /// packed-inserts and none with ordinary stores only.
  std::map<FusionStrategy, std::unique_ptr<exec::JitEngine>> plainInserts;
  std::map<int64_t, std::unique_ptr<Workload>> workloads;
  /// Seconds to lower and JIT the module: conv-insert on one thread, and
  /// threaded (threads = 0).
  double compileOneThread = 0, compileThreaded = 0;
};

/// `compile`, timed into `seconds`: always compiled, never loaded from
/// $INKLING_CACHE_DIR's object cache.
std::unique_ptr<exec::JitEngine> timedCompile(const std::string &source,
                                              CompileOptions options,
                                              std::string &error,
                                              double &seconds) {
  options.cacheDir = "";
  auto start = std::chrono::steady_clock::now();
  auto engine = compile(source, options, error);
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return engine;
}

Engines &engines() {
  static Engines *e = [] {
    auto *e = new Engines();
    e->layout = *Layout::derive(kReal);
    e->pageBytes = e->layout.pageBytes();
    std::string source = buildModule(e->layout, e->pageBytes);
    for (FusionStrategy s :
         {FusionStrategy::ConvInsert, FusionStrategy::PackedInserts,
          FusionStrategy::None}) {
      CompileOptions options;
      options.fusion = s;
      std::string error;
      double seconds = 0;
      e->engines[s] = timedCompile(source, options, error, seconds);
      if (s == FusionStrategy::ConvInsert)
        e->compileOneThread = seconds;
      if (s != FusionStrategy::ConvInsert && e->engines[s]) {
        options.streamingStoresMinIterations = 0;
        e->plainInserts[s] = compile(source, options, error);
      }
      if (!e->engines[s] ||
          (s != FusionStrategy::ConvInsert && !e->plainInserts[s])) {
        std::fprintf(stderr, "inkling-bench-fusion: %s\n", error.c_str());
        std::exit(1);
      }
    }
    CompileOptions threaded;
    threaded.threads = 0;
    CompileOptions plainStores;
    plainStores.streamingStoresMinIterations = 0;
    CompileOptions tokenNest;
    tokenNest.decodeRuns = false;
    std::string error;
    e->threaded = timedCompile(source, threaded, error, e->compileThreaded);
    if (e->threaded)
      e->plainStores = compile(source, plainStores, error);
    if (e->plainStores)
      e->tokenNest = compile(source, tokenNest, error);
    if (!e->threaded || !e->plainStores || !e->tokenNest) {
      std::fprintf(stderr, "inkling-bench-fusion: %s\n", error.c_str());
      std::exit(1);
    }
    return e;
  }();
  return *e;
}

/// Decode (T <= 256) or prefill (T = 8192), as bench::benchStep builds them.
Workload &workload(int64_t tokens) {
  Engines &e = engines();
  auto &slot = e.workloads[tokens];
  if (slot)
    return *slot;
  slot = std::make_unique<Workload>();
  Workload &w = *slot;
  const Layout &layout = e.layout;
  int64_t n = layout.blockSize, h = layout.headsPerRank;
  w.tokens = tokens;
  bench::BenchStep step = bench::benchStep(tokens, kPrefillTokens, n);
  w.meta = step.meta;
  int64_t numBlocks = step.numBlocks;
  if (tokens < kPrefillTokens)
    w.handTokens = bench::handDecodeTokens(w.meta, layout, e.pageBytes / 2);
  std::mt19937_64 rng(7);
  int64_t blockStride = e.pageBytes / 2;
  w.cache =
      std::make_unique<AlignedBuffer<uint16_t>>(numBlocks * blockStride, 0);
  for (size_t i = 0; i < w.cache->size; i += 7)
    w.cache->data[i] = randomBf16(rng, 2.0f);
  w.call = makeCall(w.cache->data, numBlocks * e.pageBytes, w.meta);
  for (int64_t b = 0; b < w.meta.numSequences(); ++b)
    for (int32_t t = w.meta.queryStartLoc[b]; t < w.meta.queryStartLoc[b + 1];
         ++t)
      w.tokenSeq.push_back(static_cast<int32_t>(b));
  w.tokenSeqDesc = descriptor<int32_t, 1>(w.tokenSeq.data(), {tokens}, {1});
  for (Stream s : kAllStreams) {
    int i = static_cast<int>(s);
    int64_t width = layout.range(s).width, row = h * width;
    w.xs.push_back(std::make_unique<AlignedBuffer<uint16_t>>(tokens * row, 0));
    w.ys.push_back(std::make_unique<AlignedBuffer<uint16_t>>(tokens * row, 0));
    w.ws.push_back(std::make_unique<AlignedBuffer<uint16_t>>(row * 4, 0));
    for (size_t j = 0; j < w.xs.back()->size; ++j)
      w.xs.back()->data[j] = randomBf16(rng, 2.0f);
    for (size_t j = 0; j < w.ws.back()->size; ++j)
      w.ws.back()->data[j] = randomBf16(rng, 1.0f);
    w.w[i] = descriptor<uint16_t, 2>(w.ws.back()->data, {row, 4}, {4, 1});
    if (isFlat(s)) {
      w.x2[i - 2] =
          descriptor<uint16_t, 2>(w.xs.back()->data, {tokens, row}, {row, 1});
      w.y2[i - 2] =
          descriptor<uint16_t, 2>(w.ys.back()->data, {tokens, row}, {row, 1});
      w.x[i] = &w.x2[i - 2];
      w.y[i] = &w.y2[i - 2];
    } else {
      w.x3[i] = descriptor<uint16_t, 3>(w.xs.back()->data, {tokens, h, width},
                                        {row, width, 1});
      w.y3[i] = descriptor<uint16_t, 3>(w.ys.back()->data, {tokens, h, width},
                                        {row, width, 1});
      w.x[i] = &w.x3[i];
      w.y[i] = &w.y3[i];
    }
  }
  w.rowBytes = tokens * h * layout.rawWidth * 2;
  int64_t weightBytes = h * layout.rawWidth * layout.config.kernel * 2;
  int64_t historyBytes =
      tokens < kPrefillTokens ? (layout.config.kernel - 1) * w.rowBytes : 0;
  w.layerTraffic = 3 * w.rowBytes + weightBytes + historyBytes;
  w.copySource = std::make_unique<AlignedBuffer<uint8_t>>(w.rowBytes, 1);
  w.copyDest = std::make_unique<AlignedBuffer<uint8_t>>(w.rowBytes, 0);
  return w;
}

/// Seconds per iteration of each benchmark (the minimum over repetitions),
/// for the summary.
std::map<std::string, double> &secondsPerIteration() {
  static std::map<std::string, double> m;
  return m;
}

std::string key(const char *what, int64_t tokens) {
  return std::string(what) + "/" + std::to_string(tokens);
}

/// Records `seconds` over the state's iterations for the summary, and the
/// benchmark's rates.
void record(benchmark::State &state, const char *what, const Workload &w,
            double seconds) {
  int64_t tokens = w.tokens;
  state.SetBytesProcessed(state.iterations() * w.rowBytes);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * tokens),
                         benchmark::Counter::kIsRate);
  // The best repetition (--benchmark_repetitions): the machine may be shared.
  double perIteration = seconds / static_cast<double>(state.iterations());
  auto [it, inserted] =
      secondsPerIteration().emplace(key(what, tokens), perIteration);
  if (!inserted)
    it->second = std::min(it->second, perIteration);
}

template <typename Body>
void timed(benchmark::State &state, const char *what, Body body) {
  Workload &w = workload(state.range(0));
  body(w); // warm up (page faults, caches)
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state)
    body(w);
  record(state, what, w,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count());
}

/// As `timed`, with every cache level emptied before each call
/// (ColdCaches.h): the times of a serving step, whose rows and weights the
/// model's other layers have evicted. The emptying is not timed (the
/// benchmarks use manual time).
template <typename Body>
void timedCold(benchmark::State &state, const char *what, Body body) {
  Workload &w = workload(state.range(0));
  body(w); // page faults
  double seconds = 0;
  for (auto _ : state) {
    bench::evictCaches();
    auto start = std::chrono::steady_clock::now();
    body(w);
    double call =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    state.SetIterationTime(call);
    seconds += call;
  }
  record(state, what, w, seconds);
}

void callInserts(Workload &w, FusionStrategy strategy, bool plain = false) {
  auto &engine =
      plain ? engines().plainInserts[strategy] : engines().engines[strategy];
  auto fn = reinterpret_cast<InsertsFn>(lookupFunction(*engine, "inserts"));
  Call &c = w.call;
  fn(&c.cache, &c.qsl, &c.nc, &c.bt, &c.slots, w.x[0], w.x[1], w.x[2], w.x[3]);
}

void callLayer(Workload &w, exec::JitEngine &engine) {
  auto fn = reinterpret_cast<LayerFn>(lookupFunction(engine, "layer"));
  Call &c = w.call;
  fn(&c.cache, &c.qsl, &c.nc, &c.bt, &c.slots, w.x[0], w.x[1], w.x[2], w.x[3],
     &w.w[0], &w.w[1], &w.w[2], &w.w[3], w.y[0], w.y[1], w.y[2], w.y[3]);
}

void callLayerSeq(Workload &w) {
  auto fn = reinterpret_cast<LayerSeqFn>(lookupFunction(
      *engines().engines[FusionStrategy::ConvInsert], "layer_seq"));
  Call &c = w.call;
  fn(&c.cache, &c.qsl, &c.nc, &c.bt, &c.slots, &w.tokenSeqDesc, w.x[0], w.x[1],
     w.x[2], w.x[3], &w.w[0], &w.w[1], &w.w[2], &w.w[3], w.y[0], w.y[1], w.y[2],
     w.y[3]);
}

void BM_InsertPacked(benchmark::State &state) {
  // conv-insert and packed-inserts both pack the lone inserts.
  timed(state, "insert/packed",
        [](Workload &w) { callInserts(w, FusionStrategy::PackedInserts); });
}
void BM_InsertSeparate(benchmark::State &state) {
  timed(state, "insert/separate",
        [](Workload &w) { callInserts(w, FusionStrategy::None); });
}
void BM_InsertPackedPlain(benchmark::State &state) {
  timed(state, "insert/packed-plain", [](Workload &w) {
    callInserts(w, FusionStrategy::PackedInserts, /*plain=*/true);
  });
}
void BM_InsertSeparatePlain(benchmark::State &state) {
  timed(state, "insert/separate-plain", [](Workload &w) {
    callInserts(w, FusionStrategy::None, /*plain=*/true);
  });
}
void BM_InsertMemcpy(benchmark::State &state) {
  timed(state, "insert/memcpy", [](Workload &w) {
    std::memcpy(w.copyDest->data, w.copySource->data, w.rowBytes);
    benchmark::DoNotOptimize(w.copyDest->data);
    benchmark::ClobberMemory();
  });
}
void BM_LayerConvInsert(benchmark::State &state) {
  timed(state, "layer/conv-insert", [](Workload &w) {
    callLayer(w, *engines().engines[FusionStrategy::ConvInsert]);
  });
}
void BM_LayerPacked(benchmark::State &state) {
  timed(state, "layer/packed", [](Workload &w) {
    callLayer(w, *engines().engines[FusionStrategy::PackedInserts]);
  });
}
void BM_LayerNone(benchmark::State &state) {
  timed(state, "layer/none", [](Workload &w) {
    callLayer(w, *engines().engines[FusionStrategy::None]);
  });
}

void BM_LayerThreads(benchmark::State &state) {
  timed(state, "layer/threads",
        [](Workload &w) { callLayer(w, *engines().threaded); });
}
void BM_LayerTokenNest(benchmark::State &state) {
  timed(state, "layer/token-nest",
        [](Workload &w) { callLayer(w, *engines().tokenNest); });
}
void BM_LayerPortable(benchmark::State &state) {
  if (!cpu::hostHasAvx512Bf16()) {
    state.SkipWithError("the host has no AVX512-BF16: layer/conv-insert is "
                        "the portable form already");
    return;
  }
  // Compiled on first use only (the other engines are compiled up front).
  static std::unique_ptr<exec::JitEngine> portable = [] {
    Engines &e = engines();
    CompileOptions options;
    options.avx512Bf16 = false;
    std::string error;
    auto engine = compile(buildModule(e.layout, e.pageBytes), options, error);
    if (!engine) {
      std::fprintf(stderr, "inkling-bench-fusion: %s\n", error.c_str());
      std::exit(1);
    }
    return engine;
  }();
  timed(state, "layer/portable", [](Workload &w) { callLayer(w, *portable); });
}
void BM_LayerPlainStores(benchmark::State &state) {
  timed(state, "layer/plain-stores",
        [](Workload &w) { callLayer(w, *engines().plainStores); });
}
void BM_LayerMemcpy(benchmark::State &state) {
  timed(state, "layer/memcpy", [](Workload &w) {
    std::memcpy(w.copyDest->data, w.copySource->data, w.rowBytes);
    benchmark::DoNotOptimize(w.copyDest->data);
    benchmark::ClobberMemory();
  });
}

/// The traffic copies' buffers, allocated by them, not in workload(): 480
/// MiB at 8192 tokens, which the other benchmarks do not need.
void allocateTrafficBuffers(Workload &w) {
  if (w.trafficSource)
    return;
  w.trafficSource =
      std::make_unique<AlignedBuffer<uint8_t>>(w.layerTraffic / 2, 1);
  w.trafficDest =
      std::make_unique<AlignedBuffer<uint8_t>>(w.layerTraffic / 2, 0);
}

/// The bound's copy: half the layer's traffic, read and written.
void copyTraffic(Workload &w) {
  std::memcpy(w.trafficDest->data, w.trafficSource->data, w.layerTraffic / 2);
  benchmark::DoNotOptimize(w.trafficDest->data);
  benchmark::ClobberMemory();
}

void BM_LayerTrafficCopy(benchmark::State &state) {
  allocateTrafficBuffers(workload(state.range(0)));
  timed(state, "layer/traffic-copy", copyTraffic);
}

void BM_LayerTrafficCopyThreads(benchmark::State &state) {
  // The bound of the threaded layer: the same copy split in one slice of
  // whole cache lines per thread, on the OpenMP runtime the JIT's threaded
  // code uses (its workers stay warm between the calls, as the layer's do).
  allocateTrafficBuffers(workload(state.range(0)));
  timed(state, "layer/traffic-copy-threads", [](Workload &w) {
    const size_t bytes = w.layerTraffic / 2;
    uint8_t *dest = w.trafficDest->data;
    const uint8_t *source = w.trafficSource->data;
#pragma omp parallel
    {
      size_t threads = omp_get_num_threads(), i = omp_get_thread_num();
      size_t slice = (bytes / threads + 63) & ~size_t(63);
      size_t begin = std::min(i * slice, bytes);
      size_t end = std::min(begin + slice, bytes);
      std::memcpy(dest + begin, source + begin, end - begin);
    }
    benchmark::DoNotOptimize(w.trafficDest->data);
    benchmark::ClobberMemory();
  });
}

/// The hand-written kernel's geometry at the real layout.
bench::HandDecodeShape handShape() {
  return bench::handDecodeShape(engines().layout, kAllStreams);
}

/// The workload's per-stream buffers as the hand-written kernels take them.
struct StreamPointers {
  const uint16_t *x[4], *weights[4];
  uint16_t *y[4];
  explicit StreamPointers(Workload &w) {
    for (int s = 0; s < 4; ++s) {
      x[s] = w.xs[s]->data;
      weights[s] = w.ws[s]->data;
      y[s] = w.ys[s]->data;
    }
  }
};

void callHand(Workload &w) {
  StreamPointers p(w);
  bench::handDecodeLayer(handShape(), w.handTokens, w.cache->data, p.x,
                         p.weights, p.y);
}

/// The number of bf16 elements where the hand-written kernel's y and cache
/// differ from layer/conv-insert's, on the workload's inputs.
int64_t handMismatches(Workload &w) {
  callLayer(w, *engines().engines[FusionStrategy::ConvInsert]);
  std::vector<std::vector<uint16_t>> ys;
  for (auto &y : w.ys) {
    ys.emplace_back(y->data, y->data + y->size);
    std::fill(y->data, y->data + y->size, 0);
  }
  std::vector<uint16_t> cache(w.cache->data, w.cache->data + w.cache->size);
  callHand(w);
  int64_t mismatches = 0;
  for (size_t s = 0; s < ys.size(); ++s)
    for (size_t i = 0; i < ys[s].size(); ++i)
      mismatches += ys[s][i] != w.ys[s]->data[i];
  for (size_t i = 0; i < cache.size(); ++i)
    mismatches += cache[i] != w.cache->data[i];
  return mismatches;
}

/// Set when the hand-written kernel's output differs from conv-insert's:
/// the binary then exits with 1 (its smoke test fails).
bool handMismatched = false;

void BM_LayerHandAvx512(benchmark::State &state) {
  if (!bench::handDecodeSupported()) {
    state.SkipWithError("skipped: this CPU has no AVX-512 F and BW");
    return;
  }
  if (!bench::handDecodeHandles(handShape())) {
    state.SkipWithError("the hand-written kernel does not handle this layout");
    return;
  }
  Workload &w = workload(state.range(0));
  if (int64_t bad = handMismatches(w)) {
    handMismatched = true;
    state.SkipWithError(
        ("the hand-written kernel differs from conv-insert in " +
         std::to_string(bad) + " elements")
            .c_str());
    return;
  }
  timed(state, "layer/hand-avx512", callHand);
}

void callAccessPattern(Workload &w, bench::AccessOrder order) {
  StreamPointers p(w);
  bench::decodeAccessPattern(order, handShape(), w.handTokens, w.cache->data,
                             p.x, p.weights, p.y);
}

/// The number of bf16 elements where the access-pattern kernel's output
/// differs from what it must compute: its cache as layer/conv-insert's (both
/// store x at the slot rows) and y as bench::accessPatternMismatches
/// computes it.
int64_t accessPatternMismatches(Workload &w, bench::AccessOrder order) {
  callLayer(w, *engines().engines[FusionStrategy::ConvInsert]);
  std::vector<uint16_t> cache(w.cache->data, w.cache->data + w.cache->size);
  for (auto &y : w.ys)
    std::fill(y->data, y->data + y->size, 0);
  callAccessPattern(w, order);
  int64_t mismatches = 0;
  for (size_t i = 0; i < cache.size(); ++i)
    mismatches += cache[i] != w.cache->data[i];
  StreamPointers p(w);
  return mismatches + bench::accessPatternMismatches(handShape(), w.handTokens,
                                                     cache.data(), p.x,
                                                     p.weights, p.y);
}

/// Set when an access-pattern kernel's output is wrong: the binary then
/// exits with 1 (its smoke test fails).
bool accessPatternWrong = false;

void timeAccessPattern(benchmark::State &state, bench::AccessOrder order,
                       const char *what, bool cold = false) {
  if (!bench::accessPatternSupported()) {
    state.SkipWithError("skipped: this CPU has no AVX-512 F and BW");
    return;
  }
  if (!bench::handDecodeHandles(handShape())) {
    state.SkipWithError("the access-pattern kernel does not handle this "
                        "layout");
    return;
  }
  Workload &w = workload(state.range(0));
  if (!bench::accessPatternAligned(handShape(), w.handTokens, w.cache->data)) {
    state.SkipWithError("the cache's slot rows are not 64-byte aligned: the "
                        "access-pattern kernel's non-temporal stores need it");
    return;
  }
  if (int64_t bad = accessPatternMismatches(w, order)) {
    accessPatternWrong = true;
    state.SkipWithError((std::string(what) + " differs from its reference in " +
                         std::to_string(bad) + " elements")
                            .c_str());
    return;
  }
  auto body = [order](Workload &w) { callAccessPattern(w, order); };
  if (cold)
    timedCold(state, what, body);
  else
    timed(state, what, body);
}

void BM_LayerAccessRuns(benchmark::State &state) {
  timeAccessPattern(state, bench::AccessOrder::Runs, "layer/access-runs");
}
void BM_LayerAccessTokens(benchmark::State &state) {
  timeAccessPattern(state, bench::AccessOrder::TokensPrefetched,
                    "layer/access-tokens");
}

// The decode layer, its bound and the floor of its access pattern from
// cold caches (timedCold).
void BM_LayerConvInsertCold(benchmark::State &state) {
  timedCold(state, "layer/conv-insert-cold", [](Workload &w) {
    callLayer(w, *engines().engines[FusionStrategy::ConvInsert]);
  });
}
void BM_LayerTrafficCopyCold(benchmark::State &state) {
  allocateTrafficBuffers(workload(state.range(0)));
  timedCold(state, "layer/traffic-copy-cold", copyTraffic);
}
void BM_LayerAccessRunsCold(benchmark::State &state) {
  timeAccessPattern(state, bench::AccessOrder::Runs, "layer/access-runs-cold",
                    /*cold=*/true);
}
void BM_LayerAccessTokensCold(benchmark::State &state) {
  timeAccessPattern(state, bench::AccessOrder::TokensPrefetched,
                    "layer/access-tokens-cold", /*cold=*/true);
}

void BM_LayerTokenSeq(benchmark::State &state) {
  timed(state, "layer/token-seq", [](Workload &w) { callLayerSeq(w); });
}

void tokenArgs(benchmark::internal::Benchmark *b) {
  for (int64_t t : kTokenCounts)
    b->Arg(t);
  b->ArgName("T")->UseRealTime();
}

/// The decode step sizes (T < kPrefillTokens).
void decodeSteps(benchmark::internal::Benchmark *b) {
  for (int64_t t : kTokenCounts)
    if (t < kPrefillTokens)
      b->Arg(t);
  b->ArgName("T");
}

void decodeArgs(benchmark::internal::Benchmark *b) {
  decodeSteps(b);
  b->UseRealTime();
}

/// A fixed count: each call follows an emptying of the caches (2-3 ms
/// for the 64 MiB here), which min_time would repeat thousands of times
/// at small T.
void coldArgs(benchmark::internal::Benchmark *b) {
  decodeSteps(b);
  b->UseManualTime()->Iterations(40);
}

BENCHMARK(BM_InsertPacked)->Apply(tokenArgs);
BENCHMARK(BM_InsertSeparate)->Apply(tokenArgs);
BENCHMARK(BM_InsertPackedPlain)->Apply(tokenArgs);
BENCHMARK(BM_InsertSeparatePlain)->Apply(tokenArgs);
BENCHMARK(BM_InsertMemcpy)->Apply(tokenArgs);
BENCHMARK(BM_LayerConvInsert)->Apply(tokenArgs);
BENCHMARK(BM_LayerPacked)->Apply(tokenArgs);
BENCHMARK(BM_LayerNone)->Apply(tokenArgs);
BENCHMARK(BM_LayerTokenSeq)->Apply(tokenArgs);
BENCHMARK(BM_LayerThreads)->Apply(tokenArgs);
BENCHMARK(BM_LayerTokenNest)->Apply(tokenArgs);
BENCHMARK(BM_LayerMemcpy)->Apply(tokenArgs);
BENCHMARK(BM_LayerTrafficCopy)->Apply(tokenArgs);
BENCHMARK(BM_LayerTrafficCopyThreads)->Apply(tokenArgs);
BENCHMARK(BM_LayerPlainStores)->Apply(tokenArgs);
BENCHMARK(BM_LayerPortable)->Apply(decodeArgs);
BENCHMARK(BM_LayerHandAvx512)->Apply(decodeArgs);
BENCHMARK(BM_LayerAccessRuns)->Apply(decodeArgs);
BENCHMARK(BM_LayerAccessTokens)->Apply(decodeArgs);
BENCHMARK(BM_LayerConvInsertCold)->Apply(coldArgs);
BENCHMARK(BM_LayerTrafficCopyCold)->Apply(coldArgs);
BENCHMARK(BM_LayerAccessRunsCold)->Apply(coldArgs);
BENCHMARK(BM_LayerAccessTokensCold)->Apply(coldArgs);

void printSummary() {
  auto &m = secondsPerIteration();
  auto get = [&](const char *what, int64_t t) -> double {
    auto it = m.find(key(what, t));
    return it == m.end() ? 0.0 : it->second;
  };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  std::printf("\nSummary (microseconds per call, best repetition, measured in "
              "this process; a ratio > 1: the first is slower)\n");
  std::printf("%6s | %10s %10s %10s | %13s %15s | %11s %11s %11s | %12s "
              "%10s | %10s %9s\n",
              "T", "packed us", "separ. us", "memcpy us", "packed/memcpy",
              "separate/packed", "c-i us", "packed us", "none us", "packed/c-i",
              "none/c-i", "seq us", "seq/c-i");
  for (int64_t t : kTokenCounts) {
    double packed = get("insert/packed", t),
           separate = get("insert/separate", t), copy = get("insert/memcpy", t),
           ci = get("layer/conv-insert", t), lp = get("layer/packed", t),
           ln = get("layer/none", t), ls = get("layer/token-seq", t);
    if (packed == 0 && ci == 0)
      continue;
    std::printf("%6lld | %10.2f %10.2f %10.2f | %13.2f %15.2f | %11.2f %11.2f "
                "%11.2f | %12.2f %10.2f | %10.2f %9.2f\n",
                static_cast<long long>(t), packed * 1e6, separate * 1e6,
                copy * 1e6, ratio(packed, copy), ratio(separate, packed),
                ci * 1e6, lp * 1e6, ln * 1e6, ratio(lp, ci), ratio(ln, ci),
                ls * 1e6, ratio(ls, ci));
  }

  std::printf("\nInserts with ordinary stores only "
              "(streaming-stores-min-iterations=0)\n");
  std::printf("%6s | %10s %10s | %15s %13s\n", "T", "packed us", "separ. us",
              "separate/packed", "packed/memcpy");
  for (int64_t t : kTokenCounts) {
    double packed = get("insert/packed-plain", t),
           separate = get("insert/separate-plain", t),
           copy = get("insert/memcpy", t);
    if (packed == 0 || separate == 0)
      continue;
    std::printf("%6lld | %10.2f %10.2f | %15.2f %13.2f\n",
                static_cast<long long>(t), packed * 1e6, separate * 1e6,
                ratio(separate, packed), ratio(packed, copy));
  }

  std::printf("\nThreads and the memory bound (conv-insert layer; bound: "
              "memcpy of the layer's traffic, half of it copied; row-scaled: "
              "the row bytes' copy x traffic / 2 row bytes; bound-all: the "
              "same copy split over the %d threads)\n",
              defaultThreadCount());
  std::printf("%6s | %11s %11s %13s | %11s %11s %12s %11s %12s | %11s %13s "
              "| %11s %12s | %11s %14s %14s\n",
              "T", "1-thr us", "all-thr us", "1-thr/all-thr", "traffic KiB",
              "bound us", "1-thr/bound", "row-scaled", "1-thr/scaled",
              "plain us", "1-thr/plain", "(t,h) us", "(t,h)/1-thr",
              "bound-all us", "all/bound-all", "bound 1/all");
  for (int64_t t : kTokenCounts) {
    double one = get("layer/conv-insert", t), all = get("layer/threads", t),
           copy = get("layer/memcpy", t), bound = get("layer/traffic-copy", t),
           plain = get("layer/plain-stores", t),
           nest = get("layer/token-nest", t),
           boundAll = get("layer/traffic-copy-threads", t);
    if (one == 0 || all == 0 || bound == 0)
      continue;
    Workload &w = workload(t);
    double scaled = copy * static_cast<double>(w.layerTraffic) /
                    (2.0 * static_cast<double>(w.rowBytes));
    std::printf("%6lld | %11.2f %11.2f %13.2f | %11.1f %11.2f %12.2f %11.2f "
                "%12.2f | %11.2f %13.2f | %11.2f %12.2f | %11.2f %14.2f "
                "%14.2f\n",
                static_cast<long long>(t), one * 1e6, all * 1e6,
                ratio(one, all), static_cast<double>(w.layerTraffic) / 1024.0,
                bound * 1e6, ratio(one, bound), scaled * 1e6,
                ratio(one, scaled), plain * 1e6, ratio(one, plain), nest * 1e6,
                ratio(nest, one), boundAll * 1e6, ratio(all, boundAll),
                ratio(bound, boundAll));
  }
  std::printf("\nDecode against a hand-written AVX-512 kernel of the same "
              "bits (layer/hand-avx512, checked against conv-insert)\n");
  std::printf("%6s | %11s %11s %12s | %11s %12s %12s\n", "T", "1-thr us",
              "hand us", "1-thr/hand", "bound us", "hand/bound", "1-thr/bound");
  for (int64_t t : kTokenCounts) {
    double one = get("layer/conv-insert", t),
           hand = get("layer/hand-avx512", t),
           bound = get("layer/traffic-copy", t);
    if (one == 0 || hand == 0 || bound == 0)
      continue;
    std::printf("%6lld | %11.2f %11.2f %12.2f | %11.2f %12.2f %12.2f\n",
                static_cast<long long>(t), one * 1e6, hand * 1e6,
                ratio(one, hand), bound * 1e6, ratio(hand, bound),
                ratio(one, bound));
  }
  std::printf("\nDecode's access pattern without its arithmetic (the layer's "
              "loads and stores, xors for its arithmetic; access-runs: the "
              "decode-run nest's order; access-tokens: token by token, the "
              "next token's history rows prefetched; floor: the faster)\n");
  std::printf("%6s | %11s %11s %13s | %11s %11s %12s %12s\n", "T", "1-thr us",
              "runs us", "tokens us", "bound us", "floor/bound", "1-thr/floor",
              "1-thr/bound");
  for (int64_t t : kTokenCounts) {
    double one = get("layer/conv-insert", t),
           runs = get("layer/access-runs", t),
           tokens = get("layer/access-tokens", t),
           bound = get("layer/traffic-copy", t);
    if (one == 0 || runs == 0 || tokens == 0 || bound == 0)
      continue;
    double floor = std::min(runs, tokens);
    std::printf("%6lld | %11.2f %11.2f %13.2f | %11.2f %11.2f %12.2f %12.2f\n",
                static_cast<long long>(t), one * 1e6, runs * 1e6, tokens * 1e6,
                bound * 1e6, ratio(floor, bound), ratio(one, floor),
                ratio(one, bound));
  }
  std::printf("\nDecode from cold caches (every cache level emptied before "
              "each call, as the model's other layers do between two steps "
              "of a layer; the emptying not timed; mean of 40 calls)\n");
  std::printf("%6s | %11s %11s %12s %12s | %11s %11s %11s %12s\n", "T",
              "1-thr us", "bound us", "1-thr/bound", "warm ratio", "runs us",
              "tokens us", "floor/bound", "1-thr/floor");
  for (int64_t t : kTokenCounts) {
    double one = get("layer/conv-insert-cold", t),
           bound = get("layer/traffic-copy-cold", t),
           runs = get("layer/access-runs-cold", t),
           tokens = get("layer/access-tokens-cold", t),
           warmOne = get("layer/conv-insert", t),
           warmBound = get("layer/traffic-copy", t);
    if (one == 0 || bound == 0)
      continue;
    // The faster of the two orders that ran (neither runs without AVX-512).
    double floor = runs > 0 && tokens > 0 ? std::min(runs, tokens)
                                          : std::max(runs, tokens);
    std::printf("%6lld | %11.2f %11.2f %12.2f %12.2f | %11.2f %11.2f %11.2f "
                "%12.2f\n",
                static_cast<long long>(t), one * 1e6, bound * 1e6,
                ratio(one, bound), ratio(warmOne, warmBound), runs * 1e6,
                tokens * 1e6, ratio(floor, bound), ratio(one, floor));
  }
  std::printf("\nDecode's rounding to bf16: AVX512-BF16's vcvtne2ps2bf16 "
              "(layer/conv-insert on this host) against the software "
              "rounding (layer/portable)\n");
  std::printf("%6s | %11s %11s %15s\n", "T", "1-thr us", "portable us",
              "portable/1-thr");
  for (int64_t t : kTokenCounts) {
    double one = get("layer/conv-insert", t),
           portable = get("layer/portable", t);
    if (one == 0 || portable == 0)
      continue;
    std::printf("%6lld | %11.2f %11.2f %15.2f\n", static_cast<long long>(t),
                one * 1e6, portable * 1e6, ratio(portable, one));
  }
  Engines &e = engines();
  std::printf("\nCompile (lower + JIT of the module's three functions): one "
              "thread %.2f s, threaded %.2f s (%.2fx)\n",
              e.compileOneThread, e.compileThreaded,
              ratio(e.compileThreaded, e.compileOneThread));
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  printSummary();
  if (handMismatched) {
    std::fprintf(stderr, "inkling-bench-fusion: layer/hand-avx512 and "
                         "layer/conv-insert differ (see above)\n");
    return 1;
  }
  if (accessPatternWrong) {
    std::fprintf(stderr, "inkling-bench-fusion: an access-pattern kernel's "
                         "output is wrong (see above)\n");
    return 1;
  }
  return 0;
}
