//===- LayerProgramTest.cpp - The layer ABI's argument validator ----------===//
//
// What every caller of LayerProgram::invoke checks first (the C/Python
// call, replay and the serving executors do): validateArguments, the
// arguments against the function's types, the step's shape and the
// kernels' alignment contract. Each error names the argument and the value.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/LayerProgram.h"
#include "inkling/ExecutionEngine/LayerAbi.h"

#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::exec;

namespace {

#ifndef INKLING_SOURCE_DIR
#error "INKLING_SOURCE_DIR: the repository root"
#endif

/// Valid arguments for examples/small_layer.mlir (H 2, head_dim 8, hidden
/// 16, kernel 4, N 4): T = 4 tokens of B = 2 sequences, M = 2, an empty
/// history, in one 64-byte aligned arena; each buffer 2048 bytes apart.
struct SmallLayerArgs {
  explicit SmallLayerArgs(const LayerSignature &sig) : sig(sig) {
    arena.assign(1 << 16, 0);
    auto base = reinterpret_cast<uintptr_t>(arena.data());
    char *next = reinterpret_cast<char *>((base + 63) & ~uintptr_t(63));
    CallShape step;
    step.tokens = 4;
    step.rows = 2;
    step.cols = 2;
    step.cacheBytes = 2048;
    for (size_t i = 0; i < sig.args.size(); ++i) {
      MemRefArg arg;
      arg.data = next;
      next += 2048;
      arg.sizes = sig.expectedSizes(i, step);
      arg.strides = sig.expectedStrides(i, arg.sizes);
      args.push_back(arg);
    }
    // qsl [0, 2, 4], num_computed 0, slots 0..3 (blocks 0 and 1).
    int32_t *qsl = static_cast<int32_t *>(args[sig.queryStartLoc].data);
    qsl[1] = 2;
    qsl[2] = 4;
    auto *slots = static_cast<int64_t *>(args[sig.slotMapping].data);
    for (int t = 0; t < 4; ++t)
      slots[t] = t;
  }
  int first(ArgRole role) const {
    for (size_t i = 0; i < sig.args.size(); ++i)
      if (sig.args[i].role == role)
        return static_cast<int>(i);
    return -1;
  }
  const LayerSignature &sig;
  std::vector<char> arena;
  std::vector<MemRefArg> args;
};

std::string validate(const LayerSignature &sig,
                     const std::vector<MemRefArg> &args) {
  Status s = validateHostCall(sig, args);
  return s ? "ok" : s.message();
}

class LayerAbiTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto loaded = LayerProgram::load(
        std::string(INKLING_SOURCE_DIR) + "/examples/small_layer.mlir", "");
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    program = std::move(*loaded);
  }
  const LayerSignature &sig() const { return program->signature(); }
  std::unique_ptr<LayerProgram> program;
};

TEST_F(LayerAbiTest, ValidArgumentsPass) {
  SmallLayerArgs valid(sig());
  EXPECT_EQ(validate(sig(), valid.args), "ok");
  auto step = validateArguments(sig(), valid.args);
  ASSERT_TRUE(step) << step.status().message();
  EXPECT_EQ(step->tokens, 4);
  EXPECT_EQ(step->rows, 2);
  EXPECT_EQ(step->cols, 2);
  EXPECT_EQ(step->numBlocks, 4); // 2048 bytes of 512-byte pages
}

