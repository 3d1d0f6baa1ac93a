//===- NanBitsTest.cpp - The bits of a NaN result on the CPU --------------===//
//
// docs/Design.md section 10 ("A NaN result's bits"): the CPU lowering gives
// every NaN output the canonical 0x7fc0, where the runtime's reference keeps
// the sign and payload. Inputs holding NaNs of several signs and payloads
// (quiet and signaling) run through the conv's CPU forms (a decode-sized
// mixed batch and long prefill chunks, which take the token-run nest; with
// and without streaming stores), and every output element is checked: the
// reference's bits where it is a number, 0x7fc0 where it is NaN.
//
//===----------------------------------------------------------------------===//

#include "Harness/Compare.h"
#include "Harness/JitFixture.h"

#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Reference.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <sstream>

using namespace inkling;
using namespace inkling::reference;
using namespace inkling::harness;

namespace {

constexpr uint16_t kCanonicalNan = 0x7fc0;
// Quiet and signaling, both signs, payloads other than the canonical one.
constexpr uint16_t kNans[] = {0x7fc1, 0xffc0, 0x7f81, 0xff90, 0x7fff, 0xffa5};

bool isNan(uint16_t bits) {
  return (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0;
}

struct Form {
  const char *name;
  Stream stream;
  bool silu; // with bias, no residual (the mlp's form)
  int maxChunk;
  int64_t streamingStoresMinIterations;
};

void PrintTo(const Form &form, std::ostream *os) { *os << form.name; }

class NanBitsTest : public ::testing::TestWithParam<Form> {};

TEST_P(NanBitsTest, NanOutputsAreCanonical) {
  initializeNativeTarget();
  const Form &form = GetParam();
  LayoutConfig config{4, 16, 64, 4, 1, "bf16"};
  Layout layout = *Layout::derive(config);
  int64_t pageBytes = layout.pageBytes();
  LayerText text(config, layout, pageBytes);
  Stream s = form.stream;
  std::string x = typeOfStream(layout, s, isFlat(s), false);
  LayerText::Conv conv{"x", "w", form.silu ? "bias" : "", "y"};
  conv.silu = form.silu;
  conv.residual = !form.silu;
  std::ostringstream os;
  os << "module {\nfunc.func @conv(" << LayerText::metadataParams(false)
     << ", %x: " << x << ", %w: " << text.weightsType(s)
     << ", %bias: " << text.biasType(s) << ", %y: " << x << ") {\n"
     << text.bindAndStep() << text.conv(conv, s, x) << "  return\n}\n}\n";
  CompileOptions options;
  options.streamingStoresMinIterations = form.streamingStoresMinIterations;
  std::string error;
  exec::JitEngine *engine = compileCached(os.str(), options, error);
  ASSERT_TRUE(engine) << error;
  using ConvFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                          void *, Mem2 *, Mem1 *, void *);
  auto fn = reinterpret_cast<ConvFn>(lookupFunction(*engine, "conv"));
  ASSERT_TRUE(fn);

  int64_t nanOutputs = 0, keptPayloads = 0, numbers = 0;
  for (int seed = 0; seed < 4; ++seed) {
    std::mt19937_64 rng(500 + seed);
    Step step = randomStep(rng, layout, form.maxChunk);
    int64_t tokens = step.meta.numTokens();
    int64_t row = layout.headsPerRank * layout.range(s).width;
    AlignedBuffer<uint16_t> cache =
        makeCache(rng, layout, step, pageBytes / 2, kPoison);
    ConvInputs in(rng, layout, s, tokens, row);
    // About one input element in 40 a NaN.
    for (int64_t i = 0; i < tokens * row; ++i)
      if (rng() % 40 == 0)
        in.x.buffer.data[i] = kNans[rng() % std::size(kNans)];
    StreamData expected(tokens, row), y(tokens, row);
    ConvOptions ref;
    ref.residual = conv.residual;
    ref.silu = conv.silu;
    ref.bias = form.silu ? in.bias.data : nullptr;
    referenceConv(layout, s, in.x.view(), in.weights.data, step.meta,
                  {cache.data, pageBytes / 2, step.numBlocks}, ref,
                  expected.mutableView());
    std::vector<std::unique_ptr<char[]>> keep;
    void *xd = in.x.descriptor(layout, s, isFlat(s), tokens, keep);
    void *yd = y.descriptor(layout, s, isFlat(s), tokens, keep);
    Mem2 wd = in.weightsDescriptor();
    Mem1 bd = in.biasDescriptor();
    Call call = makeCall(cache.data, step.numBlocks * pageBytes, step.meta);
    fn(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, xd, &wd, &bd,
       yd);
    for (int64_t i = 0; i < tokens * row; ++i) {
      uint16_t want = expected.buffer.data[i], got = y.buffer.data[i];
      char where[96];
      std::snprintf(where, sizeof(where),
                    "seed %d, token %lld, channel %lld: reference 0x%04x, "
                    "found 0x%04x",
                    seed, static_cast<long long>(i / row),
                    static_cast<long long>(i % row), want, got);
      if (isNan(want)) {
        ++nanOutputs;
        keptPayloads += want != kCanonicalNan;
        ASSERT_EQ(got, kCanonicalNan) << where;
        continue;
      }
      ++numbers;
      // silu: within one bf16 step, as every conv test allows it.
      ASSERT_TRUE(sameBits(&want, &got, 1, form.silu ? 1 : 0, where));
    }
  }
  // The check saw NaNs, and ones where the reference's bits differ.
  EXPECT_GT(nanOutputs, 40);
  EXPECT_GT(keptPayloads, 10);
  EXPECT_GT(numbers, 100);
  std::printf("[ nan      ] %s: %lld NaN outputs (%lld with another payload "
              "in the reference), %lld numbers\n",
              form.name, static_cast<long long>(nanOutputs),
              static_cast<long long>(keptPayloads),
              static_cast<long long>(numbers));
}

INSTANTIATE_TEST_SUITE_P(
    Forms, NanBitsTest,
    ::testing::Values(Form{"k_decode", Stream::K, false, 9, 4096},
                      Form{"k_prefill", Stream::K, false, kLongChunk, 4096},
                      Form{"k_prefill_streaming", Stream::K, false, kLongChunk,
                           1},
                      Form{"mlp_decode", Stream::Mlp, true, 9, 4096},
                      Form{"mlp_prefill", Stream::Mlp, true, kLongChunk, 4096}),
    [](const ::testing::TestParamInfo<Form> &info) {
      return std::string(info.param.name);
    });

} // namespace
