//===- EpilogueBench.cpp - The K/V path fused with its epilogues or not ---===//
//
// inkling-bench-epilogue: the attention K/V path of a decoder layer at the
// real layout (kv_heads 8, head_dim 128, kernel 4, tp 1; attention block
// 16): conv K -> k_norm -> KV write, conv V -> KV write, the two inserts.
// Three programs, JIT-compiled once through inkling-lower-to-cpu:
//
//   fused      the default strategy (conv-insert): one
//              sconv.fused_conv_kv_write ... and_insert (1 nest; y never
//              written)
//   separate   the same ops with y handed in as arguments, so that the
//              epilogues stay separate nests: fused_conv and_insert (K, V),
//              rms_norm, kv_write x 2 (4 nests)
//   none       no fusion at all: 2 convs, 2 inserts, rms_norm, 2 kv_writes
//              (7 nests)
//
// at T = 1, 64, 256 decode tokens (one sequence each at position 6, its
// history in the cache) and 8192 prefill tokens (one sequence from 0), on
// one thread and on every core (threads = 0: OpenMP's default team). Each
// time is the best of 7 repetitions of a loop of at least 50 ms (with
// --cpu-time, of this thread's CPU time in the one-thread rows, for a
// shared machine; the clock is then read once per call); the ratios
// are printed from times measured in this process, with the bytes each
// program moves per token:
//   fused:    x read (K, V), conv-cache rows written, KV rows written
//             (+ the W-1 history rows read per stream in decode)
//   separate: + y written, y read by the norm and the V write, the norm's
//             output written and read (6 rows of H*hd more per token)
// and each program's memory bound measured in the same run: memcpy of half
// the bytes it moves (a copy reads and writes each byte), the same size so
// that the copy runs from the same cache level as the program's working
// set. A program faster than its bound moved fewer bytes through memory
// than it touched (the separate nests' y, written and read back while it
// is still in the last-level cache).
//
// Last, for the decode steps on one thread, the floor of the fused op's
// access pattern (DecodeAccessPattern.h on the K and V streams: its loads
// and stores at its addresses, xors for its arithmetic; checked before it
// is timed): the K/V parts of the cache rows are 512-byte pieces 4 KiB
// apart, which a contiguous copy does not measure.
//
//===----------------------------------------------------------------------===//

#include "BenchSteps.h"
#include "DecodeAccessPattern.h"
#include "Harness/JitHarness.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <time.h>
#include <vector>

using namespace inkling;
using namespace inkling::harness;
using sconv::FusionStrategy;

namespace {

const LayoutConfig kReal{8, 128, 4096, 4, 1, "bf16"};
constexpr int64_t kKvBlock = 16;
constexpr int64_t kPrefill = 8192;

using Mem4 = StridedMemRefType<uint16_t, 4>;
/// @fused(meta..., k, v, wk, wv, kn, kc, vc, aslots)
using FusedFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                         Mem3 *, Mem3 *, Mem2 *, Mem2 *, Mem1 *, Mem4 *, Mem4 *,
                         MemI64 *);
/// @separate(..., yk, yv, nk)
using SeparateFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                            Mem3 *, Mem3 *, Mem2 *, Mem2 *, Mem1 *, Mem4 *,
                            Mem4 *, MemI64 *, Mem3 *, Mem3 *, Mem3 *);

