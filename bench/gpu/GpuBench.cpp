//===- GpuBench.cpp - Check and time the kernel bundles on a GPU ----------===//
//
// For each bundle given (`--bundle NAME=DIR`, as inkling-gpu-write-kernels
// wrote it for examples/decoder_layer.mlir, unfused or after sconv-fuse):
//   1. parses its manifest (also without a GPU: the writer and the runtime's
//      reader must agree);
//   2. runs host function `decoder_layer` through the runtime's launcher on
//      random data (a step of --tokens tokens in sequences of 1..3 tokens at
//      random positions, history through a shuffled block table) and
//      compares the cache and the four outputs with the reference of
//      inkling/Runtime/Reference.h bit for bit;
//   3. times every kernel and the whole layer with CUDA events after
//      warm-up (median of --runs), and a device-to-device copy of the bytes
//      the layer moves.
// Prints one table. Without a driver: the reason, exit code 77 (skipped).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/Cuda.h"
#include "inkling/Runtime/KernelManifest.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::cuda;
using namespace inkling::reference;

namespace {

constexpr int kSkipped = 77;
constexpr int64_t kPageBytes = 131072;

struct Options {
  std::vector<std::pair<std::string, std::string>> bundles;
  int64_t tokens = 256;
  int runs = 200;
  int warmup = 20;
  uint64_t seed = 1;
  std::string cudaDriver; ///< Empty: the system driver.
};

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "inkling-gpu-bench: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status &s, const char *what) {
  if (!s.isOk())
    fail(std::string(what) + ": " + s.toString());
}

/// The decoder layer's step and buffers on the host.
struct Problem {
  Layout layout;
  StepMetadata step;
  int64_t numBlocks = 0;
  int64_t blockStride = 0;
  std::vector<uint16_t> cache; // numBlocks * blockStride elements
  std::array<std::vector<uint16_t>, 4> x, w, y;
  std::array<int64_t, 4> width{};
  std::vector<int32_t> tokenSeq; ///< The sequence of each token.
};

Problem makeProblem(int64_t tokens, uint64_t seed) {
  LayoutConfig config;
  config.kvHeads = 8;
  config.headDim = 128;
  config.hidden = 4096;
  config.kernel = 4;
  config.tp = 1;
  auto layout = Layout::derive(config);
  if (!layout)
    fail(layout.status().toString());
  Problem p;
  p.layout = *layout;
  std::mt19937_64 rng(seed);
  const int64_t n = p.layout.blockSize;
  const int64_t maxPosition = 61; // history up to 61 positions back
  const int64_t width = (maxPosition + 3) / n + 2;
  // Sequences of 1..3 tokens until `tokens` are placed.
  p.step.queryStartLoc = {0};
  while (p.step.queryStartLoc.back() < tokens) {
    int64_t len =
        std::min<int64_t>(1 + rng() % 3, tokens - p.step.queryStartLoc.back());
    p.step.queryStartLoc.push_back(
        static_cast<int32_t>(p.step.queryStartLoc.back() + len));
    p.step.numComputed.push_back(static_cast<int32_t>(rng() % maxPosition));
  }
  int64_t batch = static_cast<int64_t>(p.step.numComputed.size());
  p.step.blockTableWidth = width;
  p.numBlocks = 1 + batch * width;
  std::vector<int32_t> physical(p.numBlocks - 1);
  std::iota(physical.begin(), physical.end(), 1);
  std::shuffle(physical.begin(), physical.end(), rng);
  p.step.blockTable.assign(batch * width, 0);
  for (int64_t i = 0; i < batch * width; ++i)
    p.step.blockTable[i] = physical[i];
  p.step.slotMapping.resize(tokens);
  p.tokenSeq.resize(tokens);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = p.step.queryStartLoc[b]; t < p.step.queryStartLoc[b + 1];
         ++t) {
      p.tokenSeq[t] = static_cast<int32_t>(b);
      int64_t pos = p.step.numComputed[b] + t - p.step.queryStartLoc[b];
      p.step.slotMapping[t] =
          int64_t(p.step.blockTable[b * width + pos / n]) * n + pos % n;
    }
  p.blockStride = kPageBytes / 2;
  p.cache.resize(p.numBlocks * p.blockStride);
  // Finite, moderate values: bf16 of N(0, 1).
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t> &v, size_t count) {
    v.resize(count);
    for (auto &e : v)
      e = floatToBf16(normal(rng));
  };
  fill(p.cache, p.cache.size());
  const int64_t h = p.layout.headsPerRank;
  for (int s = 0; s < 4; ++s) {
    p.width[s] = p.layout.range(kAllStreams[s]).width;
    fill(p.x[s], tokens * h * p.width[s]);
    fill(p.w[s], h * p.width[s] * config.kernel);
    p.y[s].assign(tokens * h * p.width[s], 0);
  }
  return p;
}

