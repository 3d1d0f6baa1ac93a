//===- LayoutPropertyTest.cpp - Random layouts against the reference ------===//
//
// A property test of the loop lowering: random layouts that the dialect
// accepts (kernel 1..8, widths that are mostly not multiples of 8, tp up to
// kv_heads, block size N drawn independently of W, exact, padded and
// cross-layer block strides, dense or strided
// stream rows), each lowered with `inkling-lower-to-cpu` in the unfused
// form and in both loop forms of the fused ops (the CPU's per-stream inner
// loops and the GPU's loop over the concatenated chunks, run here on the
// CPU), JIT-compiled and run on random mixed batches. The layer (conv then
// insert, per stream, random conv variants) must give the independent
// reference's bits (inkling/Runtime/Reference.h): every output buffer and the
// whole cache buffer, poisoned first. SiLU within 1 bf16 ulp (docs/Design.md
// section 4).
//
// The alignment claims of the lowering are what this guards: a vector
// access claiming 16 bytes at an address that is not a multiple of 16
// faults on x86 (vmovdqa) and on a GPU. The layouts are drawn from a fixed
// seed (INKLING_PROPERTY_SEED overrides it, INKLING_PROPERTY_LAYOUTS the
// count), so a failure names a reproducible layout. Each compile is of a
// distinct layout: the layouts are dealt round-robin to kShards test cases
// (layout n to shard n % kShards, drawn in one sequence whatever the shard),
// which ctest runs in parallel.
//
//===----------------------------------------------------------------------===//

#include "Harness/Compare.h"
#include "Harness/JitHarness.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Reference.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>

using namespace inkling;
using namespace inkling::harness;
using namespace inkling::reference;

namespace {

constexpr uint16_t kPoison = 0xFFFF;

/// One generated case. `blockSize` is the block size N the case is drawn
/// for (the layout attribute's `block_size`); the test asserts that the
/// derived layout agrees.
struct PropertyCase {
  LayoutConfig config;
  int64_t blockSize = 0;
  /// Block stride in bytes: the page, a padded page, or a cross-layer
  /// block of `layers` pages (each rounded up to 16 bytes), this layer's
  /// page at `baseBytes` into the block.
  int64_t pageBytes = 0;
  int64_t baseBytes = 0;
  bool stridedStreams = false;
  std::string describe() const {
    std::ostringstream os;
    os << "kv_heads " << config.kvHeads << ", head_dim " << config.headDim
       << ", hidden " << config.hidden << ", kernel " << config.kernel
       << ", tp " << config.tp << ", N " << blockSize << ", block stride "
       << pageBytes << " bytes, base +" << baseBytes
       << (stridedStreams ? ", strided rows" : "");
    return os.str();
  }
};

int64_t envOr(const char *name, int64_t fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::strtoll(value, nullptr, 10) : fallback;
}

/// Widths not multiples of 8 most of the time; a multiple now and then.
int64_t drawWidth(std::mt19937_64 &rng) {
  std::uniform_int_distribution<int64_t> any(1, 40), eights(1, 5);
  return std::bernoulli_distribution(0.2)(rng) ? 8 * eights(rng) : any(rng);
}

PropertyCase drawCase(std::mt19937_64 &rng) {
  PropertyCase c;
  std::uniform_int_distribution<int64_t> heads(1, 8), kernel(1, 8);
  c.config.kvHeads = heads(rng);
  c.config.headDim = drawWidth(rng);
  c.config.hidden = c.config.kvHeads * drawWidth(rng);
  c.config.kernel = kernel(rng);
  // tp: any divisor of kv_heads.
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= c.config.kvHeads; ++d)
    if (c.config.kvHeads % d == 0)
      divisors.push_back(d);
  c.config.tp = divisors[std::uniform_int_distribution<size_t>(
      0, divisors.size() - 1)(rng)];
  // N: the kernel's default half the time, else any of 1..2W+1 (N < W-1,
  // where a history spans several blocks, included).
  c.blockSize = std::bernoulli_distribution(0.5)(rng)
                    ? c.config.kernel
                    : std::uniform_int_distribution<int64_t>(
                          1, 2 * c.config.kernel + 1)(rng);
  c.config.blockSize = c.blockSize;
  auto layout = Layout::derive(c.config);
  if (!layout.isOk())
    return c; // reported by the caller
  int64_t page = layout->pageBytes();
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
  case 0: // exact
    c.pageBytes = page;
    break;
  case 1: // padded: a block stride that is any even number of bytes more
    c.pageBytes = page + 2 * std::uniform_int_distribution<int64_t>(1, 40)(rng);
    break;
  default: { // cross-layer: one block holds `layers` pages
    int64_t rounded = (page + 15) / 16 * 16;
    int64_t layers = std::uniform_int_distribution<int64_t>(2, 4)(rng);
    c.pageBytes = layers * rounded;
    c.baseBytes =
        rounded * std::uniform_int_distribution<int64_t>(0, layers - 1)(rng);
    break;
  }
  }
  c.stridedStreams = std::bernoulli_distribution(0.5)(rng);
  return c;
}

