//===- BranchTest.cpp - Which run-time branch a CPU nest takes ------------===//
//
// The CPU's nests choose between forms at run time, per call: the token-run
// nest or the (token, head) nest (real tokens >= W x sequences), a run's
// tokens unrolled or looped (the run is whole in one sequence), streaming
// stores or ordinary ones (inkling-cpu-streaming-stores), threads or the
// calling thread (inkling-cpu-parallel-dispatch), with avx512-bf16 a decode
// output line's rounding by vcvtne2ps2bf16 or in software. Every form
// computes the
// same bits, so the bit-exact JIT tests pass on either branch: these tests
// compile with `branch-counters` (inkling/Target/CPU/BranchCounters.h) and
// assert, for steps on both sides of each choice, the branch taken (and the
// bits, against the reference). Issue #32, item 3.
//
//===----------------------------------------------------------------------===//

#include "Harness/Compare.h"
#include "Harness/JitFixture.h"
#include "Harness/JitHarness.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"
#include "inkling/Target/CPU/BranchCounters.h"

#include "gtest/gtest.h"

#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace inkling;
using namespace inkling::reference;
using namespace inkling::harness;
using inkling::cpu::Branch;

namespace {

/// H = 2 heads; the attn stream is 32 channels wide (one 64-byte line per
/// head row, the token-run nest's chunk); W = 4, N = 4.
const LayoutConfig kConfig{2, 16, 64, 4, 1, "bf16"};
constexpr Stream kStream = Stream::Attn;

/// One sequence of a step: positions before it and its tokens.
struct Seq {
  int64_t computed, tokens;
};

/// A step of `seqs` with distinct blocks (block 0 unused), every history
/// position of the window stored, every token's slot its own.
Step makeStep(const Layout &layout, const std::vector<Seq> &seqs) {
  Step step;
  int64_t kernel = layout.config.kernel, n = layout.blockSize;
  int64_t width = 0;
  for (Seq s : seqs)
    width = std::max<int64_t>(width, (s.computed + s.tokens + n - 1) / n);
  step.meta.blockTableWidth = width;
  step.meta.queryStartLoc.push_back(0);
  int32_t next = 1;
  for (Seq s : seqs) {
    std::vector<int32_t> row(width, 0);
    for (int64_t j = 0; j < (s.computed + s.tokens + n - 1) / n; ++j)
      row[j] = next++;
    step.meta.blockTable.insert(step.meta.blockTable.end(), row.begin(),
                                row.end());
    for (int64_t q = std::max<int64_t>(0, s.computed - (kernel - 1));
         q < s.computed; ++q)
      step.history.push_back({step.meta.numComputed.size(), q});
    for (int64_t p = s.computed; p < s.computed + s.tokens; ++p)
      step.meta.slotMapping.push_back(row[p / n] * n + p % n);
    step.meta.numComputed.push_back(static_cast<int32_t>(s.computed));
    step.meta.queryStartLoc.push_back(
        static_cast<int32_t>(step.meta.queryStartLoc.back() + s.tokens));
  }
  step.numBlocks = next;
  return step;
}

/// The counts of every branch after one call.
using Counts = std::map<Branch, int64_t>;

std::string describe(const Counts &counts) {
  std::ostringstream os;
  for (auto [branch, count] : counts)
    os << cpu::branchCounterSymbol(branch).str() << "=" << count << " ";
  return os.str();
}

class BranchTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { initializeNativeTarget(); }

  void SetUp() override {
    auto derived = Layout::derive(kConfig);
    ASSERT_TRUE(derived.isOk());
    layout = *derived;
  }

  /// `@conv`: one conv of the attn stream, with bias and residual.
  std::string module() const {
    LayerText text(kConfig, layout, layout.pageBytes());
    std::string x = typeOfStream(layout, kStream, isFlat(kStream), false);
    std::ostringstream os;
    os << "module {\nfunc.func @conv(" << LayerText::metadataParams(false)
       << ", %x: " << x << ", %w: " << text.weightsType(kStream)
       << ", %bias: " << text.biasType(kStream) << ", %y: " << x << ") {\n"
       << text.bindAndStep() << text.conv({"x", "w", "bias", "y"}, kStream, x)
       << "  return\n}\n}\n";
    return os.str();
  }

  exec::JitEngine *compile(CompileOptions options) {
    std::string error;
    exec::JitEngine *engine = compileCached(module(), options, error);
    EXPECT_TRUE(engine) << error;
    return engine;
  }

  /// Changes a step's random inputs before the call.
  using Inputs = std::function<void(ConvInputs &, int64_t tokenStride)>;