std::string buildModule(const Layout &layout, int64_t pageBytes) {
  LayerText text(kReal, layout, pageBytes);
  int64_t h = layout.headsPerRank, hd = layout.config.headDim;
  std::string x = typeOfStream(layout, Stream::K, false, false);
  std::string kv = "memref<?x" + std::to_string(kKvBlock) + "x" +
                   std::to_string(h) + "x" + std::to_string(hd) +
                   "xbf16, strided<[" + std::to_string(kKvBlock * h * hd) +
                   ", " + std::to_string(h * hd) + ", " + std::to_string(hd) +
                   ", 1]>>";
  std::string l = text.layout(), w = text.weightsType(Stream::K);
  std::string nw = "memref<" + std::to_string(hd) + "xbf16>";
  const char *na = " {llvm.noalias}";
  std::ostringstream os;
  auto signature = [&](const char *name, bool ys) {
    os << "func.func @" << name << "(" << LayerText::metadataParams(true)
       << ", %k: " << x << na << ", %v: " << x << na << ", %wk: " << w << na
       << ", %wv: " << w << na << ", %kn: " << nw << na << ", %kc: " << kv << na
       << ", %vc: " << kv << na << ", %aslots: memref<?xi64>" << na;
    if (ys)
      os << ", %yk: " << x << na << ", %yv: " << x << na << ", %nk: " << x
         << na;
    os << ") {\n" << text.bindAndStep();
  };
  auto body = [&] {
    os << text.conv({"k", "wk", "", "yk"}, Stream::K, x)
       << text.insert("k", Stream::K, x)
       << text.conv({"v", "wv", "", "yv"}, Stream::V, x)
       << text.insert("v", Stream::V, x)
       << "  sconv.rms_norm %yk weight %kn eps 1.0e-06 layout " << l
       << " stream k into %nk : " << x << ", " << nw << " -> " << x << "\n"
       << "  sconv.kv_write %nk into %kc slots %aslots layout " << l
       << " stream k : " << x << ", " << kv << ", memref<?xi64>\n"
       << "  sconv.kv_write %yv into %vc slots %aslots layout " << l
       << " stream v : " << x << ", " << kv << ", memref<?xi64>\n";
  };
  os << "module {\n";
  signature("fused", false);
  os << "  %c0 = arith.constant 0 : index\n  %t = memref.dim %k, %c0 : " << x
     << "\n";
  for (const char *y : {"yk", "yv", "nk"})
    os << "  %" << y << " = memref.alloc(%t) : " << x << "\n";
  body();
  for (const char *y : {"yk", "yv", "nk"})
    os << "  memref.dealloc %" << y << " : " << x << "\n";
  os << "  return\n}\n";
  signature("separate", true);
  body();
  os << "  return\n}\n}\n";
  return os.str();
}

struct Workload {
  reference::StepMetadata meta;
  std::unique_ptr<AlignedBuffer<uint16_t>> cache, k, v, yk, yv, nk, wk, wv, kn,
      kc, vc;
  std::vector<int64_t> attnSlots;
  /// Decode: each token's history and slot rows, for the access-pattern
  /// floor.
  std::vector<bench::HandDecodeToken> handTokens;
  Call call;
  Mem3 kd, vd, ykd, yvd, nkd;
  Mem2 wkd, wvd;
  Mem1 knd;
  Mem4 kcd, vcd;
  MemI64 aslots;
};

