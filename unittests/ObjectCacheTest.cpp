//===- ObjectCacheTest.cpp - The JIT's on-disk object cache ---------------===//
//
// JitEngine with a cache directory: the first compile stores the object, the
// next one loads it and its functions and globals still work (a packed call
// with a result, a global the call updates); a damaged entry is a miss that
// says why and is rewritten; a directory that cannot be written costs only
// the store. The entry format rejects every damage its checksum can see.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/ObjectCache.h"
#include "inkling/ExecutionEngine/JitEngine.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

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
    // The sum of cubes, under the same symbols.
    std::string cubes = kModule;
    std::string square = "%sq = llvm.mul %x, %x : i64";
    cubes.replace(
        cubes.find(square), square.size(),
        "%x2 = llvm.mul %x, %x : i64\n    %sq = llvm.mul %x2, %x : i64");
    cubesModule = mlir::parseSourceString<mlir::ModuleOp>(cubes, context.get());
    ASSERT_TRUE(cubesModule);
    llvm::SmallString<128> path;
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("inkling-object-cache", path));
    dir = std::string(path);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::unique_ptr<JitEngine>
  create(std::optional<std::string> cacheDir,
         std::optional<std::string> pruning = std::nullopt,
         bool cubes = false) {
    JitOptions options;
    options.cacheDir = std::move(cacheDir);
    options.cachePruning = std::move(pruning);
    auto engine = JitEngine::create(cubes ? *cubesModule : *module, options);
    if (!engine) {
      ADD_FAILURE() << llvm::toString(engine.takeError());
      return nullptr;
    }
    return std::move(*engine);
  }

  /// The entries in the cache directory (not the pruning's timestamp).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".o"))
        names.push_back(it->path());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string entryOf(const JitEngine &engine) const {
    return dir + "/" + DiskObjectCache::fileName(engine.cacheKey());
  }
  /// Dates the entry's last use (its access and modification times) `age`
  /// back, for the pruning's least-recently-used order.
  static void age(const std::string &path, std::chrono::seconds age) {
    int fd;
    ASSERT_FALSE(llvm::sys::fs::openFileForWrite(
        path, fd, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_Append));
    auto then = std::chrono::system_clock::now() - age;
    EXPECT_FALSE(
        llvm::sys::fs::setLastAccessAndModificationTime(fd, then, then));
    ::close(fd);
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
  mlir::OwningOpRef<mlir::ModuleOp> module, cubesModule;
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
  EXPECT_EQ(llvm::sys::path::filename(entries()[0]),
            DiskObjectCache::fileName(first->cacheKey()));

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
  std::string otherDir = dir + "/other";
  std::unique_ptr<JitEngine> compiled =
      create(otherDir, std::nullopt, /*cubes=*/true);
  ASSERT_TRUE(compiled);
  expectWorks(*compiled, /*power=*/3);
  auto object = llvm::MemoryBuffer::getFile(
      otherDir + "/" + DiskObjectCache::fileName(compiled->cacheKey()));
  ASSERT_TRUE(bool(object));

  std::unique_ptr<JitEngine> squares = create(dir);
  ASSERT_TRUE(squares);
  std::string key = squares->cacheKey();
  ASSERT_NE(key, compiled->cacheKey());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir + "/" + DiskObjectCache::fileName(key), ec);
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

// LLVM's pruning after each store: the least recently used entries go past
// the policy's bound, and a hit counts as a use.
TEST_F(ObjectCacheTest, PruningEvictsTheLeastRecentlyUsed) {
  const std::string keepTwo = "prune_interval=0s:cache_size_files=2";
  std::unique_ptr<JitEngine> squares = create(dir, keepTwo);
  ASSERT_TRUE(squares);
  expectWorks(*squares);
  std::unique_ptr<JitEngine> cubes = create(dir, keepTwo, /*cubes=*/true);
  ASSERT_TRUE(cubes);
  expectWorks(*cubes, 3);
  ASSERT_EQ(entries().size(), 2u);
  age(entryOf(*squares), std::chrono::hours(2));
  age(entryOf(*cubes), std::chrono::hours(1));
  // A hit on the older one makes the cubes the least recently used. The
  // cache dates the use itself (a read need not: a noatime mount), and
  // both times, so the modification time shows it.
  std::unique_ptr<JitEngine> hit = create(dir, keepTwo);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->cacheOutcome(), CacheOutcome::Hit);
  expectWorks(*hit);
  llvm::sys::fs::file_status status;
  ASSERT_FALSE(llvm::sys::fs::status(entryOf(*squares), status));
  EXPECT_GT(status.getLastModificationTime(),
            std::chrono::system_clock::now() - std::chrono::minutes(10));

  // A third entry (squares at -O1) and a bound of two: the cubes go.
  JitOptions options;
  options.cacheDir = dir;
  options.cachePruning = keepTwo;
  options.optLevel = 1;
  auto third = JitEngine::create(*module, options);
  ASSERT_TRUE(bool(third)) << llvm::toString(third.takeError());
  expectWorks(**third);
  EXPECT_EQ((*third)->cacheProblem(), "");
  std::vector<std::string> expected = {entryOf(*squares), entryOf(**third)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(), expected);
  std::unique_ptr<JitEngine> again = create(dir, keepTwo, /*cubes=*/true);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cacheOutcome(), CacheOutcome::Miss);
  expectWorks(*again, 3);
}

TEST_F(ObjectCacheTest, BadPruningPolicyIsReportedAndTheEntryKept) {
  std::unique_ptr<JitEngine> engine = create(dir, "prune_after=banana");
  ASSERT_TRUE(engine);
  expectWorks(*engine);
  EXPECT_NE(
      engine->cacheProblem().find("cache pruning policy 'prune_after=banana'"),
      std::string::npos)
      << engine->cacheProblem();
  EXPECT_EQ(entries().size(), 1u);
  std::unique_ptr<JitEngine> hit = create(dir, "prune_after=banana");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->cacheOutcome(), CacheOutcome::Hit);
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