/// The reference: four convs on the cache as given, then four inserts.
void computeReference(const Problem &p, std::vector<uint16_t> &cache,
                      std::array<std::vector<uint16_t>, 4> &y) {
  cache = p.cache;
  const int64_t h = p.layout.headsPerRank;
  CacheBuffer view{cache.data(), p.blockStride, p.numBlocks};
  for (int s = 0; s < 4; ++s) {
    y[s].assign(p.y[s].size(), 0);
    referenceConv(p.layout, kAllStreams[s], {p.x[s].data(), h * p.width[s]},
                  p.w[s].data(), p.step, view, ConvOptions{},
                  {y[s].data(), h * p.width[s]});
  }
  for (int s = 0; s < 4; ++s)
    referenceInsert(p.layout, kAllStreams[s], {p.x[s].data(), h * p.width[s]},
                    p.step, view);
}

/// Device copies of the problem and the host arguments of decoder_layer.
struct DeviceProblem {
  DeviceBuffer cache, qsl, nc, bt, slots, tokenSeq;
  std::array<DeviceBuffer, 4> x, w, y;
  std::vector<MemRefArg> args;
};

template <typename T> DeviceBuffer upload(Driver &d, const std::vector<T> &v) {
  auto buf = DeviceBuffer::allocate(d, v.size() * sizeof(T));
  if (!buf)
    fail(buf.status().toString());
  check(d.copyToDevice(buf->address(), v.data(), v.size() * sizeof(T)),
        "upload");
  return std::move(*buf);
}

DeviceProblem uploadProblem(Driver &d, const Problem &p) {
  DeviceProblem dp;
  dp.cache = upload(d, p.cache);
  dp.qsl = upload(d, p.step.queryStartLoc);
  dp.nc = upload(d, p.step.numComputed);
  dp.bt = upload(d, p.step.blockTable);
  dp.slots = upload(d, p.step.slotMapping);
  dp.tokenSeq = upload(d, p.tokenSeq);
  for (int s = 0; s < 4; ++s) {
    dp.x[s] = upload(d, p.x[s]);
    dp.w[s] = upload(d, p.w[s]);
    dp.y[s] = upload(d, p.y[s]);
  }
  const int64_t t = p.step.numTokens(), h = p.layout.headsPerRank;
  const int64_t batch = p.step.numSequences();
  auto stream = [&](int s) -> std::vector<int64_t> {
    if (s < 2)
      return {t, h, p.width[s]};
    return {t, h * p.width[s]};
  };
  // decoder_layer(%buffer, %qsl, %num_computed, %block_table, %slots,
  //               %token_seq, %k, %v, %attn, %mlp, %wk, %wv, %wattn, %wmlp,
  //               %yk, %yv, %yattn, %ymlp)
  dp.args = {
      {dp.cache.address(), {static_cast<int64_t>(p.cache.size() * 2)}, {}},
      {dp.qsl.address(), {batch + 1}, {}},
      {dp.nc.address(), {batch}, {}},
      {dp.bt.address(), {batch, p.step.blockTableWidth}, {}},
      {dp.slots.address(), {t}, {}},
      {dp.tokenSeq.address(), {t}, {}},
  };
  for (int s = 0; s < 4; ++s)
    dp.args.push_back({dp.x[s].address(), stream(s), {}});
  for (int s = 0; s < 4; ++s)
    dp.args.push_back(
        {dp.w[s].address(), {h * p.width[s], p.layout.config.kernel}, {}});
  for (int s = 0; s < 4; ++s)
    dp.args.push_back({dp.y[s].address(), stream(s), {}});
  return dp;
}

template <typename T>
std::vector<T> download(Driver &d, const DeviceBuffer &b, size_t count) {
  std::vector<T> v(count);
  check(d.copyToHost(v.data(), b.address(), count * sizeof(T)), "download");
  return v;
}

/// Bytes a decoder layer step moves at least: per token and stream, x read,
/// y written, the row stored and W-1 history rows read; plus the weights.
int64_t layerBytes(const Problem &p) {
  const int64_t t = p.step.numTokens(), h = p.layout.headsPerRank;
  const int64_t kernel = p.layout.config.kernel;
  int64_t bytes = 0;
  for (int s = 0; s < 4; ++s)
    bytes +=
        2 * (t * h * p.width[s] * (3 + (kernel - 1)) + h * p.width[s] * kernel);
  return bytes;
}