std::unique_ptr<Workload> makeWorkload(const Layout &layout, int64_t pageBytes,
                                       int64_t tokens) {
  auto w = std::make_unique<Workload>();
  int64_t n = layout.blockSize, h = layout.headsPerRank,
          hd = layout.config.headDim, row = h * hd;
  bench::BenchStep step = bench::benchStep(tokens, kPrefill, n);
  w->meta = step.meta;
  int64_t numBlocks = step.numBlocks;
  if (tokens < kPrefill)
    w->handTokens = bench::handDecodeTokens(w->meta, layout, pageBytes / 2);
  std::mt19937_64 rng(7);
  auto buffer = [&](int64_t count, float scale) {
    auto b = std::make_unique<AlignedBuffer<uint16_t>>(count, 0);
    for (size_t i = 0; i < b->size; ++i)
      b->data[i] = randomBf16(rng, scale);
    return b;
  };
  w->cache = buffer(numBlocks * pageBytes / 2, 2.0f);
  w->call = makeCall(w->cache->data, numBlocks * pageBytes, w->meta);
  w->k = buffer(tokens * row, 2.0f);
  w->v = buffer(tokens * row, 2.0f);
  w->yk = buffer(tokens * row, 0.0f);
  w->yv = buffer(tokens * row, 0.0f);
  w->nk = buffer(tokens * row, 0.0f);
  w->wk = buffer(row * 4, 1.0f);
  w->wv = buffer(row * 4, 1.0f);
  w->kn = buffer(hd, 1.0f);
  int64_t kvBlocks = tokens / kKvBlock + 1;
  w->kc = buffer(kvBlocks * kKvBlock * row, 0.0f);
  w->vc = buffer(kvBlocks * kKvBlock * row, 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    w->attnSlots.push_back(t);
  auto three = [&](AlignedBuffer<uint16_t> &b) {
    return descriptor<uint16_t, 3>(b.data, {tokens, h, hd}, {row, hd, 1});
  };
  w->kd = three(*w->k);
  w->vd = three(*w->v);
  w->ykd = three(*w->yk);
  w->yvd = three(*w->yv);
  w->nkd = three(*w->nk);
  w->wkd = descriptor<uint16_t, 2>(w->wk->data, {row, 4}, {4, 1});
  w->wvd = descriptor<uint16_t, 2>(w->wv->data, {row, 4}, {4, 1});
  w->knd = descriptor<uint16_t, 1>(w->kn->data, {hd}, {1});
  auto four = [&](AlignedBuffer<uint16_t> &b) {
    return descriptor<uint16_t, 4>(b.data, {kvBlocks, kKvBlock, h, hd},
                                   {kKvBlock * row, row, hd, 1});
  };
  w->kcd = four(*w->kc);
  w->vcd = four(*w->vc);
  w->aslots = descriptor<int64_t, 1>(w->attnSlots.data(), {tokens}, {1});
  return w;
}

/// Seconds on the wall clock, or of this thread's CPU time (`cpuTime`: the
/// one-thread rows on a shared machine, where other processes take the
/// core away; memory traffic of theirs still counts).
double now(bool cpuTime) {
  if (!cpuTime)
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Best seconds per call over 7 repetitions of >= 50 ms each.
template <typename Body> double bestSeconds(Body body, bool cpuTime) {
  body();
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    int64_t calls = 0;
    double start = now(cpuTime), elapsed = 0;
    do {
      body();
      ++calls;
      elapsed = now(cpuTime) - start;
    } while (elapsed < 0.05);
    best = std::min(best, elapsed / static_cast<double>(calls));
  }
  return best;
}

/// The fused op's decode access pattern without its arithmetic
/// (DecodeAccessPattern.h on the K and V streams: x, the three history rows
/// and the weights' lines loaded, x stored at the slot row, the xor at the
/// token's KV-cache row, attention slot t), in `order`; 0 when this machine
/// or layout cannot run it. Its output is checked first against the fused
/// op's cache, which the workload holds after a call, and against
/// bench::accessPatternMismatches: a floor that skipped a row is no floor.
double accessFloor(Workload &w, const Layout &layout, bench::AccessOrder order,
                   bool cpuTime) {
  bench::HandDecodeShape shape =
      bench::handDecodeShape(layout, {Stream::K, Stream::V});
  if (!bench::accessPatternSupported() || !bench::handDecodeHandles(shape) ||
      !bench::accessPatternAligned(shape, w.handTokens, w.cache->data))
    return 0;
  const uint16_t *x[4] = {w.k->data, w.v->data},
                 *weights[4] = {w.wk->data, w.wv->data};
  uint16_t *y[4] = {w.kc->data, w.vc->data};
  auto call = [&] {
    bench::decodeAccessPattern(order, shape, w.handTokens, w.cache->data, x,
                               weights, y);
  };
  std::vector<uint16_t> cache(w.cache->data, w.cache->data + w.cache->size);
  call();
  int64_t bad = bench::accessPatternMismatches(shape, w.handTokens,
                                               cache.data(), x, weights, y);
  for (size_t i = 0; i < cache.size(); ++i)
    bad += cache[i] != w.cache->data[i];
  if (bad) {
    std::fprintf(stderr,
                 "inkling-bench-epilogue: the access-pattern floor differs "
                 "from its reference in %lld elements\n",
                 static_cast<long long>(bad));
    std::exit(1);
  }
  return bestSeconds(call, cpuTime);
}

} // namespace

