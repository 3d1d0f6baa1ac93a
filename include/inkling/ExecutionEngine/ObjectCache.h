//===- ObjectCache.h - The JIT's objects kept on disk -----------*- C++ -*-===//
//
// The JIT's on-disk object cache: the machine code of a lowered module, kept
// under a directory by the hash of everything that decides it (the LLVM IR
// before optimization, the optimization level, the target triple, CPU and
// features, and LLVM's version). A later process that lowers the same module
// for the same CPU loads the object instead of running LLVM's optimizer and
// code generator, the two thirds of a layer's compile time.
//
// Entries are written to a temporary file and renamed into place, so that
// processes sharing the directory (ctest -j, several servers) never read a
// partial one. Each entry carries a checksum of its object: a truncated or
// damaged entry is a miss, compiled again and rewritten, never loaded.
// The directory is kept in bounds by LLVM's cache pruning (the one ThinLTO's
// caches use, llvm/Support/CachePruning.h) after each store: by default
// entries unused for a week go, and the least recently used ones past
// 1 GiB; $INKLING_CACHE_PRUNING takes LLVM's policy syntax
// ("prune_after=24h:cache_size_bytes=256m"). A hit counts as a use.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_EXECUTIONENGINE_OBJECTCACHE_H
#define INKLING_EXECUTIONENGINE_OBJECTCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ExecutionEngine/ObjectCache.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>

namespace inkling::exec {

/// The environment variable that names the cache directory when a caller
/// gives none (an empty value: no cache).
inline constexpr const char *kCacheDirEnv = "INKLING_CACHE_DIR";
/// The environment variable of the pruning policy (LLVM's syntax), and the
/// policy without it.
inline constexpr const char *kCachePruningEnv = "INKLING_CACHE_PRUNING";
inline constexpr const char *kDefaultCachePruning =
    "prune_interval=20m:prune_after=168h:cache_size_bytes=1g";

/// The cache directory of a caller's choice: `dir` when set (empty: no
/// cache), else $INKLING_CACHE_DIR, else "" (no cache).
std::string resolveCacheDir(const std::optional<std::string> &dir);
/// The pruning policy of a caller's choice: `policy` when set, else
/// $INKLING_CACHE_PRUNING, else kDefaultCachePruning.
std::string resolveCachePruning(const std::optional<std::string> &policy);

/// What a compile got from the cache.
enum class CacheOutcome {
  Off,  ///< No cache directory.
  Hit,  ///< The object came from the cache; LLVM did not optimize or
        ///< generate code.
  Miss, ///< Compiled; the object is stored unless `problem` says why not.
};
llvm::StringRef cacheOutcomeName(CacheOutcome outcome);

/// One module's entry in the on-disk cache (an llvm::ObjectCache for the
/// JIT's compiler): `lookup` reads and checks it, the compiler's
/// `notifyObjectCompiled` stores it.
class DiskObjectCache : public llvm::ObjectCache {
public:
  /// `key`: the 32 hex digits of `hashKey`; `pruning`: LLVM's policy
  /// syntax (a policy it rejects is reported in `problem`, and nothing is
  /// pruned).
  DiskObjectCache(std::string dir, std::string key, std::string pruning);

  /// The hex key of a module: `irText` is the module printed before
  /// optimization; `target` names the triple, CPU, features and levels.
  static std::string hashKey(llvm::StringRef irText, llvm::StringRef target);

  /// Reads and checks the entry; true when it holds an object (then
  /// `getObject` returns it).
  bool lookup();

  /// The entry's file: DIR/llvmcache-inkling-KEY.o (LLVM's pruning only
  /// considers files named llvmcache-*).
  std::string path() const;
  static std::string fileName(llvm::StringRef key);
  const std::string &key() const { return key_; }
  /// Why the entry could not be read or written ("" when nothing failed);
  /// a damaged entry says so here and reads as a miss.
  const std::string &problem() const { return problem_; }

  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module *) override;
  void notifyObjectCompiled(const llvm::Module *,
                            llvm::MemoryBufferRef object) override;

  /// The stored form of `object` (header, checksum, object): exposed for
  /// the tests that damage entries.
  static std::string encode(llvm::StringRef object);
  /// The object of a stored entry, or "" with `error` set.
  static llvm::StringRef decode(llvm::StringRef entry, std::string &error);

private:
  /// Applies the pruning policy after a store.
  void prune();

  std::string dir_, key_, pruning_, problem_;
  std::unique_ptr<llvm::MemoryBuffer> entry_;
};

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_OBJECTCACHE_H
