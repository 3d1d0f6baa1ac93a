//===- FusionTest.cpp - Fused and unfused programs compute the same bits --===//
//
// A decoder layer's sconv work (4 convs + 4 inserts, with and without opaque
// calls between the streams, two conv variants) and the four inserts alone
// are lowered with `inkling-lower-to-cpu` once per fusion strategy
// (conv-insert, packed-inserts, none), JIT-compiled, and run on random
// mixed batches. Every strategy must produce the same bits as `none`: the
// whole cache buffer (poisoned first, padding included) and every output
// buffer (poisoned first, filler between rows included). `none` itself is
// checked against the independent reference (inkling/Runtime/Reference.h), SiLU
// within 1 bf16 ulp (libm's exp; docs/Design.md section 4), everything else
// exactly.
//
// A first test checks that the fusion really happened: the ops each
// strategy leaves (e.g. conv-insert: one fused_conv per group of convs that
// are ready together, no insert left). The fused programs run in both loop
// forms of the fused ops: the CPU's (one inner loop per stream) and the
// GPU's (one inner loop over the concatenated chunks, dispatched per chunk).
// tails_k2_strided runs every variant (threads, streaming stores,
// misaligned buffers); the other layouts share them out (LayoutGroup):
// each JIT compile costs 2-5 s on 2 cores.
//
//===----------------------------------------------------------------------===//

#include "Harness/Compare.h"
#include "Harness/JitFixture.h"
#include "Harness/JitHarness.h"
#include "Harness/StreamParams.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Reference.h"

#include "gtest/gtest.h"

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::harness;
using namespace inkling::reference;
using sconv::FusionStrategy;