template <typename F> double medianUs(Driver &d, int warmup, int runs, F f) {
  for (int i = 0; i < warmup; ++i)
    check(f(), "warm-up");
  check(d.synchronize(), "synchronize");
  auto start = d.createEvent(), end = d.createEvent();
  if (!start || !end)
    fail("cuEventCreate failed");
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    check(d.record(*start), "record");
    check(f(), "launch");
    check(d.record(*end), "record");
    auto ms = d.elapsedMs(*start, *end);
    if (!ms)
      fail(ms.status().toString());
    us.push_back(*ms * 1000.0);
  }
  (void)d.destroyEvent(*start);
  (void)d.destroyEvent(*end);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

} // namespace

/// The command line, through llvm::cl (static: the parser keeps pointers to
/// the options).
static Options parseOptions(int argc, char **argv) {
  static llvm::cl::OptionCategory category("inkling-gpu-bench options");
  static llvm::cl::list<std::string> bundles(
      "bundle", llvm::cl::cat(category),
      llvm::cl::desc("A kernel bundle: NAME=DIR (or DIR)"),
      llvm::cl::value_desc("NAME=DIR"));
  static llvm::cl::opt<int64_t> tokens("tokens", llvm::cl::cat(category),
                                       llvm::cl::desc("Tokens of the step"),
                                       llvm::cl::init(256));
  static llvm::cl::opt<int> runs("runs", llvm::cl::cat(category),
                                 llvm::cl::desc("Timed runs (the median)"),
                                 llvm::cl::init(200));
  static llvm::cl::opt<int> warmup("warmup", llvm::cl::cat(category),
                                   llvm::cl::desc("Untimed runs first"),
                                   llvm::cl::init(20));
  static llvm::cl::opt<uint64_t> seed("seed", llvm::cl::cat(category),
                                      llvm::cl::desc("Random data seed"),
                                      llvm::cl::init(1));
  static llvm::cl::opt<std::string> cudaDriver(
      "cuda-driver", llvm::cl::cat(category),
      llvm::cl::desc("The CUDA driver library (default: the system's "
                     "libcuda.so.1; the fake driver of the tests executes "
                     "the kernels on the CPU: the check holds, the times "
                     "mean nothing)"),
      llvm::cl::value_desc("LIBRARY"));
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "checks the kernel bundles against the CPU reference on a "
      "GPU and times them\n");
  Options opt;
  for (const std::string &v : bundles) {
    size_t eq = v.find('=');
    if (eq == std::string::npos)
      opt.bundles.push_back({v, v});
    else
      opt.bundles.push_back({v.substr(0, eq), v.substr(eq + 1)});
  }
  opt.tokens = tokens;
  opt.runs = runs;
  opt.warmup = warmup;
  opt.seed = seed;
  opt.cudaDriver = cudaDriver;
  return opt;
}

