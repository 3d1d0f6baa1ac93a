//===- LowerToCPUTest.cpp - JIT the CPU lowering against the reference ----===//
//
// Builds sconv IR for a layout, lowers it with `inkling-lower-to-cpu`, JITs
// it (JitEngine, once per layout and test suite) and runs it
// on random steps (mixed batches of prefills from 0, chunked prefills,
// decodes and short speculative chunks), comparing every output and the whole
// cache buffer bit for bit with the independent reference
// (inkling/Runtime/Reference.h). Outputs and every cache byte are poisoned
// (0xFFFF, a NaN) before each run, so the comparison of the whole buffer also
// checks that the padding [raw, D), the page padding and every slot the step
// does not store keep their poison.
//
// SiLU alone gets a tolerance of 1 bf16 ulp: exp comes from libm here and
// from the GPU's own exp elsewhere (docs/Design.md section 4). Everything else
// is compared exactly.
//
//===----------------------------------------------------------------------===//

#include "Harness/Compare.h"
#include "Harness/JitFixture.h"
#include "Harness/JitHarness.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"

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
using namespace inkling::harness;

namespace {

/// A kernel's C interface: the cache and the step's metadata, then `Rest`.
template <typename... Rest>
using KernelFn = void (*)(MemI8 *, MemI32 *, MemI32 *, MemI32x2 *, MemI64 *,
                          Rest...);

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

/// The module: `insert_all` (the four inserts), `conv_<stream>_<variant>`,
/// the same with token_seq as `padded_...`, and, with a status buffer,
/// `checked_insert_k` and `checked_conv_k`.
std::string buildModule(const LayoutCase &lc, const Layout &layout,
                        int64_t pageBytes, bool checked) {
  LayerText text(lc.config, layout, pageBytes);
  std::ostringstream os;
  std::string meta = LayerText::metadataParams(false);
  auto xType = [&](Stream s, bool flat) {
    return typeOfStream(layout, s, flat, lc.stridedStreams);
  };
  // `<prefix>insert_all` and `<prefix>conv_<stream>_<variant>`; with
  // `tokenSeq`, taking the per-token operand (and padded steps).
  auto addFunctions = [&](const std::string &prefix, bool tokenSeq) {
    std::string params = meta + (tokenSeq ? ", %token_seq: memref<?xi32>" : "");
    std::string bindAndStep = text.bindAndStep(false, tokenSeq);
    os << "func.func @" << prefix << "insert_all(" << params;
    for (Stream s : kAllStreams)
      os << ", %x_" << streamName(s) << ": " << xType(s, isFlat(s));
    os << ") {\n" << bindAndStep;
    for (Stream s : kAllStreams)
      os << text.insert(std::string("x_") + streamName(s), s,
                        xType(s, isFlat(s)));
    os << "  return\n}\n";
    for (Stream s : kAllStreams) {
      std::string x = xType(s, isFlat(s));
      for (const ConvVariant &v : kVariants) {
        os << "func.func @" << prefix << "conv_" << streamName(s) << "_"
           << v.name << "(" << params << ", %x: " << x
           << ", %w: " << text.weightsType(s) << ", %bias: " << text.biasType(s)
           << ", %y: " << x << ") {\n"
           << bindAndStep;
        LayerText::Conv conv{"x", "w", v.bias ? "bias" : "", "y"};
        conv.silu = v.silu;
        conv.residual = v.residual;
        os << text.conv(conv, s, x) << "  return\n}\n";
      }
    }
  };
  os << "module {\n";
  if (!checked) {
    addFunctions("", false);
    addFunctions("padded_", true);
  } else {
    Stream s = Stream::K;
    std::string x = xType(s, false);
    os << "func.func @checked_insert_k(" << meta
       << ", %status: memref<?xi64>, %x: " << x << ") {\n"
       << text.bindAndStep(true) << text.insert("x", s, x) << "  return\n}\n";
    os << "func.func @checked_conv_k(" << meta
       << ", %status: memref<?xi64>, %x: " << x
       << ", %w: " << text.weightsType(s) << ", %y: " << x << ") {\n"
       << text.bindAndStep(true) << text.conv({"x", "w", "", "y"}, s, x)
       << "  return\n}\n";
  }
  os << "}\n";
  return os.str();
}

/// Lowers and JITs `source`, once per process (a test failure when it does
/// not compile).
exec::JitEngine *compile(const std::string &source, bool checked) {
  CompileOptions options;
  options.checked = checked;
  std::string error;
  exec::JitEngine *engine = compileCached(source, options, error);
  if (!engine)
    ADD_FAILURE() << error;
  return engine;
}

template <typename Fn>
Fn lookup(exec::JitEngine &engine, const std::string &name) {
  void *address = lookupFunction(engine, name);
  if (!address)
    ADD_FAILURE() << "no function " << name;
  return reinterpret_cast<Fn>(address);
}

/// Function `name` of `engine` into `fn`: success, or a failure that says
/// whether the engine or the function is missing.
template <typename Fn>
::testing::AssertionResult findFunction(exec::JitEngine *engine,
                                        const std::string &name, Fn &fn) {
  if (!engine)
    return ::testing::AssertionFailure() << "no engine";
  fn = lookup<Fn>(*engine, name);
  if (!fn)
    return ::testing::AssertionFailure() << "no " << name;
  return ::testing::AssertionSuccess();
}

//===----------------------------------------------------------------------===//
// The fixture
//===----------------------------------------------------------------------===//

/// What the mutation tests corrupt after the kernel ran, before the
/// compare: a compare that cannot see it would let a kernel bug through.
enum class Corrupt { Nothing, Output, Cache };

class LowerToCPUTest : public ::testing::TestWithParam<LayoutCase> {
protected:
  static void SetUpTestSuite() { initializeNativeTarget(); }