namespace {

/// The layout groups of the cases, for the variants each runs (a bit mask).
enum LayoutGroup : unsigned {
  kSmall = 1,   // tails_k2_strided (the sanitizer stage's): every variant
  kRealTp1 = 2, // the real layouts: the strategies, and half each of the
  kRealTp2 = 4, // threaded, streaming and misaligned variants (each JIT
  kRealN16 = 8, // compile of a real layout costs ~5 s on 2 cores)
  kSmallA = 16, // the other small layouts: the strategies, and one half
  kSmallB = 32, // each of those variants (tp1's, tp2's)
  kEveryLayout = kSmall | kRealTp1 | kRealTp2 | kRealN16 | kSmallA | kSmallB,
};

struct FusionCase {
  const char *name;
  LayoutConfig config;
  int64_t pagePaddingBytes;
  bool stridedStreams;
  int seeds;
  LayoutGroup group;
};

void PrintTo(const FusionCase &fc, std::ostream *os) { *os << fc.name; }

/// A way to compile the layer: a fusion strategy, and for the fused ops
/// the CPU's per-stream inner loops or the GPU's loop over the concatenated
/// chunks (`split-streams`; the GPU's form runs here too: conv-insert's
/// covers both fused ops, its lone inserts being an insert_packed).
/// With `threads` != 1 the nests' outer loops run on OpenMP threads; a
/// `minParallelIterations` of 1 forks on every call, the default (64) only
/// on large steps, so both paths of the `if` clause run. A
/// `streamingStoresMinIterations` of 1 stores non-temporally on every call
/// (0, the default: never). `misaligned` puts the cache and the outputs 16
/// bytes past a 64-byte boundary (the ABI's minimum): streaming must then
/// keep to stores that claim 16 bytes.
struct Variant {
  const char *name;
  FusionStrategy strategy;
  bool splitStreams;
  /// The layout groups that run it.
  unsigned layouts;
  int threads = 1;
  int64_t minParallelIterations = 64;
  int64_t streamingStoresMinIterations = 0;
  bool misaligned = false;
};
constexpr unsigned kSmallTp1 = kSmall | kSmallA | kRealTp1,
                   kSmallTp2 = kSmall | kSmallB | kRealTp2;
constexpr Variant kNone{"none", FusionStrategy::None, true, kEveryLayout};
constexpr Variant kVariants[] = {
    {"conv-insert", FusionStrategy::ConvInsert, true, kEveryLayout},
    {"conv-insert/concatenated", FusionStrategy::ConvInsert, false,
     kSmallTp1 | kSmallTp2},
    {"packed-inserts", FusionStrategy::PackedInserts, true, kEveryLayout},
    kNone,
    {"conv-insert/threads=2,always", FusionStrategy::ConvInsert, true,
     kSmallTp1, 2, 1},
    {"conv-insert/threads=3", FusionStrategy::ConvInsert, true, kSmallTp2, 3},
    {"conv-insert/concatenated/threads=4,always", FusionStrategy::ConvInsert,
     false, kSmallTp2, 4, 1},
    {"none/threads=default,always", FusionStrategy::None, true, kSmallTp1, 0,
     1},
    {"conv-insert/streaming", FusionStrategy::ConvInsert, true, kSmallTp2, 1,
     64, 1},
    {"packed-inserts/concatenated/threads=2,always,streaming",
     FusionStrategy::PackedInserts, false, kSmallTp1, 2, 1, 1},
    {"none/streaming", FusionStrategy::None, true, kSmallTp2, 1, 64, 1},
    // The engine of conv-insert/streaming, on misaligned buffers.
    {"conv-insert/streaming,misaligned", FusionStrategy::ConvInsert, true,
     kSmallTp2, 1, 64, 1, true},
    {"conv-insert/threads=2,always,streaming,misaligned",
     FusionStrategy::ConvInsert, true, kSmallTp1, 2, 1, 1, true},
};

const char *strategyName(FusionStrategy s) {
  // In FusionStrategy's order.
  constexpr const char *kNames[] = {"conv-insert", "packed-inserts", "none"};
  return kNames[static_cast<int>(s)];
}

/// The layer functions: `layer_plain` (residual, no bias), `layer_silu`
/// (bias, silu, no residual), `layer_calls` (plain, with opaque calls before
/// the attn and mlp streams, as attention and the MLP sit there) and
/// `inserts` (the four inserts alone). Every argument is `llvm.noalias`: the
/// engine's buffers are distinct, which lets the fusion passes prove that
/// the inserts commute with the convs.
std::string buildModule(const FusionCase &fc, const Layout &layout,
                        int64_t pageBytes) {
  LayerText text(fc.config, layout, pageBytes);
  std::ostringstream os;
  const char *na = " {llvm.noalias}";
  auto xType = [&](Stream s) {
    return typeOfStream(layout, s, isFlat(s), fc.stridedStreams);
  };
  auto signature = [&](const std::string &name, bool convs) {
    os << "func.func @" << name << "(" << LayerText::metadataParams(true);
    auto weights = [&](Stream s) { return text.weightsType(s); };
    auto bias = [&](Stream s) { return text.biasType(s); };
    os << streamParams("x_", xType, na);
    if (convs)
      os << streamParams("w_", weights, na) << streamParams("b_", bias, na)
         << streamParams("y_", xType, na);
    os << ") {\n" << text.bindAndStep();
  };
  os << "module {\n";
  os << "func.func private @opaque() {\n  return\n}\n";
  for (auto [name, silu, calls] : {std::tuple{"layer_plain", false, false},
                                   std::tuple{"layer_silu", true, false},
                                   std::tuple{"layer_calls", false, true}}) {
    signature(name, true);
    for (Stream s : kAllStreams) {
      std::string n = streamName(s);
      if (calls && (s == Stream::Attn || s == Stream::Mlp))
        os << "  func.call @opaque() : () -> ()\n";
      LayerText::Conv conv{"x_" + n, "w_" + n, silu ? "b_" + n : "", "y_" + n};
      conv.silu = silu;
      conv.residual = !silu;
      os << text.conv(conv, s, xType(s)) << text.insert("x_" + n, s, xType(s));
    }
    os << "  return\n}\n";
  }
  signature("inserts", false);
  for (Stream s : kAllStreams)
    os << text.insert(std::string("x_") + streamName(s), s, xType(s));
  os << "  return\n}\n}\n";
  return os.str();
}

using LayerFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                         void *, void *, void *, void *, Mem2 *, Mem2 *, Mem2 *,
                         Mem2 *, Mem1 *, Mem1 *, Mem1 *, Mem1 *, void *, void *,
                         void *, void *);
using InsertsFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                           void *, void *, void *, void *);

class FusionTest : public ::testing::TestWithParam<FusionCase> {
protected:
  struct Compiled : TestLayout {
    std::string source;
    std::map<std::string, exec::JitEngine *> engines;
  };

  /// The layout's module, and its engine for `variant` (none: the module
  /// only), compiled on demand, once per process (compileCached).
  Compiled &compiled(const Variant *variant) {
    const FusionCase &fc = GetParam();
    bool made;
    Compiled *slot =
        &testCaseState<Compiled>(fc.name, fc.config, fc.pagePaddingBytes, made);
    if (made)
      slot->source = buildModule(fc, slot->layout, slot->pageBytes);
    if (!variant)
      return *slot;
    auto &engine = slot->engines[variant->name];
    if (!engine) {
      CompileOptions options;
      options.fusion = variant->strategy;
      options.splitStreams = variant->splitStreams;
      options.threads = variant->threads;
      options.minParallelIterations = variant->minParallelIterations;
      options.streamingStoresMinIterations =
          variant->streamingStoresMinIterations;
      std::string error;
      engine = compileCached(slot->source, options, error);
      if (!engine)
        ADD_FAILURE() << variant->name << ": " << error;
    }
    return *slot;
  }

  int64_t tokenStride(const Layout &layout, Stream s) const {
    return streamTokenStride(layout, s, GetParam().stridedStreams);
  }

  /// What one strategy's function wrote: the cache and the four outputs.
  struct Result {
    std::vector<uint16_t> cache;
    std::vector<std::vector<uint16_t>> outs;
  };
  using Inputs = std::vector<std::unique_ptr<ConvInputs>>;
  ::testing::AssertionResult run(exec::JitEngine &engine, const char *function,
                                 const Step &step,
                                 const AlignedBuffer<uint16_t> &cache0,
                                 Inputs &inputs, Result &result,
                                 bool misaligned = false);
  ::testing::AssertionResult
  noneMatchesReference(const char *function, const Step &step,
                       const AlignedBuffer<uint16_t> &cache0,
                       const Inputs &inputs, const Result &none,
                       const std::string &what);
};

/// Runs `function` of `engine` on a copy of `cache0` and fresh (poisoned)
/// outputs.
::testing::AssertionResult
FusionTest::run(exec::JitEngine &engine, const char *function, const Step &step,
                const AlignedBuffer<uint16_t> &cache0, Inputs &inputs,
                Result &result, bool misaligned) {
  const Compiled &c = compiled(nullptr);
  const Layout &layout = c.layout;
  int64_t tokens = step.meta.numTokens();
  // 16 bytes past the buffers' 64-byte alignment when misaligned.
  const int64_t shift = misaligned ? 8 : 0;
  AlignedBuffer<uint16_t> cacheStorage(cache0.size + shift, 0);
  uint16_t *cache = cacheStorage.data + shift;
  std::copy(cache0.data, cache0.data + cache0.size, cache);
  std::vector<std::unique_ptr<char[]>> keep;
  std::vector<std::unique_ptr<AlignedBuffer<uint16_t>>> ys;
  void *x[4], *y[4];
  Mem2 w[4];
  Mem1 b[4];
  for (Stream s : kAllStreams) {
    int i = static_cast<int>(s);
    int64_t stride = tokenStride(layout, s);
    x[i] = inputs[i]->x.descriptor(layout, s, isFlat(s), tokens, keep);
    ys.push_back(std::make_unique<AlignedBuffer<uint16_t>>(
        std::max<int64_t>(1, tokens) * stride + shift, kPoison));
    y[i] =
        streamDescriptor(ys.back()->data + shift, tokens, layout.headsPerRank,
                         layout.range(s).width, stride, isFlat(s), keep);
    w[i] = inputs[i]->weightsDescriptor();
    b[i] = inputs[i]->biasDescriptor();
  }
  StepMetadata meta = step.meta;
  Call call = makeCall(cache, step.numBlocks * c.pageBytes, meta);
  void *address = lookupFunction(engine, function);
  if (!address)
    return ::testing::AssertionFailure() << "no function " << function;
  if (std::string(function) != "inserts")
    reinterpret_cast<LayerFn>(address)(
        &call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, x[0], x[1],
        x[2], x[3], &w[0], &w[1], &w[2], &w[3], &b[0], &b[1], &b[2], &b[3],
        y[0], y[1], y[2], y[3]);
  else
    reinterpret_cast<InsertsFn>(address)(&call.cache, &call.qsl, &call.nc,
                                         &call.bt, &call.slots, x[0], x[1],
                                         x[2], x[3]);
  result.cache.assign(cache, cache + cache0.size);
  for (auto &yd : ys)
    result.outs.emplace_back(yd->data + shift, yd->data + yd->size);
  return ::testing::AssertionSuccess();
}