TEST_F(LayerAbiTest, TypesNameTheArgumentAndValue) {
  // A static size of the IR (k weights: memref<16x4xbf16>).
  SmallLayerArgs wrongSize(sig());
  int weights = wrongSize.first(ArgRole::Weights);
  wrongSize.args[weights].sizes[1] = 3;
  EXPECT_EQ(validate(sig(), wrongSize.args),
            "argument " + std::to_string(weights) +
                " (weights_k): shape [16, 3], expected [16, 4] "
                "(memref<16x4xbf16>)");

  // The alignment contract: a bf16 buffer 8 bytes past a 16-byte boundary.
  SmallLayerArgs misaligned(sig());
  int k = sig().input[0];
  misaligned.args[k].data = static_cast<char *>(misaligned.args[k].data) + 8;
  EXPECT_NE(
      validate(sig(), misaligned.args).find("argument 5 (input_k): data at 0x"),
      std::string::npos);
  EXPECT_NE(validate(sig(), misaligned.args).find(" is not 16-byte aligned"),
            std::string::npos);

  // Metadata need only their element alignment.
  SmallLayerArgs metadata(sig());
  int nc = sig().numComputed;
  metadata.args[nc].data = static_cast<char *>(metadata.args[nc].data) + 4;
  EXPECT_EQ(validate(sig(), metadata.args), "ok");

  // Count, rank and negative sizes.
  SmallLayerArgs fewer(sig());
  fewer.args.pop_back();
  EXPECT_NE(validate(sig(), fewer.args)
                .find("takes " + std::to_string(sig().args.size()) +
                      " arguments, got " +
                      std::to_string(sig().args.size() - 1)),
            std::string::npos);
  SmallLayerArgs negative(sig());
  negative.args[sig().slotMapping].sizes[0] = -1;
  EXPECT_EQ(validate(sig(), negative.args),
            "argument 4 (slot_mapping): size -1 of dim 0 is out of range");
  SmallLayerArgs offset(sig());
  offset.args[sig().slotMapping].offset = -2;
  EXPECT_NE(validate(sig(), offset.args).find("offset -2"), std::string::npos);
}

TEST_F(LayerAbiTest, ShapesAgreeBetweenArguments) {
  SmallLayerArgs tokens(sig());
  int v = sig().input[1];
  tokens.args[v].sizes[0] = 3;
  EXPECT_EQ(validate(sig(), tokens.args),
            "argument 6 (input_v): 3 tokens, but argument 5 (input_k) has 4");
  SmallLayerArgs rows(sig());
  rows.args[sig().numComputed].sizes[0] = 3;
  EXPECT_EQ(validate(sig(), rows.args),
            "argument 2 (num_computed): 3 entries, but argument 1 "
            "(query_start_loc) has B + 1 = 3");
}

TEST_F(LayerAbiTest, EmptyArraysTakeAnyStrides) {
  // numpy gives a zero-size array stride 0 (np.zeros((0, H, w))).
  SmallLayerArgs empty(sig());
  for (MemRefArg &arg : empty.args)
    if (!arg.sizes.empty() && &arg - empty.args.data() != sig().cache &&
        sig().args[&arg - empty.args.data()].role != ArgRole::Weights &&
        sig().args[&arg - empty.args.data()].role != ArgRole::Bias &&
        &arg - empty.args.data() != sig().queryStartLoc &&
        &arg - empty.args.data() != sig().numComputed &&
        &arg - empty.args.data() != sig().blockTable) {
      arg.sizes[0] = 0;
      std::fill(arg.strides.begin(), arg.strides.end(), 0);
    }
  int32_t *qsl = static_cast<int32_t *>(empty.args[sig().queryStartLoc].data);
  qsl[1] = qsl[2] = 0;
  EXPECT_EQ(validate(sig(), empty.args), "ok");
}

TEST_F(LayerAbiTest, OverlapsWithAWrittenBufferAreRefused) {
  // An output that is its input: later tokens would read overwritten x.
  SmallLayerArgs same(sig());
  const ConvInfo &conv = sig().convs.front();
  same.args[conv.out].data = same.args[conv.x].data;
  EXPECT_NE(validate(sig(), same.args)
                .find("argument " + std::to_string(conv.out) +
                      " (output_k): overlaps argument " +
                      std::to_string(conv.x) + " (input_k)"),
            std::string::npos)
      << validate(sig(), same.args);
  // Two outputs that are one buffer.
  SmallLayerArgs outputs(sig());
  const ConvInfo &other = sig().convs[1];
  outputs.args[other.out].data = outputs.args[conv.out].data;
  EXPECT_NE(validate(sig(), outputs.args).find("overlaps"), std::string::npos);
  // An input inside the cache bytes.
  SmallLayerArgs cache(sig());
  cache.args[conv.x].data =
      static_cast<char *>(cache.args[sig().cache].data) + 512;
  EXPECT_NE(validate(sig(), cache.args).find("overlaps argument 0 (cache)"),
            std::string::npos);
  // Two inputs may share bytes: neither is written.
  SmallLayerArgs inputs(sig());
  inputs.args[sig().input[1]].data = inputs.args[sig().input[0]].data;
  EXPECT_EQ(validate(sig(), inputs.args), "ok");
}

