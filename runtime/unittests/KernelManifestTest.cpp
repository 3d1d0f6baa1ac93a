//===- KernelManifestTest.cpp - The kernel bundle's manifest --------------===//

#include "inkling/Runtime/KernelManifest.h"
#include "ManifestFixture.h"

#include <gtest/gtest.h>

#include <string>

using namespace inkling;
using inkling::fixtures::manifest;
using inkling::fixtures::manifestWithScratch;

namespace {

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// The fixture with `from` (once in it) replaced by `to`.
std::string edited(const std::string &from, const std::string &to) {
  std::string text = manifest();
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Json, DecodesEscapes) {
  auto m = KernelManifest::parse(
      edited(R"("attributes": "{}")",
             R"("attributes": "x\"\\\/\n\u00e9\ud83d\ude00")"));
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->kernels[0].attributes, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, RejectsMalformedDocuments) {
  const char *bad[] = {
      "",
      "{",
      "[1,]",
      "{\"a\":1,}",
      "{'a':1}",
      "01",
      "1.",
      ".5",
      "-",
      "1e",
      "\"\\x\"",
      "\"a",
      "\"\\ud800\"",
      "tru",
      "[1] 2",
      "{\"a\" 1}",
      "{1:2}",
      "\"\x01\"",
      "{\"a\":1,\"a\":2}",
      "{\"b\": {\"a\":1,\"a\":2}}",
      "nan",
      "{} // a comment",
  };
  for (const char *text : bad) {
    auto m = KernelManifest::parse(text);
    EXPECT_FALSE(m) << "accepted: " << text;
    if (!m) {
      EXPECT_EQ(m.status().code(), StatusCode::InvalidArgument);
      EXPECT_EQ(m.status().message().rfind("kernel manifest: JSON: ", 0), 0u)
          << m.status().message();
    }
  }
}

TEST(Json, RefusesDuplicateKeysAtAnyDepth) {
  auto m = KernelManifest::parse(
      edited(R"("rank": 3,)", R"("rank": 3, "rank": 3,)"));
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("duplicate key \"rank\""),
            std::string::npos)
      << m.status().message();
}

TEST(Json, LimitsNesting) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto m = KernelManifest::parse(deep);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("nesting"), std::string::npos);
  // 64 levels are fine for the parser (the manifest check then refuses it).
  std::string ok(64, '[');
  ok += std::string(64, ']');
  m = KernelManifest::parse(ok);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("is not an object"), std::string::npos)
      << m.status().message();
}

TEST(Json, IntegersAreWrittenAsIntegersAndFitInt64) {
  for (const char *rank :
       {"3.0", "3e0", "9223372036854775808", "-9223372036854775809"}) {
    auto m = KernelManifest::parse(
        edited(R"("rank": 3,)", std::string("\"rank\": ") + rank + ","));
    ASSERT_FALSE(m) << rank;
    EXPECT_NE(m.status().message().find("\"rank\" is not an integer"),
              std::string::npos)
        << m.status().message();
  }
  auto m = KernelManifest::parse(edited(R"("rank": 3,)", R"("rank": "3",)"));
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("\"rank\" is not a number"),
            std::string::npos)
      << m.status().message();
  // A large exact integer reads back exactly.
  m = KernelManifest::parse(
      edited(R"("offset": 0,)", R"("offset": 9223372036854775807,)"));
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->kernels[0].args[0].offset, 9223372036854775807);
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