  /// Runs `@conv` of `engine` on a step of `seqs` (its random inputs
  /// changed by `inputs`) with its counters reset, checks the output
  /// against the reference (a NaN: the CPU's 0x7fc0, Design.md section 10)
  /// and returns the counts (-1: the module has no such counter).
  Counts run(exec::JitEngine *engine, const std::vector<Seq> &seqs,
             const Inputs &inputs = {}) {
    Counts counts;
    if (!engine)
      return counts;
    using ConvFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                            void *, Mem2 *, Mem1 *, void *);
    auto conv = reinterpret_cast<ConvFn>(lookupFunction(*engine, "conv"));
    EXPECT_TRUE(conv);
    if (!conv)
      return counts;
    for (Branch branch : cpu::kBranches)
      if (int64_t *counter = branchCounter(*engine, branch))
        *counter = 0;

    std::mt19937_64 rng(7);
    Step step = makeStep(layout, seqs);
    int64_t tokens = step.meta.numTokens();
    int64_t blockStride = layout.pageBytes() / 2;
    AlignedBuffer<uint16_t> cache =
        makeCache(rng, layout, step, blockStride, kPoison);
    int64_t stride = streamTokenStride(layout, kStream, false);
    ConvInputs in(rng, layout, kStream, tokens, stride);
    if (inputs)
      inputs(in, stride);
    StreamData y(tokens, stride), expected(tokens, stride);
    ConvOptions options;
    options.bias = in.bias.data;
    referenceConv(layout, kStream, in.x.view(), in.weights.data, step.meta,
                  {cache.data, blockStride, step.numBlocks}, options,
                  expected.mutableView());
    for (size_t i = 0; i < expected.buffer.size; ++i)
      if ((expected.buffer.data[i] & 0x7fff) > 0x7f80)
        expected.buffer.data[i] = 0x7fc0;
    std::vector<std::unique_ptr<char[]>> keep;
    Call call =
        makeCall(cache.data, step.numBlocks * layout.pageBytes(), step.meta);
    Mem2 wd = in.weightsDescriptor();
    Mem1 bd = in.biasDescriptor();
    conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots,
         in.x.descriptor(layout, kStream, isFlat(kStream), tokens, keep), &wd,
         &bd, y.descriptor(layout, kStream, isFlat(kStream), tokens, keep));
    EXPECT_TRUE(sameBits(expected.buffer.data, y.buffer.data, y.buffer.size, 0,
                         "conv output"));

    for (Branch branch : cpu::kBranches) {
      int64_t *counter = branchCounter(*engine, branch);
      counts[branch] = counter ? *counter : -1;
    }
    return counts;
  }

  Layout layout;
};

CompileOptions counted() {
  CompileOptions options;
  options.branchCounters = true;
  return options;
}

TEST_F(BranchTest, ProductionIRHasNoCounters) {
  CompileOptions options;
  options.threads = 2;
  options.streamingStoresMinIterations = 32;
  exec::JitEngine *engine = compile(options);
  ASSERT_TRUE(engine);
  for (Branch branch : cpu::kBranches)
    EXPECT_EQ(branchCounter(*engine, branch), nullptr)
        << cpu::branchCounterSymbol(branch).str();
}

// The token-run nest runs when real tokens >= W x sequences (and B > 0):
// long prefills, a step exactly at the threshold; not a T = 1 decode, a
// batch of decodes, or one token below the threshold.
TEST_F(BranchTest, TokenRunsOnForLongSequencesOffForDecode) {
  exec::JitEngine *engine = compile(counted());
  struct Case {
    std::vector<Seq> seqs;
    bool runs;
  };
  const Case cases[] = {
      {{{0, 16}, {0, 16}}, true}, // prefill, T = 32 >= 8
      {{{0, 4}, {2, 4}}, true},   // T = 8 = W x B
      {{{0, 4}, {2, 3}}, false},  // T = 7 < 8
      {{{6, 1}}, false},          // decode, T = 1
      {{{5, 1}, {9, 1}, {2, 1}}, false},
  };
  for (const Case &c : cases) {
    Counts counts = run(engine, c.seqs);
    std::string what = describe(counts);
    if (c.runs) {
      EXPECT_EQ(counts[Branch::TokenRunsOn], 1) << what;
      EXPECT_EQ(counts[Branch::TokenRunsOff], 0) << what;
    } else {
      EXPECT_EQ(counts[Branch::TokenRunsOn], 0) << what;
      EXPECT_EQ(counts[Branch::TokenRunsOff], 1) << what;
      EXPECT_EQ(counts[Branch::RunsUnrolled], 0) << what;
      EXPECT_EQ(counts[Branch::RunsLooped], 0) << what;
    }
  }
}