struct StreamConv {
  bool bias, silu, residual;
};

/// `@layer`: conv then insert per stream, in layout order; x, weights,
/// bias and out per stream (bias passed always, used when `bias`).
std::string buildLayer(const PropertyCase &c, const Layout &layout,
                       const StreamConv (&convs)[4]) {
  LayerText text(c.config, layout, c.pageBytes);
  std::ostringstream os;
  os << "module {\nfunc.func @layer(" << LayerText::metadataParams(true);
  for (Stream s : kAllStreams)
    os << ", %x_" << streamName(s) << ": "
       << typeOfStream(layout, s, isFlat(s), c.stridedStreams);
  for (Stream s : kAllStreams)
    os << ", %w_" << streamName(s) << ": " << text.weightsType(s);
  for (Stream s : kAllStreams)
    os << ", %b_" << streamName(s) << ": " << text.biasType(s);
  for (Stream s : kAllStreams)
    os << ", %y_" << streamName(s) << ": "
       << typeOfStream(layout, s, isFlat(s), c.stridedStreams);
  os << ") {\n" << text.bindAndStep();
  for (Stream s : kAllStreams) {
    std::string n = streamName(s);
    std::string xType = typeOfStream(layout, s, isFlat(s), c.stridedStreams);
    const StreamConv &v = convs[static_cast<int>(s)];
    LayerText::Conv conv{"x_" + n, "w_" + n, v.bias ? "b_" + n : "", "y_" + n};
    conv.silu = v.silu;
    conv.residual = v.residual;
    os << text.conv(conv, s, xType) << text.insert("x_" + n, s, xType);
  }
  os << "  return\n}\n}\n";
  return os.str();
}

struct Form {
  const char *name;
  sconv::FusionStrategy fusion;
  bool splitStreams;
};
constexpr Form kForms[] = {
    {"unfused", sconv::FusionStrategy::None, true},
    {"fused, CPU loops", sconv::FusionStrategy::ConvInsert, true},
    {"fused, GPU loops", sconv::FusionStrategy::ConvInsert, false},
    {"packed inserts, GPU loops", sconv::FusionStrategy::PackedInserts, false},
};

using LayerFn = void (*)(void *, void *, void *, void *, void *, void *, void *,
                         void *, void *, void *, void *, void *, void *, void *,
                         void *, void *, void *, void *, void *, void *,
                         void *);