int main(int argc, char **argv) {
  Options opt = parseOptions(argc, argv);
  if (opt.bundles.empty() || opt.tokens < 1 || opt.runs < 1)
    fail("need at least one --bundle, --tokens >= 1, --runs >= 1");

  // 1. Manifests, without a GPU.
  std::vector<KernelManifest> manifests;
  for (auto &[name, dir] : opt.bundles) {
    auto m = KernelManifest::load(dir);
    if (!m)
      fail(name + ": " + m.status().toString());
    if (!m->findHost("decoder_layer"))
      fail(name + ": the bundle has no host function decoder_layer");
    std::printf("bundle %-8s %s: %zu kernels, %zu launches, %s for %s\n",
                name.c_str(), dir.c_str(), m->kernels.size(),
                m->findHost("decoder_layer")->launches.size(),
                m->format.c_str(), m->chip.c_str());
    manifests.push_back(std::move(*m));
  }

  // The problem and its reference (on the CPU, also without a GPU).
  Problem p = makeProblem(opt.tokens, opt.seed);
  std::vector<uint16_t> refCache;
  std::array<std::vector<uint16_t>, 4> refY;
  computeReference(p, refCache, refY);
  const int64_t bytes = layerBytes(p);

  // 2. The device.
  std::unique_ptr<Driver> loaded;
  StatusOr<Driver *> driverOr = unavailable("");
  if (opt.cudaDriver.empty()) {
    driverOr = Driver::get();
  } else if (auto l = Driver::load(opt.cudaDriver)) {
    loaded = std::move(*l);
    driverOr = loaded.get();
  } else {
    driverOr = l.status();
  }
  if (!driverOr) {
    std::printf("inkling-gpu-bench: %s: skipping the GPU run\n",
                driverOr.status().message().c_str());
    return kSkipped;
  }
  Driver &d = **driverOr;
  std::printf("device: %s (sm_%d), driver %d\n", d.deviceName().c_str(),
              d.computeCapability(), d.driverVersion());
  if (d.emulates())
    std::printf("the driver executes the kernels on the CPU (an emulator): "
                "the check below holds, the timings mean nothing\n");

  struct Row {
    std::string name;
    int launches;
    double us;
    std::string check;
  };
  std::vector<Row> rows;
  bool allOk = true;
  for (size_t bi = 0; bi < opt.bundles.size(); ++bi) {
    const std::string &name = opt.bundles[bi].first;
    auto bundle = KernelBundle::load(d, opt.bundles[bi].second);
    if (!bundle)
      fail(name + ": " + bundle.status().toString());
    DeviceProblem dp = uploadProblem(d, p);
    check((*bundle)->run("decoder_layer", dp.args), "run");
    check(d.synchronize(), "synchronize");
    auto cache = download<uint16_t>(d, dp.cache, p.cache.size());
    int64_t cacheDiff = 0, yDiff = 0;
    for (size_t i = 0; i < cache.size(); ++i)
      cacheDiff += cache[i] != refCache[i];
    for (int s = 0; s < 4; ++s) {
      auto y = download<uint16_t>(d, dp.y[s], p.y[s].size());
      for (size_t i = 0; i < y.size(); ++i)
        yDiff += y[i] != refY[s][i];
    }
    bool ok = cacheDiff == 0 && yDiff == 0;
    allOk &= ok;
    char verdict[128];
    std::snprintf(verdict, sizeof(verdict),
                  ok ? "bit-exact"
                     : "MISMATCH: %" PRId64 " cache, %" PRId64
                       " output elements",
                  cacheDiff, yDiff);

    // Per kernel, then the whole layer.
    const HostSpec *host = (*bundle)->manifest().findHost("decoder_layer");
    auto bound = (*bundle)->bindLaunches("decoder_layer", dp.args);
    check(bound.status(), "bind");
    for (size_t i = 0; i < host->launches.size(); ++i) {
      const LaunchSpec &launch = host->launches[i];
      double us = medianUs(d, opt.warmup, opt.runs, [&] {
        return (*bundle)->launch(launch.kernel, (*bound)[i]);
      });
      rows.push_back({name + ": " + launch.kernel, 1, us, ""});
    }
    double us = medianUs(d, opt.warmup, opt.runs, [&] {
      return (*bundle)->run("decoder_layer", dp.args);
    });
    rows.push_back({name + ": whole layer",
                    static_cast<int>(host->launches.size()), us, verdict});
  }

  // A device-to-device copy that moves the same bytes (reads and writes
  // half each).
  {
    auto src = DeviceBuffer::allocate(d, bytes / 2);
    auto dst = DeviceBuffer::allocate(d, bytes / 2);
    if (!src || !dst)
      fail("allocation for the copy failed");
    double us = medianUs(d, opt.warmup, opt.runs, [&] {
      return d.copyOnDevice(dst->address(), src->address(), bytes / 2);
    });
    rows.push_back({"cuMemcpyDtoD of the layer's bytes", 1, us, ""});
  }

  std::printf("\nT = %" PRId64 " tokens in %" PRId64
              " sequences, decoder layer moves %.2f MB; median of %d runs "
              "after %d warm-up\n\n",
              p.step.numTokens(), p.step.numSequences(), bytes / 1e6, opt.runs,
              opt.warmup);
  std::printf("| %-44s | launches | median us | GB/s (layer bytes) | check |\n",
              "kernel");
  std::printf("|%s|---------:|----------:|-------------------:|-------|\n",
              std::string(46, '-').c_str());
  for (const Row &r : rows) {
    bool whole = r.name.find("whole layer") != std::string::npos ||
                 r.name.rfind("cuMemcpy", 0) == 0;
    char rate[32] = "";
    if (whole)
      std::snprintf(rate, sizeof(rate), "%.0f", bytes / (r.us * 1e3));
    std::printf("| %-44s | %8d | %9.2f | %18s | %s |\n", r.name.c_str(),
                r.launches, r.us, rate, r.check.c_str());
  }
  return allOk ? 0 : 1;
}