/// Two convs whose outputs may be views of one packed [T, k | v] buffer.
constexpr const char *kPackedOutputs = R"mlir(
#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!cache = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
!out = memref<?x2x8xbf16, strided<[?, 8, 1], offset: ?>>
func.func @packed(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,
    %k: memref<?x2x8xbf16>, %v: memref<?x2x8xbf16>,
    %wk: memref<16x4xbf16>, %wv: memref<16x4xbf16>, %yk: !out, %yv: !out) {
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %wk history %cache[k] layout #layout step %step into %yk
      : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache -> !out
  sconv.conv %v, %wv history %cache[v] layout #layout step %step into %yv
      : memref<?x2x8xbf16>, memref<16x4xbf16>, !cache -> !out
  sconv.insert %k into %cache[k] layout #layout step %step
      : memref<?x2x8xbf16>, !cache
  sconv.insert %v into %cache[v] layout #layout step %step
      : memref<?x2x8xbf16>, !cache
  return
}
)mlir";

TEST(LayerAbiPacked, InterleavedOutputsOfOneBufferPass) {
  auto loaded = LayerProgram::fromSource(kPackedOutputs, "packed.mlir", "");
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  std::unique_ptr<LayerProgram> program = std::move(*loaded);
  const LayerSignature &sig = program->signature();
  SmallLayerArgs packed(sig);
  const ConvInfo &k = sig.convs[0], &v = sig.convs[1];
  // Each token row 64 bytes: k's 32 bytes, then v's.
  packed.args[k.out].strides = {32, 8, 1};
  packed.args[v.out].data = packed.args[k.out].data;
  packed.args[v.out].offset = 16;
  packed.args[v.out].strides = {32, 8, 1};
  EXPECT_EQ(validate(sig, packed.args), "ok");
  // One element less and v's rows run into k's next row.
  packed.args[v.out].offset = 15;
  EXPECT_NE(validate(sig, packed.args)
                .find("argument 10 (output_v): overlaps argument 9 "
                      "(output_k)"),
            std::string::npos)
      << validate(sig, packed.args);
  // A token stride shorter than the row: an output that overlaps itself.
  packed.args[v.out].offset = 16;
  packed.args[k.out].strides = {8, 8, 1};
  EXPECT_NE(validate(sig, packed.args).find("its rows overlap"),
            std::string::npos)
      << validate(sig, packed.args);
}

TEST_F(LayerAbiTest, MetadataValuesNameTheEntry) {
  SmallLayerArgs first(sig());
  static_cast<int32_t *>(first.args[sig().queryStartLoc].data)[0] = 1;
  EXPECT_EQ(validate(sig(), first.args),
            "argument 1 (query_start_loc)[0] = 1, expected 0");
  SmallLayerArgs slot(sig());
  static_cast<int64_t *>(slot.args[sig().slotMapping].data)[3] = 16;
  EXPECT_EQ(validate(sig(), slot.args),
            "argument 4 (slot_mapping)[3] = 16: not -1 or a slot of the cache "
            "(4 blocks of 4)");
  SmallLayerArgs twice(sig());
  static_cast<int64_t *>(twice.args[sig().slotMapping].data)[3] = 1;
  EXPECT_EQ(validate(sig(), twice.args),
            "argument 4 (slot_mapping): slot 1 appears for tokens 1 and 3 "
            "(each token stores its own row)");
  SmallLayerArgs history(sig());
  static_cast<int32_t *>(history.args[sig().numComputed].data)[1] = 6;
  static_cast<int32_t *>(history.args[sig().blockTable].data)[2 + 1] = 9;
  EXPECT_EQ(validate(sig(), history.args),
            "argument 3 (block_table)[1][1] = 9: not a block of the cache (4 "
            "blocks)");
}

TEST(LayerAbiThreads, ThreadCountRange) {
  EXPECT_TRUE(checkThreadCount(0));
  EXPECT_TRUE(checkThreadCount(kMaxThreads));
  EXPECT_EQ(checkThreadCount(kMaxThreads + 1).message(),
            "threads=1025: expected 0 (every core) to 1024");
  EXPECT_FALSE(checkThreadCount(-1));
}

} // namespace