/// The manifest inkling-gpu-write-kernels wrote for the bundled example at
/// build time (bench/gpu/CMakeLists.txt: examples/decoder_layer.mlir,
/// fusion=none), read back by the runtime's reader: the two sides agree on
/// what the writer actually writes, not on a hand-written copy.
TEST(KernelManifest, ParsesWhatTheWriterWrites) {
#ifndef INKLING_BUILT_KERNEL_BUNDLE
  GTEST_SKIP() << "the runtime was built alone, without the kernels";
#else
  auto m = KernelManifest::load(INKLING_BUILT_KERNEL_BUNDLE);
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->version, 1);
  EXPECT_EQ(m->chip, "sm_90");
  EXPECT_EQ(m->format, "ptx");
  // One kernel per op (4 streams x conv, insert), in program order.
  ASSERT_EQ(m->kernels.size(), 8u);
  const char *streams[] = {"k", "v", "attn", "mlp"};
  for (size_t i = 0; i < 8; ++i) {
    const KernelSpec &k = m->kernels[i];
    bool conv = i % 2 == 0;
    SCOPED_TRACE(k.name);
    EXPECT_EQ(k.name, "decoder_layer_k" + std::to_string(i) +
                          (conv ? "_conv_" : "_insert_") + streams[i / 2]);
    EXPECT_EQ(k.op, conv ? "sconv.conv" : "sconv.insert");
    EXPECT_EQ(k.file, k.name + ".ptx");
    // A conv also reads token_seq; an insert, query_start_loc (for qsl[B]:
    // padding tokens store nothing).
    ASSERT_EQ(k.args.size(), conv ? 8u : 4u);
    // The cache bytes (rows read and written 16 bytes at a time through
    // its views), then (insert) the slot mapping, query_start_loc and x.
    EXPECT_EQ(k.args[0].type, "memref<?xi8>");
    EXPECT_EQ(k.args[0].align, 16);
    if (!conv) {
      EXPECT_EQ(k.args[1].type, "memref<?xi64>");
      EXPECT_EQ(k.args[1].align, 8);
      EXPECT_EQ(k.args[2].type, "memref<?xi32>");
    }
    int64_t params = 0;
    for (const KernelArgSpec &a : k.args)
      params += a.params;
    EXPECT_EQ(params, static_cast<int64_t>(k.params.size()));
    // The grid is (T, heads, 1) with T from the stream input.
    ASSERT_GE(k.tokensArg, 0);
    const KernelArgSpec &x = k.args[k.tokensArg];
    EXPECT_EQ(x.element, "bf16");
    EXPECT_EQ(x.shape[0], -1);
    EXPECT_EQ(k.gridFor(5), (std::array<int64_t, 3>{5, 8, 1}));
    // Rows of x are read with 16-byte vector loads: the kernel assumes a
    // 16-byte aligned base, and the manifest says so.
    EXPECT_EQ(x.align, 16);
  }
  const HostSpec *host = m->findHost("decoder_layer");
  ASSERT_TRUE(host);
  ASSERT_EQ(host->launches.size(), 8u);
  EXPECT_EQ(host->launches[1].kernel, "decoder_layer_k1_insert_k");
#endif
}

TEST(KernelManifest, ParsesTheFixture) {
  auto m = KernelManifest::parse(manifest());
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->version, 1);
  EXPECT_EQ(m->chip, "sm_90");
  EXPECT_EQ(m->format, "ptx");
  ASSERT_EQ(m->kernels.size(), 1u);
  const KernelSpec &k = m->kernels[0];
  EXPECT_EQ(k.name, "layer_k1_insert_k");
  EXPECT_EQ(k.op, "sconv.insert");
  ASSERT_EQ(k.streams.size(), 1u);
  EXPECT_EQ(k.streams[0], "k");
  EXPECT_EQ(k.args.size(), 3u);
  EXPECT_EQ(k.args[2].shape, (std::vector<int64_t>{-1, 8, 128}));
  EXPECT_EQ(k.tokensArg, 2);
  EXPECT_EQ(k.gridFor(5), (std::array<int64_t, 3>{5, 8, 1}));
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{16, 1, 1}));
  const HostSpec *host = m->findHost("layer");
  ASSERT_TRUE(host);
  ASSERT_EQ(host->launches.size(), 1u);
  EXPECT_EQ(host->launches[0].hostArgs, (std::vector<int64_t>{0, 4, 5}));
  EXPECT_EQ(m->findKernel("nope"), nullptr);
}