int main(int argc, char **argv) {
  // Optional: --cpu-time (the one-thread rows timed by this thread's CPU
  // time), then one token count only.
  bool cpuTime = argc > 1 && std::string(argv[1]) == "--cpu-time";
  if (cpuTime) {
    --argc;
    ++argv;
  }
  int64_t only = argc > 1 ? std::atoll(argv[1]) : 0;
  Layout layout = *Layout::derive(kReal);
  int64_t pageBytes = layout.pageBytes();
  std::string source = buildModule(layout, pageBytes);
  struct Program {
    const char *name;
    FusionStrategy strategy;
    const char *function;
  };
  const Program programs[] = {
      {"fused", FusionStrategy::ConvInsert, "fused"},
      {"separate", FusionStrategy::ConvInsert, "separate"},
      {"none", FusionStrategy::None, "separate"},
  };
  std::unique_ptr<exec::JitEngine> engines[2][2];
  for (int threads : {0, 1})
    for (int s = 0; s < 2; ++s) {
      CompileOptions options;
      options.fusion =
          s == 0 ? FusionStrategy::ConvInsert : FusionStrategy::None;
      options.threads = threads == 0 ? 1 : 0;
      std::string error;
      engines[threads][s] = compile(source, options, error);
      if (!engines[threads][s]) {
        std::fprintf(stderr, "inkling-bench-epilogue: %s\n", error.c_str());
        return 1;
      }
    }
  int64_t row = layout.headsPerRank * layout.config.headDim * 2;
  std::printf("K/V path at the real layout; bytes per token: fused %lld "
              "(+%lld history in decode), separate and none %lld more\n",
              static_cast<long long>(6 * row), static_cast<long long>(6 * row),
              static_cast<long long>(6 * row));
  std::printf("%7s %6s | %10s %10s %10s | %14s %10s | %11s %11s %11s "
              "%14s\n",
              "threads", "T", "fused us", "separ. us", "none us",
              "separate/fused", "none/fused", "f-bound us", "fused/bound",
              "s-bound us", "separate/bound");
  struct Floor {
    int64_t tokens;
    double fused, bound, runs, tokenOrder;
  };
  std::vector<Floor> floors;
  for (int threads : {0, 1}) {
    for (int64_t tokens : {int64_t(1), int64_t(64), int64_t(256), kPrefill}) {
      if (only && tokens != only)
        continue;
      auto w = makeWorkload(layout, pageBytes, tokens);
      // The bounds: a copy of half of each program's traffic.
      int64_t fusedBytes = (tokens == kPrefill ? 6 : 12) * row * tokens;
      int64_t separateBytes = fusedBytes + 6 * row * tokens;
      AlignedBuffer<uint8_t> from(separateBytes / 2, 1),
          to(separateBytes / 2, 0);
      auto copyOf = [&](int64_t bytes) {
        return bestSeconds(
            [&] {
              std::memcpy(to.data, from.data, bytes / 2);
              asm volatile("" : : "r"(to.data) : "memory");
            },
            cpuTime && threads == 0);
      };
      double fusedBound = copyOf(fusedBytes),
             separateBound = copyOf(separateBytes);
      double seconds[3];
      for (int p = 0; p < 3; ++p) {
        const Program &program = programs[p];
        auto &engine =
            engines[threads][program.strategy == FusionStrategy::None];
        void *address = lookupFunction(*engine, program.function);
        Call &c = w->call;
        Workload &x = *w;
        if (std::string(program.function) == "fused")
          seconds[p] = bestSeconds(
              [&] {
                reinterpret_cast<FusedFn>(address)(
                    &c.cache, &c.qsl, &c.nc, &c.bt, &c.slots, &x.kd, &x.vd,
                    &x.wkd, &x.wvd, &x.knd, &x.kcd, &x.vcd, &x.aslots);
              },
              cpuTime && threads == 0);
        else
          seconds[p] = bestSeconds(
              [&] {
                reinterpret_cast<SeparateFn>(address)(
                    &c.cache, &c.qsl, &c.nc, &c.bt, &c.slots, &x.kd, &x.vd,
                    &x.wkd, &x.wvd, &x.knd, &x.kcd, &x.vcd, &x.aslots, &x.ykd,
                    &x.yvd, &x.nkd);
              },
              cpuTime && threads == 0);
      }
      if (threads == 0 && tokens < kPrefill)
        floors.push_back(
            {tokens, seconds[0], fusedBound,
             accessFloor(*w, layout, bench::AccessOrder::Runs, cpuTime),
             accessFloor(*w, layout, bench::AccessOrder::TokensPrefetched,
                         cpuTime)});
      std::printf("%7s %6lld | %10.2f %10.2f %10.2f | %14.2f %10.2f | %11.2f "
                  "%11.2f %11.2f %14.2f\n",
                  threads == 0 ? "1" : "all", static_cast<long long>(tokens),
                  seconds[0] * 1e6, seconds[1] * 1e6, seconds[2] * 1e6,
                  seconds[1] / seconds[0], seconds[2] / seconds[0],
                  fusedBound * 1e6, seconds[0] / fusedBound,
                  separateBound * 1e6, seconds[1] / separateBound);
    }
  }
  std::printf("\nDecode's access pattern without its arithmetic, one thread "
              "(the fused op's loads and stores, xors for its arithmetic; "
              "runs: its decode nest's order, runs of 4 tokens; tokens: token "
              "by token, the next one's history rows prefetched; floor: the "
              "faster)\n%6s | %10s %10s %10s | %10s %11s %11s %11s\n",
              "T", "fused us", "runs us", "tokens us", "f-bound us",
              "floor/bound", "fused/floor", "fused/bound");
  for (const Floor &f : floors) {
    if (f.runs == 0 || f.tokenOrder == 0) {
      std::printf("%6lld | skipped: no AVX-512 F and BW, or rows not 64-byte "
                  "aligned\n",
                  static_cast<long long>(f.tokens));
      continue;
    }
    double floor = std::min(f.runs, f.tokenOrder);
    std::printf("%6lld | %10.2f %10.2f %10.2f | %10.2f %11.2f %11.2f %11.2f\n",
                static_cast<long long>(f.tokens), f.fused * 1e6, f.runs * 1e6,
                f.tokenOrder * 1e6, f.bound * 1e6, floor / f.bound,
                f.fused / floor, f.fused / f.bound);
  }
  return 0;
}
