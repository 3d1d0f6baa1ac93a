//===- ObjectCache.h - Compiled objects kept on disk across runs -*- C++
//-*-===//
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
// Nothing is evicted; deleting the directory empties the cache.
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

/// The cache directory of a caller's choice: `dir` when set (empty: no
/// cache), else $INKLING_CACHE_DIR, else "" (no cache).
std::string resolveCacheDir(const std::optional<std::string> &dir);

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
  /// `key`: the 32 hex digits of `hashKey`.
  DiskObjectCache(std::string dir, std::string key);

  /// The hex key of a module: `irText` is the module printed before
  /// optimization; `target` names the triple, CPU, features and levels.
  static std::string hashKey(llvm::StringRef irText, llvm::StringRef target);

  /// Reads and checks the entry; true when it holds an object (then
  /// `getObject` returns it).
  bool lookup();

  std::string path() const;
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
  std::string dir_, key_, problem_;
  std::unique_ptr<llvm::MemoryBuffer> entry_;
};

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_OBJECTCACHE_H