void expectRejected(const std::string &text, const std::string &needle) {
  auto m = KernelManifest::parse(text);
  ASSERT_FALSE(m) << "accepted a manifest that should mention " << needle;
  EXPECT_EQ(m.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(m.status().message().find(needle), std::string::npos)
      << m.status().message();
}

TEST(KernelManifest, RejectsMalformedManifests) {
  expectRejected("{", "JSON");
  expectRejected("[]", "is not an object");
  expectRejected(R"({"version": 2})", "version 2 is not supported");
  expectRejected(manifest("", R"(["T", 0, 1])"), "grid entries");
  expectRejected(manifest("", R"(["N", 8, 1])"), "grid entries");
  expectRejected(manifest("", R"([1, 8])"), "grid must have 3");
  expectRejected(manifest("", R"(["T", 8, 1])", "[0, 4]"), "host arguments");
  expectRejected(manifest("", R"(["T", 8, 1])", "[0, 4, -1]"),
                 "host argument -1 names scratch buffer 0, and the host has 0");
  expectRejected(manifest("", R"(["T", 8, 1])", "[0, 4, 5]", "../x.ptx"),
                 "plain file name");
  expectRejected(manifest(R"(, "extra": 1, "tokens_arg": 1)"), "duplicate");
  // A descriptor that does not expand to its params.
  expectRejected(edited("\"params\": 9", "\"params\": 8"),
                 "expands to 9 parameters");
  // Parameter types that do not follow the descriptor layout.
  expectRejected(edited(R"(["ptr", "ptr", "i64")", R"(["ptr", "i64", "i64")"),
                 "the descriptor needs \"ptr\"");
  // An alignment that is not a power of two at least the element size.
  expectRejected(edited("\"align\": 16", "\"align\": 24"),
                 "align 24 must be a power of two");
  expectRejected(edited("\"align\": 16", "\"align\": 1"),
                 "at least element_bytes (2)");
  // Missing fields name their path.
  expectRejected(edited("\"entry\"", "\"entri\""),
                 "kernels[0]: missing \"entry\"");
  // A launch of a kernel that is not in the bundle.
  expectRejected(
      edited(R"("kernel": "layer_k1_insert_k")", R"("kernel": "other")"),
      "names no kernel");
}

TEST(KernelManifest, ParsesScratchBuffers) {
  auto m = KernelManifest::parse(manifestWithScratch());
  ASSERT_TRUE(m) << m.status().toString();
  const HostSpec *host = m->findHost("layer");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->launches[0].hostArgs, (std::vector<int64_t>{0, 4, -1}));
  ASSERT_EQ(host->scratch.size(), 1u);
  const ScratchSpec &buffer = host->scratch[0];
  EXPECT_EQ(buffer.type, "memref<?x8x128xbf16>");
  EXPECT_EQ(buffer.elementBytes, 2);
  EXPECT_EQ(buffer.shape, (std::vector<int64_t>{-1, 8, 128}));
  EXPECT_EQ(buffer.sizeHostArg, 5);
  EXPECT_EQ(buffer.sizeDim, 0);

  // Its sizes for a call: dim 0 from host argument 5.
  std::vector<MemRefArg> args(6);
  args[5].sizes = {7};
  auto sizes = scratchSizes(buffer, args);
  ASSERT_TRUE(sizes) << sizes.status().toString();
  EXPECT_EQ(*sizes, (std::vector<int64_t>{7, 8, 128}));
  args.resize(5);
  auto missing = scratchSizes(buffer, args);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find(
                "dim 0 of host argument 5, which the call lacks"),
            std::string::npos)
      << missing.status().toString();
  args.resize(6);
  args[5].sizes = {int64_t(1) << 62};
  auto huge = scratchSizes(buffer, args);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.status().message().find("overflow"), std::string::npos)
      << huge.status().toString();
}