  ::testing::AssertionResult insertMatchesReference(int seeds, Corrupt corrupt);
  ::testing::AssertionResult convMatchesReference(int seeds, Corrupt corrupt);
  ::testing::AssertionResult paddedMatchesReference(int seeds);

  struct Compiled : TestLayout {
    exec::JitEngine *engine = nullptr, *checkedEngine = nullptr;
  };

  /// JIT-compiles each layout (and mode) once per test process, on demand
  /// (ctest runs a layout's tests in one process: unittests/CMakeLists.txt).
  Compiled &compiled(bool checked = false) {
    const LayoutCase &lc = GetParam();
    bool made;
    Compiled *slot =
        &testCaseState<Compiled>(lc.name, lc.config, lc.pagePaddingBytes, made);
    auto &engine = checked ? slot->checkedEngine : slot->engine;
    if (!engine)
      engine = compile(buildModule(lc, slot->layout, slot->pageBytes, checked),
                       checked);
    return *slot;
  }

  int64_t tokenStride(const Layout &layout, Stream stream) const {
    return streamTokenStride(layout, stream, GetParam().stridedStreams);
  }

  /// Random inputs of every stream (in [-8, 8]), their descriptors in
  /// `args`, and the reference insert of each into `expected`.
  struct InsertInputs {
    std::vector<std::unique_ptr<StreamData>> data;
    std::vector<std::unique_ptr<char[]>> keep;
    void *args[kNumStreams];
  };
  void randomInsertInputs(std::mt19937_64 &rng, const Compiled &c,
                          const Step &step, int64_t tokens,
                          std::vector<uint16_t> &expected, InsertInputs &in) {
    const Layout &layout = c.layout;
    for (Stream s : kAllStreams) {
      auto data = std::make_unique<StreamData>(tokens, tokenStride(layout, s));
      fillRandom(data->buffer, rng, 8.0f);
      in.args[static_cast<int>(s)] =
          data->descriptor(layout, s, isFlat(s), tokens, in.keep);
      referenceInsert(layout, s, data->view(), step.meta,
                      {expected.data(), c.pageBytes / 2, step.numBlocks});
      in.data.push_back(std::move(data));
    }
  }