/// `none` against the reference: convs over the step's initial cache, then
/// the inserts (they commute: docs/Design.md section 4).
::testing::AssertionResult
FusionTest::noneMatchesReference(const char *function, const Step &step,
                                 const AlignedBuffer<uint16_t> &cache0,
                                 const Inputs &inputs, const Result &none,
                                 const std::string &what) {
  const Compiled &c = compiled(nullptr);
  const Layout &layout = c.layout;
  int64_t tokens = step.meta.numTokens(), blockStride = c.pageBytes / 2;
  bool convs = std::string(function) != "inserts";
  bool silu = std::string(function) == "layer_silu";
  std::vector<uint16_t> expectedCache(cache0.data, cache0.data + cache0.size);
  for (Stream s : kAllStreams) {
    int i = static_cast<int>(s);
    const ConvInputs &in = *inputs[i];
    if (convs) {
      StreamData expected(tokens, tokenStride(layout, s));
      ConvOptions options;
      options.residual = !silu;
      options.silu = silu;
      options.bias = silu ? in.bias.data : nullptr;
      referenceConv(layout, s, in.x.view(), in.weights.data, step.meta,
                    {cache0.data, blockStride, step.numBlocks}, options,
                    expected.mutableView());
      if (auto same = sameBits(
              expected.buffer.data, none.outs[i].data(), expected.buffer.size,
              silu ? 1 : 0, what + ": none vs reference, out " + streamName(s));
          !same)
        return same;
    }
    referenceInsert(layout, s, in.x.view(), step.meta,
                    {expectedCache.data(), blockStride, step.numBlocks});
  }
  return sameBits(expectedCache.data(), none.cache.data(), none.cache.size(), 0,
                  what + ": none vs reference, cache");
}

/// The ops each strategy leaves in the module (summed over its functions).
TEST_P(FusionTest, StrategiesFuse) {
  Compiled &c = compiled(nullptr); // the source only
  struct Expected {
    FusionStrategy strategy;
    int fusedConv, fusedConvInsert, insertPacked, conv, insert;
  };
  // layer_plain, layer_silu: all four convs ready together; layer_calls:
  // K+V, then attn, then mlp; inserts: the four inserts.
  for (Expected e : {
           // 1 + 1 + 3 fused_conv, all with and_insert; the lone inserts
           // packed.
           Expected{FusionStrategy::ConvInsert, 5, 5, 1, 0, 0},
           // Convs fuse as above (attn and mlp alone stay sconv.conv); the
           // inserts of each layer are deferred and packed, except across
           // the calls: 1 + 1 + (k,v) + 1.
           Expected{FusionStrategy::PackedInserts, 3, 0, 4, 2, 2},
           Expected{FusionStrategy::None, 0, 0, 0, 12, 16},
       }) {
    std::string error;
    std::map<std::string, int> ops =
        countOpsAfterFusion(c.source, e.strategy, error);
    ASSERT_TRUE(error.empty()) << error;
    const char *name = strategyName(e.strategy);
    EXPECT_EQ(ops["sconv.fused_conv"], e.fusedConv) << name;
    EXPECT_EQ(ops["sconv.fused_conv and_insert"], e.fusedConvInsert) << name;
    EXPECT_EQ(ops["sconv.insert_packed"], e.insertPacked) << name;
    EXPECT_EQ(ops["sconv.conv"], e.conv) << name;
    EXPECT_EQ(ops["sconv.insert"], e.insert) << name;
  }
}