/// Runs one step of `c` through `fn` and compares with the reference.
void checkStep(const PropertyCase &c, const Layout &layout,
               const StreamConv (&convs)[4], LayerFn fn, uint64_t seed,
               const std::string &what, int maxChunk) {
  std::mt19937_64 rng(seed);
  Step step = randomStep(rng, layout, maxChunk);
  int64_t tokens = step.meta.numTokens();
  int64_t blockStride = c.pageBytes / 2, base = c.baseBytes / 2;
  AlignedBuffer<uint16_t> history =
      makeCache(rng, layout, step, blockStride, kPoison);
  // The layer's view starts `base` elements into the buffer.
  AlignedBuffer<uint16_t> cache(history.size + base, kPoison);
  std::memcpy(cache.data + base, history.data, history.size * 2);
  std::vector<uint16_t> expected(cache.data, cache.data + cache.size);
  CacheBuffer expectedView{expected.data() + base, blockStride, step.numBlocks};
  CacheBuffer before{history.data, blockStride, step.numBlocks};

  std::vector<std::unique_ptr<char[]>> keep;
  std::vector<std::unique_ptr<AlignedBuffer<uint16_t>>> data;
  auto buffer = [&](size_t count, uint16_t fill) {
    data.push_back(std::make_unique<AlignedBuffer<uint16_t>>(
        std::max<size_t>(count, 1), fill));
    return data.back().get();
  };
  void *xs[4], *ws[4], *bs[4], *ys[4];
  AlignedBuffer<uint16_t> *outs[4], *wants[4];
  for (Stream s : kAllStreams) {
    int i = static_cast<int>(s);
    int64_t w = layout.range(s).width, row = layout.headsPerRank * w;
    int64_t stride = c.stridedStreams ? row + 3 + i : row;
    AlignedBuffer<uint16_t> *x = buffer(tokens * stride, kPoison);
    for (size_t e = 0; e < x->size; ++e)
      x->data[e] = randomBf16(rng, 4.0f);
    AlignedBuffer<uint16_t> *weights = buffer(row * layout.config.kernel, 0);
    for (size_t e = 0; e < weights->size; ++e)
      weights->data[e] = randomBf16(rng, 1.0f);
    AlignedBuffer<uint16_t> *bias = buffer(row, 0);
    for (size_t e = 0; e < bias->size; ++e)
      bias->data[e] = randomBf16(rng, 1.0f);
    outs[i] = buffer(tokens * stride, kPoison);
    wants[i] = buffer(tokens * stride, kPoison);
    xs[i] = streamDescriptor(x->data, tokens, layout.headsPerRank, w, stride,
                             isFlat(s), keep);
    ys[i] = streamDescriptor(outs[i]->data, tokens, layout.headsPerRank, w,
                             stride, isFlat(s), keep);
    auto wd = std::make_unique<char[]>(sizeof(Mem2));
    ws[i] = new (wd.get()) Mem2(descriptor<uint16_t, 2>(
        weights->data, {row, layout.config.kernel}, {layout.config.kernel, 1}));
    keep.push_back(std::move(wd));
    auto bd = std::make_unique<char[]>(sizeof(Mem1));
    bs[i] =
        new (bd.get()) Mem1(descriptor<uint16_t, 1>(bias->data, {row}, {1}));
    keep.push_back(std::move(bd));

    const StreamConv &v = convs[i];
    ConvOptions options;
    options.residual = v.residual;
    options.silu = v.silu;
    options.bias = v.bias ? bias->data : nullptr;
    // The convs read history only (positions before the step), the inserts
    // write the step's positions: the reference may run them in any order.
    referenceConv(layout, s, {x->data, stride}, weights->data, step.meta,
                  before, options, {wants[i]->data, stride});
    referenceInsert(layout, s, {x->data, stride}, step.meta, expectedView);
  }
  Call call =
      makeCall(cache.data + base, step.numBlocks * c.pageBytes, step.meta);
  fn(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, xs[0], xs[1],
     xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], bs[0], bs[1], bs[2], bs[3],
     ys[0], ys[1], ys[2], ys[3]);
  for (Stream s : kAllStreams) {
    int i = static_cast<int>(s);
    ASSERT_TRUE(sameBits(wants[i]->data, outs[i]->data, outs[i]->size,
                         convs[i].silu ? 1 : 0,
                         what + ", out " + streamName(s)));
  }
  ASSERT_TRUE(
      sameBits(expected.data(), cache.data, cache.size, 0, what + ", cache"));
}

constexpr int kShards = 7;

class LayoutPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(LayoutPropertyTest, RandomLayoutsMatchReference) {
  initializeNativeTarget();
  uint64_t seed = envOr("INKLING_PROPERTY_SEED", 20261201);
  int64_t count = envOr("INKLING_PROPERTY_LAYOUTS", 14);
  std::mt19937_64 rng(seed);
  for (int64_t n = 0; n < count; ++n) {
    PropertyCase c = drawCase(rng);
    StreamConv convs[4];
    for (StreamConv &v : convs) {
      int kind = std::uniform_int_distribution<int>(0, 2)(rng);
      v = {kind != 0, kind == 2, kind != 2};
    }
    if (n % kShards != GetParam())
      continue; // another shard's layout
    auto layout = Layout::derive(c.config);
    ASSERT_TRUE(layout.isOk())
        << c.describe() << ": " << layout.status().toString();
    ASSERT_EQ(layout->blockSize, c.blockSize) << c.describe();
    // The drawn layouts, for the log (a failure names its layout anyway).
    std::printf("layout %lld: %s\n", static_cast<long long>(n),
                c.describe().c_str());
    std::string source = buildLayer(c, *layout, convs);
    for (const Form &form : kForms) {
      std::string what = "layout " + std::to_string(n) + " (" + c.describe() +
                         "), " + form.name;
      SCOPED_TRACE(what);
      CompileOptions options;
      options.fusion = form.fusion;
      options.splitStreams = form.splitStreams;
      std::string error;
      auto engine = harness::compile(source, options, error);
      ASSERT_TRUE(engine) << error;
      auto fn = reinterpret_cast<LayerFn>(lookupFunction(*engine, "layer"));
      ASSERT_TRUE(fn);
      // The last step: long sequences.
      for (int s = 0; s < 4; ++s) {
        checkStep(c, *layout, convs, fn, seed * 131 + n * 7 + s,
                  what + ", step seed " + std::to_string(s),
                  s == 3 ? kLongChunk : 9);
        if (::testing::Test::HasFatalFailure())
          return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, LayoutPropertyTest,
                         ::testing::Range(0, kShards));

} // namespace
