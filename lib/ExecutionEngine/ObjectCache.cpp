//===- ObjectCache.cpp - Compiled objects kept on disk across runs --------===//

#include "inkling/ExecutionEngine/ObjectCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace inkling::exec;

namespace {
/// An entry: this magic (the format's version), the object's xxh3-64 in
/// little endian, then the object.
constexpr llvm::StringLiteral kMagic = "INKOBJ01";
constexpr size_t kHeaderSize = 16;
} // namespace

std::string
inkling::exec::resolveCacheDir(const std::optional<std::string> &dir) {
  if (dir)
    return *dir;
  const char *env = std::getenv(kCacheDirEnv);
  return env ? env : "";
}

std::string
inkling::exec::resolveCachePruning(const std::optional<std::string> &policy) {
  if (policy)
    return *policy;
  const char *env = std::getenv(kCachePruningEnv);
  return env && *env ? env : kDefaultCachePruning;
}

llvm::StringRef inkling::exec::cacheOutcomeName(CacheOutcome outcome) {
  switch (outcome) {
  case CacheOutcome::Off:
    return "off";
  case CacheOutcome::Hit:
    return "hit";
  case CacheOutcome::Miss:
    return "miss";
  }
  return "?";
}

DiskObjectCache::DiskObjectCache(std::string dir, std::string key,
                                 std::string pruning)
    : dir_(std::move(dir)), key_(std::move(key)), pruning_(std::move(pruning)) {
}

std::string DiskObjectCache::hashKey(llvm::StringRef irText,
                                     llvm::StringRef target) {
  // The format's magic and LLVM's version first: an entry made by another
  // code generator is never taken for this one's.
  std::string material;
  llvm::raw_string_ostream os(material);
  os << kMagic << '\n'
     << LLVM_VERSION_STRING << '\n'
     << target << '\n'
     << irText;
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(llvm::ArrayRef(
      reinterpret_cast<const uint8_t *>(material.data()), material.size()));
  return llvm::utohexstr(hash.high64, /*LowerCase=*/true, /*Width=*/16) +
         llvm::utohexstr(hash.low64, /*LowerCase=*/true, /*Width=*/16);
}

std::string DiskObjectCache::fileName(llvm::StringRef key) {
  return ("llvmcache-inkling-" + key + ".o").str();
}

std::string DiskObjectCache::path() const {
  llvm::SmallString<256> path(dir_);
  llvm::sys::path::append(path, fileName(key_));
  return std::string(path);
}

std::string DiskObjectCache::encode(llvm::StringRef object) {
  std::string entry(kMagic);
  char checksum[8];
  llvm::support::endian::write64le(checksum, llvm::xxh3_64bits(object));
  entry.append(checksum, sizeof(checksum));
  entry.append(object.begin(), object.end());
  return entry;
}

llvm::StringRef DiskObjectCache::decode(llvm::StringRef entry,
                                        std::string &error) {
  if (entry.size() < kHeaderSize || !entry.starts_with(kMagic)) {
    error = "not an inkling object cache entry (" + kMagic.str() + ")";
    return {};
  }
  llvm::StringRef object = entry.drop_front(kHeaderSize);
  uint64_t checksum = llvm::support::endian::read64le(entry.data() + 8);
  if (object.empty() || llvm::xxh3_64bits(object) != checksum) {
    error = "checksum mismatch (a truncated or damaged entry)";
    return {};
  }
  return object;
}

bool DiskObjectCache::lookup() {
  entry_.reset();
  auto file = llvm::MemoryBuffer::getFile(path(), /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file) {
    if (file.getError() != std::errc::no_such_file_or_directory)
      problem_ = path() + ": " + file.getError().message();
    return false;
  }
  std::string error;
  llvm::StringRef object = decode((*file)->getBuffer(), error);
  if (!object.empty()) {
    // The JIT's linker must be able to read it too.
    auto parsed = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(object, path()));
    if (!parsed)
      error = llvm::toString(parsed.takeError());
  }
  if (!error.empty()) {
    problem_ = path() + ": " + error + "; compiled again";
    return false;
  }
  entry_ = std::move(*file);
  // A use, for the pruning's least-recently-used order (where this process
  // may set the entry's times; a shared read-only cache is used as it is).
  int fd;
  if (!llvm::sys::fs::openFileForWrite(path(), fd,
                                       llvm::sys::fs::CD_OpenExisting,
                                       llvm::sys::fs::OF_Append)) {
    auto now = std::chrono::system_clock::now();
    (void)llvm::sys::fs::setLastAccessAndModificationTime(fd, now, now);
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  return true;
}

std::unique_ptr<llvm::MemoryBuffer>
DiskObjectCache::getObject(const llvm::Module *) {
  if (!entry_)
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(
      entry_->getBuffer().drop_front(kHeaderSize), path());
}

void DiskObjectCache::notifyObjectCompiled(const llvm::Module *,
                                           llvm::MemoryBufferRef object) {
  if (entry_)
    return; // Served from this entry: nothing new to store.
  std::error_code ec = llvm::sys::fs::create_directories(dir_);
  if (ec) {
    problem_ = dir_ + ": " + ec.message() + "; not stored";
    return;
  }
  // A unique temporary beside the entry, then one rename: readers see the
  // old state or the whole entry, and concurrent writers of the same key
  // write the same bytes. (Named llvmcache-*, so that the pruning removes
  // one a killed process left behind.)
  llvm::SmallString<256> model(dir_);
  llvm::sys::path::append(model, fileName(key_) + ".%%%%%%%%.tmp");
  int fd;
  llvm::SmallString<256> temporary;
  ec = llvm::sys::fs::createUniqueFile(model, fd, temporary);
  if (ec) {
    problem_ = std::string(model) + ": " + ec.message() + "; not stored";
    return;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << encode(object.getBuffer());
    os.close();
    if (os.has_error()) {
      problem_ =
          std::string(temporary) + ": " + os.error().message() + "; not stored";
      os.clear_error();
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  if ((ec = llvm::sys::fs::rename(temporary, path()))) {
    problem_ = path() + ": " + ec.message() + "; not stored";
    llvm::sys::fs::remove(temporary);
    return;
  }
  prune();
}

void DiskObjectCache::prune() {
  auto policy = llvm::parseCachePruningPolicy(pruning_);
  if (!policy) {
    problem_ = "cache pruning policy '" + pruning_ +
               "': " + llvm::toString(policy.takeError()) + "; not pruned";
    return;
  }
  llvm::pruneCache(dir_, *policy);
}