// A run of 4 tokens all of one sequence is unrolled; a run split between
// sequences (or cut by the step's end) walks each part in a loop.
TEST_F(BranchTest, RunsUnrolledWhenWholeLoopedWhenSplit) {
  exec::JitEngine *engine = compile(counted());
  // Sequences of 16 and 8 tokens: every run is whole. Per (run, head,
  // sequence): 6 runs x 2 heads.
  Counts whole = run(engine, {{0, 16}, {3, 8}});
  EXPECT_EQ(whole[Branch::RunsUnrolled], 12) << describe(whole);
  EXPECT_EQ(whole[Branch::RunsLooped], 0) << describe(whole);
  // 5 + 7 tokens: run [0, 4) is whole; [4, 8) holds token 4 of the first
  // sequence and 5..7 of the second; [8, 12) is the second's.
  Counts split = run(engine, {{0, 5}, {2, 7}});
  EXPECT_EQ(split[Branch::TokenRunsOn], 1) << describe(split);
  EXPECT_EQ(split[Branch::RunsUnrolled], 2 * 2) << describe(split);
  EXPECT_EQ(split[Branch::RunsLooped], 2 * 2) << describe(split);
}

// A decode step walks runs of 4 consecutive tokens of any sequences (per
// (run, head)): whole runs unrolled, the step's last, shorter run in a
// loop; off (decode-runs=false), the (token, head) nest runs instead.
TEST_F(BranchTest, DecodeRunsWholeAndPartialForDecode) {
  exec::JitEngine *engine = compile(counted());
  // 9 sequences of one token (positions before, at and after W - 1): runs
  // [0, 4) and [4, 8) whole, [8, 9) partial; per head (2).
  Counts nine = run(engine, {{6, 1},
                             {0, 1},
                             {2, 1},
                             {3, 1},
                             {17, 1},
                             {1, 1},
                             {9, 1},
                             {4, 1},
                             {31, 1}});
  EXPECT_EQ(nine[Branch::TokenRunsOff], 1) << describe(nine);
  EXPECT_EQ(nine[Branch::DecodeRunsWhole], 2 * 2) << describe(nine);
  EXPECT_EQ(nine[Branch::DecodeRunsPartial], 1 * 2) << describe(nine);
  // Each whole run holds a token at a position below W - 1 (a zero tap).
  EXPECT_EQ(nine[Branch::DecodeRunsFromCache], 0) << describe(nine);
  // Every tap of run [0, 4) a history row: its taps loaded unselected.
  Counts cached = run(engine, {{6, 1}, {3, 1}, {17, 1}, {9, 1}, {4, 1}});
  EXPECT_EQ(cached[Branch::DecodeRunsWhole], 1 * 2) << describe(cached);
  EXPECT_EQ(cached[Branch::DecodeRunsFromCache], 1 * 2) << describe(cached);
  EXPECT_EQ(cached[Branch::DecodeRunsPartial], 1 * 2) << describe(cached);
  // Drafts: runs mix sequences with in-step taps (T = 7 < W x B = 12).
  Counts drafts = run(engine, {{6, 3}, {0, 2}, {5, 2}});
  EXPECT_EQ(drafts[Branch::DecodeRunsWhole], 1 * 2) << describe(drafts);
  EXPECT_EQ(drafts[Branch::DecodeRunsPartial], 1 * 2) << describe(drafts);
  EXPECT_EQ(drafts[Branch::DecodeRunsFromCache], 0) << describe(drafts);
  CompileOptions off = counted();
  off.decodeRuns = false;
  Counts plain = run(compile(off), {{6, 1}, {0, 1}, {2, 1}, {3, 1}, {17, 1}});
  EXPECT_EQ(plain[Branch::TokenRunsOff], 1) << describe(plain);
  EXPECT_EQ(plain[Branch::DecodeRunsWhole], -1) << describe(plain);
  EXPECT_EQ(plain[Branch::DecodeRunsPartial], -1) << describe(plain);
}

// Streaming stores from `streaming-stores-min-iterations` outer iterations
// of the nest on: (run of 4 tokens, head) in the token-run nest.
TEST_F(BranchTest, StreamingStoresOnForLargeStepsOffForSmall) {
  CompileOptions options = counted();
  options.streamingStoresMinIterations = 32;
  exec::JitEngine *engine = compile(options);
  Counts large = run(engine, {{0, 64}}); // 16 runs x 2 heads = 32
  EXPECT_EQ(large[Branch::StreamingOn], 1) << describe(large);
  EXPECT_EQ(large[Branch::StreamingOff], 0) << describe(large);
  Counts below = run(engine, {{0, 60}}); // 15 runs x 2 heads = 30
  EXPECT_EQ(below[Branch::StreamingOn], 0) << describe(below);
  EXPECT_EQ(below[Branch::StreamingOff], 1) << describe(below);
  // The decode-run nest keeps ordinary stores: no branch.
  Counts decode = run(engine, {{6, 1}});
  EXPECT_EQ(decode[Branch::TokenRunsOff], 1) << describe(decode);
  EXPECT_EQ(decode[Branch::StreamingOn], 0) << describe(decode);
  EXPECT_EQ(decode[Branch::StreamingOff], 0) << describe(decode);
}

