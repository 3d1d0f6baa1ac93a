//===- ObjectCacheTest.cpp - The JIT's on-disk object cache ---------------===//
//
// JitEngine with a cache directory: the first compile stores the object, the
// next one loads it and its functions and globals still work (a packed call
// with a result, a global the call updates); a damaged entry is a miss that
// says why and is rewritten; a directory that cannot be written costs only
// the store. The entry format rejects every damage its checksum can see.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/ExecutionEngine/ObjectCache.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace inkling::exec;

namespace {

/// A loop the optimizer rewrites, and a global it counts calls in.
constexpr const char *kModule = R"mlir(
module {
  llvm.mlir.global external @calls(0 : i64) : i64
  llvm.func @sum_squares(%p: !llvm.ptr, %n: i64) -> i64 {
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %g = llvm.mlir.addressof @calls : !llvm.ptr
    %c = llvm.load %g : !llvm.ptr -> i64
    %c1 = llvm.add %c, %one : i64
    llvm.store %c1, %g : i64, !llvm.ptr
    llvm.br ^loop(%zero, %zero : i64, i64)
  ^loop(%i: i64, %acc: i64):
    %done = llvm.icmp "sge" %i, %n : i64
    llvm.cond_br %done, ^exit, ^body
  ^body:
    %addr = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %x = llvm.load %addr : !llvm.ptr -> i64
    %sq = llvm.mul %x, %x : i64
    %acc1 = llvm.add %acc, %sq : i64
    %i1 = llvm.add %i, %one : i64
    llvm.br ^loop(%i1, %acc1 : i64, i64)
  ^exit:
    llvm.return %acc : i64
  }
}
)mlir";

class ObjectCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    mlir::DialectRegistry registry;
    registry.insert<mlir::LLVM::LLVMDialect>();
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    module = mlir::parseSourceString<mlir::ModuleOp>(kModule, context.get());
    ASSERT_TRUE(module);
    llvm::SmallString<128> path;
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("inkling-object-cache", path));
    dir = std::string(path);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::unique_ptr<JitEngine> create(std::optional<std::string> cacheDir) {
    JitOptions options;
    options.cacheDir = std::move(cacheDir);
    auto engine = JitEngine::create(*module, options);
    if (!engine) {
      ADD_FAILURE() << llvm::toString(engine.takeError());
      return nullptr;
    }
    return std::move(*engine);
  }

  /// The entries in the cache directory.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      names.push_back(it->path());
    return names;
  }

  /// Calls @sum_squares through its packed form and checks the result and
  /// the call count against plain C++ (`power` 3: the sum of cubes).
  void expectWorks(JitEngine &engine, int power = 2) {
    auto packed = engine.lookupPacked("sum_squares");
    ASSERT_TRUE(bool(packed)) << llvm::toString(packed.takeError());
    auto calls = engine.lookup("calls");
    ASSERT_TRUE(bool(calls)) << llvm::toString(calls.takeError());
    std::vector<int64_t> values = {3, -4, 5, 12, 0, 7, -9, 100, 1};
    for (int64_t n = 0; n <= int64_t(values.size()); ++n) {
      int64_t *data = values.data();
      int64_t count = n, result = -1, expected = 0;
      for (int64_t i = 0; i < n; ++i)
        expected += values[i] * values[i] * (power == 3 ? values[i] : 1);
      void *args[] = {&data, &count, &result};
      (*packed)(args);
      EXPECT_EQ(result, expected) << "n = " << n;
      EXPECT_EQ(*static_cast<int64_t *>(*calls), n + 1);
    }
  }

  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string dir;
};

TEST_F(ObjectCacheTest, SecondCompileLoadsTheStoredObject) {
  std::unique_ptr<JitEngine> uncached = create(std::string());
  ASSERT_TRUE(uncached);
  EXPECT_EQ(uncached->cacheOutcome(), CacheOutcome::Off);
  expectWorks(*uncached);
  EXPECT_TRUE(entries().empty());

  std::unique_ptr<JitEngine> first = create(dir);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->cacheOutcome(), CacheOutcome::Miss);
  expectWorks(*first); // The object is stored when it is compiled.
  EXPECT_EQ(first->cacheProblem(), "");
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_NE(entries()[0].find(first->cacheKey() + ".o"), std::string::npos);

  std::unique_ptr<JitEngine> second = create(dir);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->cacheOutcome(), CacheOutcome::Hit);
  EXPECT_EQ(second->cacheKey(), first->cacheKey());
  expectWorks(*second);
  EXPECT_EQ(second->cacheProblem(), "");
}