  /// An insert's call: the cache for `step` (poisoned, random history), the
  /// inputs of every stream, the reference's cache after inserting them, and
  /// the step's descriptors.
  struct InsertRun {
    InsertRun(std::mt19937_64 &rng, const Layout &layout, Step &step,
              int64_t blockStride)
        : cache(makeCache(rng, layout, step, blockStride, kPoison)),
          expected(cache.data, cache.data + cache.size) {}
    AlignedBuffer<uint16_t> cache;
    std::vector<uint16_t> expected;
    InsertInputs in;
    Call call;
  };
  std::unique_ptr<InsertRun> prepareInsert(std::mt19937_64 &rng,
                                           const Compiled &c, Step &step,
                                           int64_t tokens) {
    auto run =
        std::make_unique<InsertRun>(rng, c.layout, step, c.pageBytes / 2);
    randomInsertInputs(rng, c, step, tokens, run->expected, run->in);
    run->call =
        makeCall(run->cache.data, step.numBlocks * c.pageBytes, step.meta);
    return run;
  }

  /// One conv variant's random operands, the reference's output over
  /// `cache` and the descriptors of the call (y is poisoned).
  struct ConvRun {
    ConvRun(std::mt19937_64 &rng, const Layout &layout, Stream s,
            int64_t tokens, int64_t tokenStride)
        : in(rng, layout, s, tokens, tokenStride), y(tokens, tokenStride),
          expected(tokens, tokenStride) {}
    ConvInputs in;
    StreamData y, expected;
    std::vector<std::unique_ptr<char[]>> keep;
    void *xd = nullptr, *yd = nullptr;
    Mem2 wd;
    Mem1 bd;
  };
  std::unique_ptr<ConvRun> prepareConv(std::mt19937_64 &rng, const Compiled &c,
                                       Stream s, const ConvVariant &v,
                                       int64_t tokens, const Step &step,
                                       uint16_t *cache) {
    const Layout &layout = c.layout;
    auto run = std::make_unique<ConvRun>(rng, layout, s, tokens,
                                         tokenStride(layout, s));
    ConvOptions options;
    options.residual = v.residual;
    options.silu = v.silu;
    options.bias = v.bias ? run->in.bias.data : nullptr;
    referenceConv(layout, s, run->in.x.view(), run->in.weights.data, step.meta,
                  {cache, c.pageBytes / 2, step.numBlocks}, options,
                  run->expected.mutableView());
    run->xd = run->in.x.descriptor(layout, s, isFlat(s), tokens, run->keep);
    run->yd = run->y.descriptor(layout, s, isFlat(s), tokens, run->keep);
    run->wd = run->in.weightsDescriptor();
    run->bd = run->in.biasDescriptor();
    return run;
  }
  /// One conv variant on random operands over `cache`: `call` runs the
  /// function on the run's descriptors, `corrupt` flips a bit afterwards
  /// (the mutation tests). Compares the whole output buffer (the filler
  /// between rows keeps its poison) with the reference, and the cache with
  /// itself before.
  template <typename CallFn>
  ::testing::AssertionResult
  convMatches(std::mt19937_64 &rng, const Compiled &c, Stream s,
              const ConvVariant &v, int64_t tokens, const Step &step,
              AlignedBuffer<uint16_t> &cache, Corrupt corrupt,
              const std::string &what, CallFn call) {
    std::vector<uint16_t> cacheBefore(cache.data, cache.data + cache.size);
    std::unique_ptr<ConvRun> run =
        prepareConv(rng, c, s, v, tokens, step, cache.data);
    call(*run);
    AlignedBuffer<uint16_t> &y = run->y.buffer;
    if (corrupt == Corrupt::Output)
      y.data[y.size / 2] ^= 0x4000;
    if (corrupt == Corrupt::Cache)
      cache.data[cache.size / 2] ^= 0x4000;
    if (auto same = sameBits(run->expected.buffer.data, y.data, y.size,
                             v.silu ? 1 : 0, what);
        !same)
      return same;
    return sameBits(cacheBefore.data(), cache.data, cache.size, 0,
                    what + ": the conv wrote the cache");
  }
};

/// The insert of every stream on `seeds` random steps, compared with the
/// reference: success, or the first mismatch.
::testing::AssertionResult
LowerToCPUTest::insertMatchesReference(int seeds, Corrupt corrupt) {
  Compiled &c = compiled();
  const Layout &layout = c.layout;
  using InsertFn = KernelFn<void *, void *, void *, void *>;
  InsertFn insert = nullptr;
  if (auto found = findFunction(c.engine, "insert_all", insert); !found)
    return found;
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    Step step = randomStep(rng, layout);
    std::unique_ptr<InsertRun> run =
        prepareInsert(rng, c, step, step.meta.numTokens());
    auto &[cache, expected, in, call] = *run;
    insert(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, in.args[0],
           in.args[1], in.args[2], in.args[3]);
    if (corrupt == Corrupt::Cache)
      cache.data[cache.size / 2] ^= 0x4000;
    if (auto same =
            sameBits(expected.data(), cache.data, cache.size, 0,
                     "cache after insert (seed " + std::to_string(seed) + ")");
        !same)
      return same;
  }
  return ::testing::AssertionSuccess();
}