TEST(KernelManifest, RejectsMalformedScratchBuffers) {
  // A launch naming a buffer the host lacks, or binding one of another
  // type.
  expectRejected(
      manifest("", R"(["T", 8, 1])", "[0, 4, -2]", "layer_k1_insert_k.ptx",
               R"(, "scratch": [{"element": "bf16", "element_bytes": 2,
                   "shape": [-1, 8, 128], "size_dim": 0, "size_host_arg": 5,
                   "type": "memref<?x8x128xbf16>"}])"),
      "host argument -2 names scratch buffer 1, and the host has 1");
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 2, "shape": [-1, 8, 64], "size_dim": 0,
                     "size_host_arg": 5, "type": "memref<?x8x64xbf16>"})"),
                 "binds scratch buffer 0 (memref<?x8x64xbf16>) to kernel "
                 "argument 2 (memref<?x8x128xbf16>)");
  // The same type with another element size: the allocation would be
  // smaller than what the kernel reads.
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 1, "shape": [-1, 8, 128], "size_dim": 0,
                     "size_host_arg": 5, "type": "memref<?x8x128xbf16>"})"),
                 "the element size, shape or row-major layout differ");
  // Dim 0 dynamic needs its host argument; a static one must not name one;
  // only dim 0 may be dynamic.
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 2, "shape": [-1, 8, 128],
                     "type": "memref<?x8x128xbf16>"})"),
                 "a dynamic dim 0 needs size_host_arg and size_dim");
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 2, "shape": [4, 8, 128], "size_dim": 0,
                     "size_host_arg": 5, "type": "memref<?x8x128xbf16>"})"),
                 "a static one neither");
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 2, "shape": [4, -1, 128],
                     "type": "memref<?x8x128xbf16>"})"),
                 "-1 (dynamic) for dim 0");
  expectRejected(manifestWithScratch(-3), "name a host argument's dim");
  expectRejected(manifestWithScratch(5, R"({"element": "bf16",
                     "element_bytes": 0, "shape": [-1, 8, 128], "size_dim": 0,
                     "size_host_arg": 5, "type": "memref<?x8x128xbf16>"})"),
                 "hosts[0].scratch[0]: element_bytes must be positive");
}

TEST(KernelManifest, LoadReportsAMissingFile) {
  auto m = KernelManifest::load("/nonexistent/inkling/bundle");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.status().code(), StatusCode::NotFound);
}

//===----------------------------------------------------------------------===//
// ABI packing
//===----------------------------------------------------------------------===//

TEST(KernelAbi, PacksDescriptorsInManifestOrder) {
  auto m = KernelManifest::parse(manifest());
  ASSERT_TRUE(m);
  const KernelSpec &k = m->kernels[0];
  std::vector<MemRefArg> args = {
      {0x1000, {262144}, {}}, // cache bytes
      {0x2000, {6}, {}},      // slots
      {0x3000, {6, 8, 128}, {}},
  };
  auto params = packKernelParams(k, args);
  ASSERT_TRUE(params) << params.status().toString();
  std::vector<uint64_t> expected = {
      0x1000, 0x1000, 0, 262144, 1, 0x2000, 0x2000, 0,   6, 1,
      0x3000, 0x3000, 0, 6,      8, 128,    1024,   128, 1};
  EXPECT_EQ(*params, expected);
  auto tokens = tokenCount(k, args);
  ASSERT_TRUE(tokens);
  EXPECT_EQ(*tokens, 6);
}

TEST(KernelAbi, RejectsArgumentsThatDoNotMatchTheTypes) {
  auto m = KernelManifest::parse(manifest());
  ASSERT_TRUE(m);
  const KernelSpec &k = m->kernels[0];
  auto bad = [&](std::vector<MemRefArg> args, const std::string &needle) {
    auto params = packKernelParams(k, args);
    ASSERT_FALSE(params);
    EXPECT_NE(params.status().message().find(needle), std::string::npos)
        << params.status().message();
  };
  bad({{0x1000, {16}, {}}}, "takes 3 arguments");
  bad({{0x1000, {16}, {}}, {0x2000, {6}, {}}, {0x3000, {6, 4, 128}, {}}},
      "size 1 is 4, the type says 8");
  bad({{0x1000, {16}, {}}, {0x2000, {6}, {}}, {0x3000, {6, 8}, {}}},
      "expected 3 sizes");
  bad({{0x1000, {16}, {}}, {0x2001, {6}, {}}, {0x3000, {6, 8, 128}, {}}},
      "is not 8-byte aligned");
  // x: "align": 16 (the kernel loads its rows 16 bytes at a time), so
  // 2-byte alignment (the element's) is not enough.
  bad({{0x1000, {16}, {}}, {0x2000, {6}, {}}, {0x3008, {6, 8, 128}, {}}},
      "argument 2 (memref<?x8x128xbf16>): the address 0x3008 is not 16-byte "
      "aligned");
  bad({{0x1000, {16}, {}},
       {0x2000, {6}, {}},
       {0x3000, {6, 8, 128}, {2048, 128, 1}}},
      "stride 0 is 2048, the type says 1024");
  bad({{0x1000, {-1}, {}}, {0x2000, {6}, {}}, {0x3000, {6, 8, 128}, {}}},
      "negative");
}

} // namespace