/// examples/small_layer_epilogues.mlir with the KV caches of vLLM's unified
/// page: K and V of a block in one 512-byte page (block stride 256
/// elements), V's view 128 elements after K's.
class LayerAbiEpilogueTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto file =
        llvm::MemoryBuffer::getFile(std::string(INKLING_SOURCE_DIR) +
                                    "/examples/small_layer_epilogues.mlir");
    ASSERT_TRUE(bool(file));
    std::string source = (*file)->getBuffer().str();
    std::string separate = "strided<[128, 16, 8, 1]>";
    size_t at = source.find(separate);
    ASSERT_NE(at, std::string::npos);
    source.replace(at, separate.size(), "strided<[256, 16, 8, 1]>");
    auto loaded = LayerProgram::fromSource(source, "epilogues.mlir", "");
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    program = std::move(*loaded);
  }
  const LayerSignature &sig() const { return program->signature(); }
  /// Valid arguments: 4 KV blocks of 8, tokens at attention slots 0..3.
  void fill(SmallLayerArgs &a) {
    int key = a.first(ArgRole::KvCache), value = key + 1;
    CallShape step;
    step.kvBlocks = 4;
    for (int kv : {key, value}) {
      a.args[kv].sizes = sig().expectedSizes(kv, step);
      a.args[kv].strides = sig().expectedStrides(kv, a.args[kv].sizes);
    }
    a.args[value].data = static_cast<char *>(a.args[key].data) + 256;
    auto *slots = static_cast<int64_t *>(a.args[sig().attnSlotMapping].data);
    for (int t = 0; t < 4; ++t)
      slots[t] = t;
  }
  std::unique_ptr<LayerProgram> program;
};

TEST_F(LayerAbiEpilogueTest, RolesComeFromTheOps) {
  const LayerSignature &s = sig();
  ASSERT_EQ(s.epilogues.size(), 4u);
  EXPECT_EQ(s.argName(14), "kv_cache_k");
  EXPECT_EQ(s.argName(16), "attn_slot_mapping");
  EXPECT_EQ(s.attnBlockSize, 8);
  EXPECT_TRUE(s.args[14].written());
  EXPECT_FALSE(s.args[16].written());
  EXPECT_EQ(s.args[13].role, ArgRole::NormWeight);
  EXPECT_FALSE(s.args[13].hiddenRow);
  EXPECT_TRUE(s.args[18].hiddenRow);
  // The convs' outputs are buffers of the function: no output argument.
  for (const ConvInfo &conv : s.convs)
    EXPECT_EQ(conv.out, -1);
  // The MLP path reads the ATTN path's sum: one argument, role sum.
  const EpilogueInfo &attn = s.epilogues[2], &mlp = s.epilogues[3];
  EXPECT_EQ(mlp.residual, attn.sum);
  EXPECT_EQ(s.args[attn.sum].role, ArgRole::Sum);
  EXPECT_EQ(s.args[attn.residual].role, ArgRole::Residual);
  // Each epilogue runs with its conv (a replay keeps it).
  EXPECT_EQ(s.ops[0].epilogues, std::vector<int>{0});
  EXPECT_EQ(s.ops[6].epilogues, std::vector<int>{3});
}

TEST_F(LayerAbiEpilogueTest, KAndVOfOnePagePass) {
  SmallLayerArgs a(sig());
  fill(a);
  EXPECT_EQ(validate(sig(), a.args), "ok");
  // Eight elements less (still 16-byte aligned) and V's blocks run into
  // K's.
  int key = a.first(ArgRole::KvCache);
  a.args[key + 1].data = static_cast<char *>(a.args[key].data) + 240;
  EXPECT_NE(validate(sig(), a.args)
                .find("(kv_cache_v): overlaps argument 14 "
                      "(kv_cache_k)"),
            std::string::npos)
      << validate(sig(), a.args);
}

TEST_F(LayerAbiEpilogueTest, AttentionSlotsFitTheKvCaches) {
  SmallLayerArgs a(sig());
  fill(a);
  auto *slots = static_cast<int64_t *>(a.args[sig().attnSlotMapping].data);
  slots[2] = 32; // 4 blocks of 8
  EXPECT_EQ(validate(sig(), a.args),
            "argument 16 (attn_slot_mapping)[2] = 32: not -1 or a slot of "
            "the KV caches (4 blocks of 8)");
  slots[2] = -1;
  EXPECT_EQ(validate(sig(), a.args), "ok");
  slots[2] = 31;
  EXPECT_EQ(validate(sig(), a.args), "ok");
  slots[3] = 31;
  EXPECT_EQ(validate(sig(), a.args),
            "argument 16 (attn_slot_mapping): slot 31 appears for tokens 2 "
            "and 3 (each token stores its own row)");
}