// Threads from `min-parallel-iterations` outer iterations on; smaller
// steps on the calling thread.
TEST_F(BranchTest, ThreadedForLargeStepsSequentialForSmall) {
  CompileOptions options = counted();
  options.threads = 2;
  options.minParallelIterations = 32;
  exec::JitEngine *engine = compile(options);
  Counts large = run(engine, {{0, 64}});
  EXPECT_EQ(large[Branch::Threaded], 1) << describe(large);
  EXPECT_EQ(large[Branch::Sequential], 0) << describe(large);
  Counts below = run(engine, {{0, 60}});
  EXPECT_EQ(below[Branch::Threaded], 0) << describe(below);
  EXPECT_EQ(below[Branch::Sequential], 1) << describe(below);
  Counts decode = run(engine, {{6, 1}, {2, 1}});
  EXPECT_EQ(decode[Branch::Threaded], 0) << describe(decode);
  EXPECT_EQ(decode[Branch::Sequential], 1) << describe(decode);
}

// With avx512-bf16, each 64-byte line of a decode-run output (here one
// per (token, head): the stream is 32 channels wide) is rounded by
// vcvtne2ps2bf16 unless a lane is a NaN or a denormal, which the
// instruction rounds otherwise (a denormal as 0, a NaN with its payload):
// such a line takes the software rounding. The bits are checked against
// the reference in every case.
TEST_F(BranchTest, DecodeLinesRoundedByAvx512Bf16UnlessNanOrDenormal) {
  if (!cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "the host has no AVX512-BF16 (or AVX512-BW/DQ): the "
                    "avx512-bf16 code cannot run here";
  CompileOptions options = counted();
  options.avx512Bf16 = true; // (the default here, as the host has it)
  exec::JitEngine *engine = compile(options);
  // 9 sequences of one token: 9 x 2 heads = 18 lines.
  const std::vector<Seq> decode = {{6, 1}, {3, 1}, {2, 1}, {9, 1}, {17, 1},
                                   {5, 1}, {4, 1}, {8, 1}, {31, 1}};
  Counts plain = run(engine, decode);
  EXPECT_EQ(plain[Branch::X86RoundedLine], 18) << describe(plain);
  EXPECT_EQ(plain[Branch::SoftwareRoundedLine], 0) << describe(plain);

  // A quiet NaN with a payload in token 3's input, head 1 (channel 32 + 5):
  // that lane's output is NaN.
  Counts nan = run(engine, decode, [](ConvInputs &in, int64_t stride) {
    in.x.buffer.data[3 * stride + 32 + 5] = 0x7fd3;
  });
  EXPECT_EQ(nan[Branch::X86RoundedLine], 17) << describe(nan);
  EXPECT_EQ(nan[Branch::SoftwareRoundedLine], 1) << describe(nan);

  // Tiny weights (2^-133), no bias, and token 0's inputs denormal below
  // 2^-127: token 0's outputs are denormal in every lane (both heads'
  // lines), the other tokens' are their inputs plus a denormal.
  Counts denormal = run(engine, decode, [](ConvInputs &in, int64_t stride) {
    for (size_t i = 0; i < in.weights.size; ++i)
      in.weights.data[i] = (i % 3 ? 0x0001 : 0x8001);
    for (size_t i = 0; i < in.bias.size; ++i)
      in.bias.data[i] = 0;
    for (int64_t c = 0; c < in.channels; ++c)
      in.x.buffer.data[c] =
          static_cast<uint16_t>(((c * 37) % 63 + 1) | (c % 2 ? 0x8000 : 0));
    (void)stride;
  });
  EXPECT_EQ(denormal[Branch::X86RoundedLine], 16) << describe(denormal);
  EXPECT_EQ(denormal[Branch::SoftwareRoundedLine], 2) << describe(denormal);

  // Without the option: no such branch.
  CompileOptions portable = counted();
  portable.avx512Bf16 = false;
  Counts off = run(compile(portable), decode);
  EXPECT_EQ(off[Branch::X86RoundedLine], -1) << describe(off);
  EXPECT_EQ(off[Branch::SoftwareRoundedLine], -1) << describe(off);
}

} // namespace