TEST_P(FusionTest, FusedMatchesUnfused) {
  std::vector<const Variant *> variants;
  for (const Variant &v : kVariants)
    if (v.layouts & GetParam().group)
      variants.push_back(&v);
  for (const Variant *v : variants)
    ASSERT_TRUE(compiled(v).engines[v->name]) << v->name;
  Compiled &c = compiled(nullptr);
  const Layout &layout = c.layout;
  int64_t blockStride = c.pageBytes / 2;

  // The last seed: long sequences.
  for (int seed = 0; seed <= GetParam().seeds; ++seed) {
    std::mt19937_64 rng(5000 + seed);
    Step step =
        randomStep(rng, layout, seed == GetParam().seeds ? kLongChunk : 9);
    int64_t tokens = step.meta.numTokens();
    AlignedBuffer<uint16_t> cache0 =
        makeCache(rng, layout, step, blockStride, kPoison);
    Inputs inputs;
    for (Stream s : kAllStreams)
      inputs.push_back(std::make_unique<ConvInputs>(rng, layout, s, tokens,
                                                    tokenStride(layout, s)));

    for (const char *function :
         {"layer_plain", "layer_silu", "layer_calls", "inserts"}) {
      std::map<std::string, Result> results;
      for (const Variant *variant : variants)
        ASSERT_TRUE(run(*c.engines[variant->name], function, step, cache0,
                        inputs, results[variant->name], variant->misaligned));
      std::string what = std::string(function) + ", seed " +
                         std::to_string(seed) + ", " + std::to_string(tokens) +
                         " tokens";
      const Result &none = results[kNone.name];
      ASSERT_TRUE(
          noneMatchesReference(function, step, cache0, inputs, none, what));
      // Every strategy against `none`, bit for bit.
      for (const Variant *variant : variants) {
        const Result &r = results[variant->name];
        std::string label = what + ": " + variant->name + " vs none";
        ASSERT_TRUE(sameBits(none.cache.data(), r.cache.data(), r.cache.size(),
                             0, label + ", cache"));
        for (Stream s : kAllStreams) {
          int i = static_cast<int>(s);
          ASSERT_TRUE(sameBits(none.outs[i].data(), r.outs[i].data(),
                               r.outs[i].size(), 0,
                               label + ", out " + streamName(s)));
        }
      }
    }
  }
}

// The real model (tp 1; tp 2 with a padded page and strided stream rows),
// and small layouts with odd widths (scalar tails, unaligned stream offsets,
// an unaligned block stride) and kernels 2 and 3; block sizes N != W.
INSTANTIATE_TEST_SUITE_P(
    Layouts, FusionTest,
    ::testing::Values(
        FusionCase{
            "real_tp1", {8, 128, 4096, 4, 1, "bf16"}, 0, false, 2, kRealTp1},
        FusionCase{"real_tp2_padded_strided",
                   {8, 128, 4096, 4, 2, "bf16"},
                   8192,
                   true,
                   2,
                   kRealTp2},
        FusionCase{
            "odd_k3_padded6", {2, 3, 10, 3, 1, "bf16"}, 6, false, 20, kSmallA},
        FusionCase{
            "tails_k2_strided", {4, 8, 40, 2, 2, "bf16"}, 32, true, 20, kSmall},
        // Block sizes N != W: fusion does not depend on the addressing.
        FusionCase{"real_n16",
                   {8, 128, 4096, 4, 1, "bf16", 16},
                   0,
                   false,
                   2,
                   kRealN16},
        FusionCase{
            "odd_k3_n1", {2, 3, 10, 3, 1, "bf16", 1}, 6, false, 10, kSmallB}),
    [](const ::testing::TestParamInfo<FusionCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
