//===- CompileCacheTest.cpp - The JIT harness compiles a variant once -----===//
//
// harness::compileCached: equal (IR, options) give the same engine, whatever
// the IR's spelling; other options or other IR compile anew; a module that
// does not lower is an error and is not cached.
//
//===----------------------------------------------------------------------===//

#include "Harness/JitHarness.h"

#include "inkling/ExecutionEngine/JitEngine.h"

#include "gtest/gtest.h"

#include <string>

using namespace inkling;
using namespace inkling::harness;

namespace {

/// `@insert_k` of a tiny layout (kv_heads 1, head_dim 8, hidden 8, W 2).
std::string insertModule(int64_t kernel, const std::string &spacing) {
  LayoutConfig config{1, 8, 8, kernel, 1, "bf16"};
  auto layout = Layout::derive(config);
  EXPECT_TRUE(layout.isOk());
  LayerText text(config, *layout, layout->pageBytes());
  std::string x = typeOfStream(*layout, Stream::K, false, false);
  return "module {" + spacing + "func.func @insert_k(" +
         LayerText::metadataParams(false) + ", %x: " + x + ") {\n" +
         text.bindAndStep() + text.insert("x", Stream::K, x) +
         "  return\n}\n}\n";
}

TEST(CompileCache, CompilesEachVariantOnce) {
  std::string error;
  CompileOptions options;
  CompileCacheStats before = compileCacheStats();
  exec::JitEngine *first = compileCached(insertModule(2, "\n"), options, error);
  ASSERT_TRUE(first) << error;
  EXPECT_TRUE(lookupFunction(*first, "insert_k"));
  // The same IR spelled otherwise (a comment, other white space).
  exec::JitEngine *again =
      compileCached(insertModule(2, "  // the same layer\n\n"), options, error);
  EXPECT_EQ(again, first);
  CompileCacheStats after = compileCacheStats();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.hits - before.hits, 1);

  // Other options, other IR: new engines.
  CompileOptions checked;
  checked.checked = true;
  exec::JitEngine *other = compileCached(insertModule(2, "\n"), checked, error);
  ASSERT_TRUE(other) << error;
  EXPECT_NE(other, first);
  exec::JitEngine *otherKernel =
      compileCached(insertModule(3, "\n"), options, error);
  ASSERT_TRUE(otherKernel) << error;
  EXPECT_NE(otherKernel, first);
  EXPECT_EQ(compileCacheStats().misses - before.misses, 3);
}

TEST(CompileCache, DoesNotCacheAFailure) {
  std::string error;
  CompileCacheStats before = compileCacheStats();
  EXPECT_FALSE(compileCached("module { func.func @f(", {}, error));
  EXPECT_NE(error.find("cannot parse"), std::string::npos) << error;
  // Valid IR that the CPU pipeline cannot take to LLVM IR (a GPU op): an
  // error each time, never an engine.
  const char *gpuOnly = "func.func @f() {\n  gpu.barrier\n  return\n}\n";
  for (int i = 0; i < 2; ++i) {
    error.clear();
    EXPECT_FALSE(compileCached(gpuOnly, {}, error));
    EXPECT_FALSE(error.empty());
  }
  EXPECT_EQ(compileCacheStats().misses - before.misses, 2);
  EXPECT_EQ(compileCacheStats().hits, before.hits);
}

} // namespace