TEST_P(LowerToCPUTest, InsertMatchesReference) {
  EXPECT_TRUE(insertMatchesReference(GetParam().seeds, Corrupt::Nothing));
}

/// Every conv variant of every stream on `seeds` random steps, outputs and
/// the (unchanged) cache compared: success, or the first mismatch.
::testing::AssertionResult
LowerToCPUTest::convMatchesReference(int seeds, Corrupt corrupt) {
  Compiled &c = compiled();
  const Layout &layout = c.layout;
  using ConvFn = KernelFn<void *, Mem2 *, Mem1 *, void *>;
  int64_t blockStride = c.pageBytes / 2;
  for (Stream s : kAllStreams) {
    for (const ConvVariant &v : kVariants) {
      std::string name = std::string("conv_") + streamName(s) + "_" + v.name;
      ConvFn conv = nullptr;
      if (auto found = findFunction(c.engine, name, conv); !found)
        return found;
      // The last seed: long sequences.
      for (int seed = 0; seed <= seeds; ++seed) {
        std::mt19937_64 rng(7000 + seed * 31 + static_cast<int>(s));
        Step step = randomStep(rng, layout, seed == seeds ? kLongChunk : 9);
        int64_t tokens = step.meta.numTokens();
        AlignedBuffer<uint16_t> cache =
            makeCache(rng, layout, step, blockStride, kPoison);
        Call call =
            makeCall(cache.data, step.numBlocks * c.pageBytes, step.meta);
        if (auto same = convMatches(
                rng, c, s, v, tokens, step, cache, corrupt,
                name + " (seed " + std::to_string(seed) + ")",
                [&](ConvRun &run) {
                  conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots,
                       run.xd, &run.wd, &run.bd, run.yd);
                });
            !same)
          return same;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(LowerToCPUTest, ConvMatchesReference) {
  EXPECT_TRUE(convMatchesReference(GetParam().seeds, Corrupt::Nothing));
}

/// Pads `step` with 1..9 tokens as graph capture does and poisons them: a
/// padding slot addresses the first live history row (if any), a padding
/// token_seq entry is no sequence. Returns token_seq: each real token's
/// sequence, then the padding entries.
std::vector<int32_t> padStep(std::mt19937_64 &rng, const Layout &layout,
                             Step &step) {
  StepMetadata &meta = step.meta;
  int64_t tokens = meta.numTokens(), n = layout.blockSize;
  int64_t pad = std::uniform_int_distribution<int64_t>(1, 9)(rng);
  std::vector<int32_t> tokenSeq;
  for (int64_t b = 0; b < meta.numSequences(); ++b)
    for (int32_t t = meta.queryStartLoc[b]; t < meta.queryStartLoc[b + 1]; ++t)
      tokenSeq.push_back(static_cast<int32_t>(b));
  int64_t slot = -1;
  if (!step.history.empty()) {
    auto [b, q] = step.history.front();
    slot =
        int64_t(meta.blockTable[b * meta.blockTableWidth + q / n]) * n + q % n;
  }
  meta.paddedTokens = tokens + pad;
  meta.slotMapping.resize(tokens);
  for (int64_t i = 0; i < pad; ++i) {
    meta.slotMapping.push_back(slot);
    tokenSeq.push_back(1 << 20);
  }
  return tokenSeq;
}

/// Every insert and conv variant with token_seq on padded steps: the real
/// tokens as the reference computes them, the padding tokens' outputs equal
/// to their inputs, no cache byte written by a padding token.
::testing::AssertionResult LowerToCPUTest::paddedMatchesReference(int seeds) {
  Compiled &c = compiled();
  const Layout &layout = c.layout;
  using InsertFn = KernelFn<MemI32 *, void *, void *, void *, void *>;
  using ConvFn = KernelFn<MemI32 *, void *, Mem2 *, Mem1 *, void *>;
  InsertFn insert = nullptr;
  if (auto found = findFunction(c.engine, "padded_insert_all", insert); !found)
    return found;
  // The last seed: long sequences.
  for (int seed = 0; seed <= seeds; ++seed) {
    std::mt19937_64 rng(3000 + seed);
    Step step = randomStep(rng, layout, seed == seeds ? kLongChunk : 9);
    std::vector<int32_t> tokenSeq = padStep(rng, layout, step);
    int64_t tokens = step.meta.paddedTokens;
    MemI32 seqDesc = descriptor<int32_t, 1>(tokenSeq.data(), {tokens}, {1});
    std::unique_ptr<InsertRun> inserted = prepareInsert(rng, c, step, tokens);
    AlignedBuffer<uint16_t> &cache = inserted->cache;
    const std::vector<uint16_t> &expected = inserted->expected;
    const InsertInputs &in = inserted->in;
    Call &call = inserted->call;
    insert(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, &seqDesc,
           in.args[0], in.args[1], in.args[2], in.args[3]);
    if (auto same = sameBits(expected.data(), cache.data, cache.size, 0,
                             "cache after a padded insert (seed " +
                                 std::to_string(seed) + ")");
        !same)
      return same;

    for (Stream s : kAllStreams) {
      for (const ConvVariant &v : kVariants) {
        std::string name =
            std::string("padded_conv_") + streamName(s) + "_" + v.name;
        ConvFn conv = nullptr;
        if (auto found = findFunction(c.engine, name, conv); !found)
          return found;
        if (auto same = convMatches(
                rng, c, s, v, tokens, step, cache, Corrupt::Nothing,
                name + " (seed " + std::to_string(seed) + ")",
                [&](ConvRun &run) {
                  conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots,
                       &seqDesc, run.xd, &run.wd, &run.bd, run.yd);
                });
            !same)
          return same;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(LowerToCPUTest, PaddedStepWithTokenSeqMatchesReference) {
  EXPECT_TRUE(paddedMatchesReference(GetParam().seeds));
}

// The compares fire: one flipped bit after the kernel (an exponent bit, so
// SiLU's 1-ulp tolerance does not hide it) fails them, naming the element.
// One layout (odd widths, padded pages) is enough to show it.
class LowerToCPUMutationTest : public LowerToCPUTest {};

TEST_P(LowerToCPUMutationTest, InsertCompareSeesACorruptedCache) {
  ::testing::AssertionResult r = insertMatchesReference(1, Corrupt::Cache);
  ASSERT_FALSE(r);
  EXPECT_NE(
      std::string(r.message()).find("cache after insert (seed 0): element"),
      std::string::npos)
      << r.message();
}

TEST_P(LowerToCPUMutationTest, ConvCompareSeesACorruptedOutput) {
  ::testing::AssertionResult r = convMatchesReference(1, Corrupt::Output);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("conv_k_plain (seed 0): element"),
            std::string::npos)
      << r.message();
}

TEST_P(LowerToCPUMutationTest, ConvCompareSeesAWrittenCache) {
  ::testing::AssertionResult r = convMatchesReference(1, Corrupt::Cache);
  ASSERT_FALSE(r);
  EXPECT_NE(
      std::string(r.message())
          .find("conv_k_plain (seed 0): the conv wrote the cache: element"),
      std::string::npos)
      << r.message();
}

/// A step of bad ids: one sequence decoding at position 2*N + 1 (its
/// history, when W > 1, starts in logical block 1 or 2) whose every logical
/// block maps to block 99 (out of range), plus a second 3-token chunk.
/// Token 0's slot is beyond the cache; token 1's is -1 (fine); token 2's -7
/// (bad); token 3 (sequence 1, position 2) has its own slot `ownSlot`, in
/// block block_table[1][2 / N] = 1.
Step outOfRangeStep(const Layout &layout, int64_t ownSlot) {
  int64_t n = layout.blockSize;
  Step step;
  int64_t nc = 2 * n + 1;
  step.meta.queryStartLoc = {0, 1, 4};
  step.meta.numComputed = {static_cast<int32_t>(nc), 0};
  step.meta.blockTableWidth = 3 + 3 / n + 1;
  step.numBlocks = 6;
  step.meta.blockTable.assign(2 * step.meta.blockTableWidth, 1);
  for (int64_t j = 0; j < step.meta.blockTableWidth; ++j)
    step.meta.blockTable[j] = 99;
  step.meta.slotMapping = {step.numBlocks * n + 1, -1, -7, ownSlot};
  return step;
}

/// checked=true: out-of-range slots and block ids are skipped and reported
/// in the status buffer [count, kind, token, value, limit]; in-range
/// accesses still happen.
TEST_P(LowerToCPUTest, CheckedReportsOutOfRangeIds) {
  Compiled &c = compiled(/*checked=*/true);
  ASSERT_TRUE(c.checkedEngine);
  const Layout &layout = c.layout;
  using InsertFn = KernelFn<MemI64 *, void *>;
  using ConvFn = KernelFn<MemI64 *, void *, Mem2 *, void *>;
  auto insert = lookup<InsertFn>(*c.checkedEngine, "checked_insert_k");
  auto conv = lookup<ConvFn>(*c.checkedEngine, "checked_conv_k");
  ASSERT_TRUE(insert && conv);
  int64_t blockStride = c.pageBytes / 2;
  int64_t n = layout.blockSize, kernel = layout.config.kernel;
  Stream s = Stream::K;

  int64_t own = 1 * n + 2 % n;
  Step step = outOfRangeStep(layout, own);
  AlignedBuffer<uint16_t> cache(step.numBlocks * blockStride, kPoison);
  std::vector<uint16_t> before(cache.data, cache.data + cache.size);
  std::mt19937_64 rng(42);
  ConvInputs in(rng, layout, s, 4, tokenStride(layout, s));
  std::vector<std::unique_ptr<char[]>> keep;
  void *xd = in.x.descriptor(layout, s, false, 4, keep);
  std::vector<int64_t> status(5, 0);
  MemI64 sd = descriptor<int64_t, 1>(status.data(), {5}, {1});
  Call call = makeCall(cache.data, step.numBlocks * c.pageBytes, step.meta);
  insert(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, &sd, xd);
  // Two bad tokens; the first one reported is token 0 (the CPU runs the
  // loops in order): kind 1 (slot), its slot, the limit num_blocks * N.
  EXPECT_EQ(status, (std::vector<int64_t>{2, 1, 0, step.numBlocks * n + 1,
                                          step.numBlocks * n}));
  // Only token 3's row was written.
  StepMetadata valid = step.meta;
  valid.slotMapping = {-1, -1, -1, own};
  referenceInsert(layout, s, in.x.view(), valid,
                  {before.data(), blockStride, step.numBlocks});
  EXPECT_TRUE(
      sameBits(before.data(), cache.data, cache.size, 0, "checked insert"));

  // A slot in range that is not the token's own (here a row of block 2,
  // which the step does not own) is skipped and reported as kind 4, with
  // the expected slot as the limit.
  std::vector<uint16_t> afterFirst(cache.data, cache.data + cache.size);
  step.meta.slotMapping = {-1, -1, -1, 2 * n + 1};
  std::fill(status.begin(), status.end(), 0);
  Call wrong = makeCall(cache.data, step.numBlocks * c.pageBytes, step.meta);
  insert(&wrong.cache, &wrong.qsl, &wrong.nc, &wrong.bt, &wrong.slots, &sd, xd);
  EXPECT_EQ(status, (std::vector<int64_t>{1, 4, 3, 2 * n + 1, own}));
  EXPECT_TRUE(sameBits(afterFirst.data(), cache.data, cache.size, 0,
                       "checked insert of a slot that is not the token's"));
  step.meta.slotMapping = {step.numBlocks * n + 1, -1, -7, own};

  if (kernel == 1)
    return; // no history taps, no block ids to check
  Mem2 wd = in.weightsDescriptor();
  StreamData y(4, tokenStride(layout, s));
  void *yd = y.descriptor(layout, s, false, 4, keep);
  std::fill(status.begin(), status.end(), 0);
  conv(&call.cache, &call.qsl, &call.nc, &call.bt, &call.slots, &sd, xd, &wd,
       yd);
  // Token 0 reads W-1 history taps, all through block 99.
  EXPECT_EQ(status,
            (std::vector<int64_t>{kernel - 1, 2, 0, 99, step.numBlocks}));
}

// kv_heads 8 / head_dim 128 / hidden 4096 / kernel 4 is the real model; the
// small layouts have odd widths (scalar tails, unaligned stream offsets),
// padded pages whose block stride is not a multiple of 8 (unaligned cache
// rows), strided stream rows, and kernels 1, 2, 3 and 8; block sizes N != W.
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
        LayoutCase{"tiny_k1", {1, 8, 8, 1, 1, "bf16"}, 2, false, 15},
        // Block sizes N independent of W (the engine's choice): N = 1, 3,
        // 2W, 8W on the real layout (N = W above); N < W-1, N = W-1 and
        // N > W on the small ones (a history spanning up to W-1 blocks).
        LayoutCase{"real_n1", {8, 128, 4096, 4, 1, "bf16", 1}, 0, false, 2},
        LayoutCase{"real_n3", {8, 128, 4096, 4, 1, "bf16", 3}, 0, false, 2},
        LayoutCase{"real_n8", {8, 128, 4096, 4, 1, "bf16", 8}, 0, false, 2},
        LayoutCase{"real_tp2_n32_padded",
                   {8, 128, 4096, 4, 2, "bf16", 32},
                   8192,
                   false,
                   2},
        LayoutCase{"odd_k3_n1", {2, 3, 10, 3, 1, "bf16", 1}, 6, false, 15},
        LayoutCase{"odd_k3_n5", {2, 3, 10, 3, 1, "bf16", 5}, 0, true, 15},
        LayoutCase{"wide_k8_n3", {2, 16, 16, 8, 1, "bf16", 3}, 0, false, 15},
        LayoutCase{"wide_k8_n7", {2, 16, 16, 8, 1, "bf16", 7}, 2, false, 10},
        LayoutCase{"tiny_k1_n6", {1, 8, 8, 1, 1, "bf16", 6}, 0, false, 10}),
    [](const ::testing::TestParamInfo<LayoutCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    OneLayout, LowerToCPUMutationTest,
    ::testing::Values(LayoutCase{
        "odd_k3_padded6", {2, 3, 10, 3, 1, "bf16"}, 6, false, 1}),
    [](const ::testing::TestParamInfo<LayoutCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
