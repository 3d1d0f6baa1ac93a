//===- JitEngine.h - The CPU JIT, with an on-disk object cache --*- C++ -*-===//
//
// Compiles a module already lowered to the LLVM dialect for the host CPU and
// resolves its symbols: what MLIR's ExecutionEngine does (translation to
// LLVM IR, the optimizing transformer at -O<n>, ORC's LLJIT with the
// process's symbols, the `_mlir_<name>(void **)` wrappers of every external
// function), plus one thing it cannot: the compiled object can come from,
// and goes to, an on-disk cache (ObjectCache.h), so that a process that
// lowers the same module for the same CPU skips LLVM's optimizer and code
// generator. The lowering still runs: the key is the LLVM IR it produces.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_EXECUTIONENGINE_JITENGINE_H
#define INKLING_EXECUTIONENGINE_JITENGINE_H

#include "inkling/ExecutionEngine/ObjectCache.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace inkling::exec {

struct JitOptions {
  /// LLVM's optimization level of the module (0-3).
  unsigned optLevel = 3;
  /// The object cache's directory (empty: no cache); unset:
  /// $INKLING_CACHE_DIR, and no cache when that is unset or empty.
  std::optional<std::string> cacheDir;
  /// The cache's pruning policy (LLVM's syntax, ObjectCache.h); unset:
  /// $INKLING_CACHE_PRUNING, else kDefaultCachePruning.
  std::optional<std::string> cachePruning;
};

class JitEngine {
public:
  ~JitEngine();

  /// Translates `module` (LLVM dialect; its context must have the LLVM IR
  /// translations registered) and prepares its compile for the host CPU.
  /// The code is generated, or loaded from the cache, at the first lookup.
  static llvm::Expected<std::unique_ptr<JitEngine>>
  create(mlir::ModuleOp module, const JitOptions &options = {});

  /// The address of symbol `name` (a function or a global).
  llvm::Expected<void *> lookup(llvm::StringRef name);
  /// The packed form of function `name`: `args[i]` points at argument i,
  /// and `args[n]` at the result when it has one.
  llvm::Expected<void (*)(void **)> lookupPacked(llvm::StringRef name);

  /// Whether the object came from the cache.
  CacheOutcome cacheOutcome() const { return outcome_; }
  /// The cache's key of this module ("" without a cache).
  std::string cacheKey() const;
  /// Why the cache could not be read or written ("" when nothing failed).
  std::string cacheProblem() const;

private:
  JitEngine() = default;
  std::unique_ptr<DiskObjectCache> cache_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  CacheOutcome outcome_ = CacheOutcome::Off;
};

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_JITENGINE_H