// The code that runs on a hit is the stored object, not a compile of the
// module: an entry holding another module's object (cubes, under the same
// symbols) is what the hit runs.
TEST_F(ObjectCacheTest, HitRunsTheStoredObject) {
  std::string cubes = kModule;
  std::string square = "%sq = llvm.mul %x, %x : i64";
  cubes.replace(
      cubes.find(square), square.size(),
      "%x2 = llvm.mul %x, %x : i64\n    %sq = llvm.mul %x2, %x : i64");
  mlir::OwningOpRef<mlir::ModuleOp> other =
      mlir::parseSourceString<mlir::ModuleOp>(cubes, context.get());
  ASSERT_TRUE(other);
  std::string otherDir = dir + "/other";
  JitOptions options;
  options.cacheDir = otherDir;
  auto compiled = JitEngine::create(*other, options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  expectWorks(**compiled, /*power=*/3);
  auto object = llvm::MemoryBuffer::getFile(otherDir + "/" +
                                            (*compiled)->cacheKey() + ".o");
  ASSERT_TRUE(bool(object));

  std::unique_ptr<JitEngine> squares = create(dir);
  ASSERT_TRUE(squares);
  std::string key = squares->cacheKey();
  ASSERT_NE(key, (*compiled)->cacheKey());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir + "/" + key + ".o", ec);
    ASSERT_FALSE(ec);
    os << (*object)->getBuffer();
  }
  std::unique_ptr<JitEngine> swapped = create(dir);
  ASSERT_TRUE(swapped);
  EXPECT_EQ(swapped->cacheOutcome(), CacheOutcome::Hit);
  expectWorks(*swapped, /*power=*/3);
}

TEST_F(ObjectCacheTest, TheEnvironmentNamesTheDirectoryUnlessTheCallerDoes) {
  // The test command sets one for every test: put it back afterwards.
  const char *outer = std::getenv(kCacheDirEnv);
  std::optional<std::string> saved =
      outer ? std::optional<std::string>(outer) : std::nullopt;
  ASSERT_EQ(setenv(kCacheDirEnv, dir.c_str(), 1), 0);
  EXPECT_EQ(resolveCacheDir(std::nullopt), dir);
  EXPECT_EQ(resolveCacheDir(std::string()), "");
  EXPECT_EQ(resolveCacheDir(std::string("/elsewhere")), "/elsewhere");
  std::unique_ptr<JitEngine> fromEnvironment = create(std::nullopt);
  ASSERT_TRUE(fromEnvironment);
  EXPECT_EQ(fromEnvironment->cacheOutcome(), CacheOutcome::Miss);
  expectWorks(*fromEnvironment);
  EXPECT_EQ(entries().size(), 1u);
  ASSERT_EQ(unsetenv(kCacheDirEnv), 0);
  EXPECT_EQ(resolveCacheDir(std::nullopt), "");
  if (saved)
    setenv(kCacheDirEnv, saved->c_str(), 1);
}

TEST_F(ObjectCacheTest, DamagedEntryIsCompiledAgainAndRewritten) {
  {
    std::unique_ptr<JitEngine> first = create(dir);
    ASSERT_TRUE(first);
    expectWorks(*first);
  }
  ASSERT_EQ(entries().size(), 1u);
  std::string path = entries()[0];
  // One flipped bit in the middle of the object.
  auto stored = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(stored));
  std::string bytes = (*stored)->getBuffer().str();
  bytes[bytes.size() / 2] ^= 0x10;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << bytes;
  }
  std::unique_ptr<JitEngine> damaged = create(dir);
  ASSERT_TRUE(damaged);
  EXPECT_EQ(damaged->cacheOutcome(), CacheOutcome::Miss);
  EXPECT_NE(damaged->cacheProblem().find("checksum mismatch"),
            std::string::npos)
      << damaged->cacheProblem();
  expectWorks(*damaged);

  std::unique_ptr<JitEngine> rewritten = create(dir);
  ASSERT_TRUE(rewritten);
  EXPECT_EQ(rewritten->cacheOutcome(), CacheOutcome::Hit);
  expectWorks(*rewritten);
}

TEST_F(ObjectCacheTest, UnwritableDirectoryCostsOnlyTheStore) {
  std::string file = dir + "/file";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec);
  }
  std::unique_ptr<JitEngine> engine = create(file + "/cache");
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->cacheOutcome(), CacheOutcome::Miss);
  expectWorks(*engine);
  EXPECT_NE(engine->cacheProblem().find("not stored"), std::string::npos)
      << engine->cacheProblem();
}

TEST(ObjectCacheEntry, DecodesOnlyWhatItEncoded) {
  std::string object = "\x7f"
                       "ELF and some code bytes";
  std::string entry = DiskObjectCache::encode(object);
  std::string error;
  EXPECT_EQ(DiskObjectCache::decode(entry, error), object);
  EXPECT_EQ(error, "");

  for (size_t i = 0; i < entry.size(); ++i) {
    std::string damaged = entry;
    damaged[i] ^= 0x01;
    error.clear();
    EXPECT_EQ(DiskObjectCache::decode(damaged, error), "") << "byte " << i;
    EXPECT_NE(error, "") << "byte " << i;
  }
  for (size_t size = 0; size < entry.size(); ++size) {
    error.clear();
    EXPECT_EQ(DiskObjectCache::decode(entry.substr(0, size), error), "")
        << "size " << size;
    EXPECT_NE(error, "") << "size " << size;
  }
  error.clear();
  EXPECT_EQ(DiskObjectCache::decode(entry + "x", error), "");
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
}

TEST(ObjectCacheEntry, KeyCoversTheIrAndTheTarget) {
  std::string key = DiskObjectCache::hashKey("define void @f()", "x86_64");
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, DiskObjectCache::hashKey("define void @f()", "x86_64"));
  EXPECT_NE(key, DiskObjectCache::hashKey("define void @g()", "x86_64"));
  EXPECT_NE(key, DiskObjectCache::hashKey("define void @f()", "aarch64"));
}

} // namespace
