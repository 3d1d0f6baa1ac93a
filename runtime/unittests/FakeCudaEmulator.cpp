//===- FakeCudaEmulator.cpp - Running a launch on the host ----------------===//
//
// execute(): every thread of every block runs the kernel's host form to the
// end, blocks one at a time and a block's threads in a seeded shuffle (or
// reversed, or in order). A kernel without warp operations or barriers runs
// each thread to its end in turn: any dependency between threads changes
// the bits (and the race check below reports it). A kernel that
// synchronizes runs each thread of a block as a fiber (FakeCudaFiber.h):
// in the block's order, each runs until it reaches a shuffle or a barrier
// or exits; then the waits that can complete do (a warp's shuffle once
// every lane of its mask is there, a barrier once every thread of the
// block is), and the threads run on in the same order. A wait that can
// never complete (a mask naming an exited lane or a lane at a barrier, a
// thread that exits while others wait at a barrier, a source lane outside
// the mask) fails the launch; the block's threads then run on with their
// waits answered by their own values. Each global access first calls
// inklingFakeCudaAccess, which checks it:
//   * memcheck: the bytes lie in one live allocation and inside the extent
//     of a kernel argument the compiler proved the address derives from
//     (offset + [min, max] over the descriptor's sizes and strides);
//   * racecheck: no byte is written by one thread and read or written by
//     another thread of the same launch (atomics excepted).
// Workgroup (shared) memory is one buffer per global per block, 0xff at the
// block's start; each access is checked against the block's buffers and
// raced between barriers (a barrier ends every race window of the block).
// A failing access is redirected to a scratch buffer, so the kernel runs on
// without touching memory it does not own; the launch then fails with the
// first failure.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaEmulator.h"
#include "FakeCudaFiber.h"

#include "inkling/Runtime/EmulationAbi.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace emu = inkling::emulation;

namespace inkling::fakecuda {
namespace {

/// A kernel argument's reach: [first, last) bytes.
struct Extent {
  uint64_t first = 0, last = 0;
};

/// Who touched one 16-byte granule of memory in the launch. Compact while
/// one thread wrote it (`writer`, bytes `written`) and either one thread or
/// several threads read the same bytes (`reader`, bytes `read`); exact per
/// byte (`bytes`) once threads touch it in any other way.
struct Granule {
  uint64_t epoch = 0; ///< The launch it belongs to; older: untouched.
  uint32_t writer = 0, reader = 0;
  uint16_t written = 0, read = 0;
  /// Per byte: writer[16], then reader[16]; 0: none.
  std::unique_ptr<std::array<uint32_t, 32>> bytes;
};
constexpr uint32_t kManyReaders = ~uint32_t(0);

/// Granules by index, in chunks of 64 neighbours (1 KiB of memory): a
/// kernel's accesses run along rows, so most find the chunk of the access
/// before (no lookup at all) and the rest one open-addressing probe
/// sequence over chunks. (A table of single granules sent neighbours to
/// random slots: a cache miss per access, 65% of an emulated launch.)
/// One table serves every launch of a thread: a new launch frees every
/// granule at once (`clear`), and the memory stays.
class GranuleTable {
public:
  static constexpr unsigned kChunkBits = 6;
  using Chunk = std::array<Granule, 1u << kChunkBits>;

  void clear() {
    ++epoch_;
    used_ = 0;
    lastIndex_ = kNone;
  }
  Granule &at(uint64_t index) {
    uint64_t chunkIndex = index >> kChunkBits;
    if (chunkIndex != lastIndex_) {
      last_ = &chunk(chunkIndex);
      lastIndex_ = chunkIndex;
    }
    Granule &g = (*last_)[index & ((1u << kChunkBits) - 1)];
    if (g.epoch != epoch_) {
      g = Granule();
      g.epoch = epoch_;
    }
    return g;
  }

private:
  static constexpr uint64_t kNone = ~uint64_t(0);
  /// A chunk's place: `pool_[chunk]` holds chunk `index` in launch `epoch`.
  struct Slot {
    uint64_t index = 0, epoch = 0;
    size_t chunk = 0;
  };

  Chunk &chunk(uint64_t index) {
    if (2 * (used_ + 1) > slots_.size())
      grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(index);; i = (i + 1) & mask) {
      Slot &slot = slots_[i];
      if (slot.epoch != epoch_) {
        // A new chunk this launch: the pool's next, whose granules are all
        // of older launches (untouched).
        if (used_ == pool_.size())
          pool_.push_back(std::make_unique<Chunk>());
        slot = {index, epoch_, used_++};
        return *pool_[slot.chunk];
      }
      if (slot.index == index)
        return *pool_[slot.chunk];
    }
  }
  /// Fibonacci hashing: the top bits of the product.
  size_t hash(uint64_t index) const {
    return static_cast<size_t>(((index + 1) * 0x9e3779b97f4a7c15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_ = std::vector<Slot>(old.empty() ? 1024 : 2 * old.size());
    shift_ = 64 - __builtin_ctzll(slots_.size());
    size_t mask = slots_.size() - 1;
    for (const Slot &slot : old) {
      if (slot.epoch != epoch_)
        continue;
      size_t i = hash(slot.index);
      while (slots_[i].epoch == epoch_)
        i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  /// Chunks by first use in the launch; kept across launches.
  std::vector<std::unique_ptr<Chunk>> pool_;
  size_t used_ = 0;
  unsigned shift_ = 64;
  uint64_t epoch_ = 1;
  uint64_t lastIndex_ = kNone;
  Chunk *last_ = nullptr;
};

/// One thread of a block that synchronizes, and what it waits for.
struct Thread {
  enum class Wait { Running, Shuffle, Barrier, Exited };
  Wait wait = Wait::Running;
  uint32_t index = 0; ///< Linear index in the block.
  std::array<unsigned, 3> tid = {};
  // The shuffle it waits at, and its answer.
  int32_t kind = 0, mask = 0, value = 0, b = 0, c = 0;
  int64_t result = 0;
  Fiber fiber;
};

/// One workgroup global's copy for the running block.
struct SharedBuffer {
  std::unique_ptr<unsigned char[]> storage;
  unsigned char *data = nullptr;
  int64_t bytes = 0;
};

struct Launch {
  const LaunchRequest *request = nullptr;
  std::vector<Extent> extents;
  GranuleTable *granules = nullptr;
  /// The block's workgroup memory and its race windows (since the last
  /// barrier).
  std::vector<SharedBuffer> shared;
  GranuleTable *sharedGranules = nullptr;
  /// The block's threads when the kernel synchronizes, else empty.
  std::vector<std::unique_ptr<Thread>> *threads = nullptr;
  Thread *running = nullptr;
  bool broken = false; ///< A wait could not complete: answer them all.
  // The running thread.
  std::array<unsigned, 3> tid = {}, ctaid = {};
  uint32_t thread = 0; ///< 1 + linear index in the launch.
  std::string failure;
  uint64_t failures = 0;
};

thread_local Launch *current = nullptr;
/// Where failing accesses go; 64-byte aligned, larger than any access.
alignas(64) thread_local unsigned char scratch[4096];

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string triple(const std::array<unsigned, 3> &v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " +
         std::to_string(v[2]) + ")";
}

const char *kindName(int32_t kind) {
  switch (static_cast<emu::Access>(kind)) {
  case emu::Access::Load:
    return "load";
  case emu::Access::Store:
    return "store";
  case emu::Access::Atomic:
    return "atomic";
  }
  return "access";
}

/// The allocation holding `address`, if any: [begin, begin + bytes).
const std::pair<const uint64_t, size_t> *
allocationOf(const std::map<uint64_t, size_t> &allocations, uint64_t address) {
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return nullptr;
  --it;
  return address - it->first < it->second ? &*it : nullptr;
}

void fail(Launch &launch, const std::string &what) {
  if (launch.failures++ == 0)
    launch.failure = what;
}

std::string where(const Launch &launch, int32_t kind, uint64_t address,
                  int64_t bytes) {
  return "cuLaunchKernel " + launch.request->kernel->name + ": thread " +
         triple(launch.tid) + " of block " + triple(launch.ctaid) + ": " +
         std::to_string(bytes) + "-byte " + kindName(kind) + " at " +
         hex(address);
}

bool reportOutOfBounds(Launch &launch, uint64_t address, int64_t bytes,
                       int64_t mask, int32_t kind,
                       const std::pair<const uint64_t, size_t> *allocation,
                       bool inAllocation);

/// memcheck: whether the access lies in the extent of an argument of
/// `mask` (the launch checked that each extent lies in one allocation), or
/// in a live allocation when the mask is 0.
bool checkBounds(Launch &launch, uint64_t address, int64_t bytes, int64_t mask,
                 int32_t kind) {
  uint64_t end = address + static_cast<uint64_t>(bytes);
  for (uint64_t m = static_cast<uint64_t>(mask); m; m &= m - 1) {
    const Extent &e = launch.extents[__builtin_ctzll(m)];
    if (address >= e.first && end <= e.last)
      return true;
  }
  const auto *allocation = allocationOf(*launch.request->allocations, address);
  bool inAllocation =
      allocation && end - allocation->first <= allocation->second;
  if (inAllocation && mask == 0)
    return true;
  return reportOutOfBounds(launch, address, bytes, mask, kind, allocation,
                           inAllocation);
}

// The failure reports are out of line and cold: the checks run on every
// emulated access, and their message strings made each call's frame large
// (in the sanitizer build, a fake stack frame per access).
[[gnu::noinline, gnu::cold]] bool reportOutOfBounds(
    Launch &launch, uint64_t address, int64_t bytes, int64_t mask, int32_t kind,
    const std::pair<const uint64_t, size_t> *allocation, bool inAllocation) {
  std::string why;
  if (!allocation) {
    why = " is in no allocation";
  } else if (!inAllocation) {
    why = " runs past its allocation [" + hex(allocation->first) + ", +" +
          std::to_string(allocation->second) + ")";
  } else {
    std::string missed;
    for (uint64_t m = static_cast<uint64_t>(mask); m; m &= m - 1) {
      unsigned a = __builtin_ctzll(m);
      const Extent &e = launch.extents[a];
      missed += (missed.empty() ? "" : ", ") + std::string("argument ") +
                std::to_string(a) + " [" + hex(e.first) + ", +" +
                std::to_string(e.last - e.first) + ")";
    }
    why = " is outside the extent its descriptor declares (" + missed +
          "; allocation [" + hex(allocation->first) + ", +" +
          std::to_string(allocation->second) + "))";
  }
  fail(launch, "memcheck: " + where(launch, kind, address, bytes) + why);
  return false;
}

/// The per-byte form of `g`.
std::array<uint32_t, 32> &exact(Granule &g) {
  if (!g.bytes) {
    g.bytes = std::make_unique<std::array<uint32_t, 32>>();
    for (unsigned i = 0; i < 16; ++i) {
      (*g.bytes)[i] = g.written >> i & 1 ? g.writer : 0;
      (*g.bytes)[16 + i] = g.read >> i & 1 ? g.reader : 0;
    }
  }
  return *g.bytes;
}

/// One emulated access, for the messages.
struct AccessSite {
  uint64_t address = 0;
  int64_t bytes = 0;
  int32_t kind = 0;
};

[[gnu::noinline, gnu::cold]] bool reportRace(Launch &launch, AccessSite site,
                                             const char *scope,
                                             uint64_t byteAddress,
                                             const char *what, uint32_t other) {
  bool store = site.kind == static_cast<int32_t>(emu::Access::Store);
  fail(launch,
       "racecheck: " + where(launch, site.kind, site.address, site.bytes) +
           (store ? " writes" : " reads") + " byte " + hex(byteAddress) +
           ", which " +
           (other == kManyReaders ? std::string("other threads")
                                  : "thread #" + std::to_string(other - 1)) +
           scope + what);
  return false;
}

/// racecheck of `mask`'s bytes of granule `index`: a byte written by one
/// thread is neither read nor written by another thread of the launch.
bool checkGranule(Launch &launch, GranuleTable &table, const char *scope,
                  uint64_t index, uint16_t mask, bool store, AccessSite site) {
  Granule &g = table.at(index);
  uint32_t me = launch.thread;
  auto race = [&](unsigned i, const char *what, uint32_t other) {
    return reportRace(launch, site, scope, index * 16 + i, what, other);
  };
  if (!g.bytes) {
    // The compact form answers, or says it cannot.
    if (g.written && g.writer != me && (g.written & mask))
      return race(__builtin_ctz(g.written & mask), "wrote", g.writer);
    if (store && g.read && g.reader != me && (g.read & mask))
      return race(__builtin_ctz(g.read & mask), "read", g.reader);
    bool compact = store ? !g.written || g.writer == me
                         : !g.read || g.reader == me || g.read == mask;
    if (compact) {
      if (store) {
        g.writer = me;
        g.written |= mask;
      } else if (!g.read || g.reader == me) {
        g.reader = me;
        g.read |= mask;
      } else {
        g.reader = kManyReaders;
      }
      return true;
    }
  }
  std::array<uint32_t, 32> &bytes = exact(g);
  for (unsigned i = 0; i < 16; ++i) {
    if (!(mask >> i & 1))
      continue;
    uint32_t writer = bytes[i];
    if (writer && writer != me)
      return race(i, "wrote", writer);
    uint32_t &reader = bytes[16 + i];
    if (store) {
      if (reader && reader != me)
        return race(i, "read", reader);
      bytes[i] = me;
    } else if (reader != me) {
      reader = reader ? kManyReaders : me;
    }
  }
  return true;
}

bool checkRaces(Launch &launch, GranuleTable &table, const char *scope,
                uint64_t address, int64_t bytes, int32_t kind) {
  bool store = kind == static_cast<int32_t>(emu::Access::Store);
  AccessSite site{address, bytes, kind};
  uint64_t end = address + static_cast<uint64_t>(bytes);
  for (uint64_t index = address / 16; index * 16 < end; ++index) {
    uint64_t lo = std::max(address, index * 16) - index * 16;
    uint64_t hi = std::min(end, index * 16 + 16) - index * 16;
    auto mask = static_cast<uint16_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
    if (!checkGranule(launch, table, scope, index, mask, store, site))
      return false;
  }
  return true;
}

uint64_t word(void **params, int64_t index) {
  uint64_t value = 0;
  std::memcpy(&value, params[index], sizeof(value));
  return value;
}

/// The byte extent of each argument's descriptor (empty when a size is 0).
std::vector<Extent> extentsOf(const HostKernel &kernel, void **params) {
  std::vector<Extent> extents;
  for (const HostKernel::Argument &a : kernel.arguments) {
    uint64_t aligned = word(params, a.firstParam + 1);
    int64_t offset = static_cast<int64_t>(word(params, a.firstParam + 2));
    __int128 lo = offset, hi = offset;
    bool empty = false;
    for (int64_t d = 0; d < a.rank; ++d) {
      auto size = static_cast<int64_t>(word(params, a.firstParam + 3 + d));
      auto stride =
          static_cast<int64_t>(word(params, a.firstParam + 3 + a.rank + d));
      if (size <= 0) {
        empty = true;
        break;
      }
      __int128 reach = static_cast<__int128>(size - 1) * stride;
      (reach < 0 ? lo : hi) += reach;
    }
    Extent e;
    if (!empty) {
      e.first = static_cast<uint64_t>(aligned + lo * a.elementBytes);
      e.last = static_cast<uint64_t>(aligned + (hi + 1) * a.elementBytes);
    }
    extents.push_back(e);
  }
  return extents;
}

/// 0, 1, ..., n-1 in the launch's order.
std::vector<uint32_t> ordered(uint32_t n, Order order, std::mt19937_64 &rng) {
  std::vector<uint32_t> indices(n);
  std::iota(indices.begin(), indices.end(), 0);
  if (order == Order::Reversed)
    std::reverse(indices.begin(), indices.end());
  else if (order == Order::Shuffled)
    std::shuffle(indices.begin(), indices.end(), rng);
  return indices;
}

} // namespace

extern "C" int32_t inklingFakeCudaSreg(int32_t which) {
  Launch &l = *current;
  const LaunchRequest &r = *l.request;
  switch (static_cast<emu::Sreg>(which)) {
  case emu::Sreg::TidX:
    return static_cast<int32_t>(l.tid[0]);
  case emu::Sreg::TidY:
    return static_cast<int32_t>(l.tid[1]);
  case emu::Sreg::TidZ:
    return static_cast<int32_t>(l.tid[2]);
  case emu::Sreg::NtidX:
    return static_cast<int32_t>(r.block[0]);
  case emu::Sreg::NtidY:
    return static_cast<int32_t>(r.block[1]);
  case emu::Sreg::NtidZ:
    return static_cast<int32_t>(r.block[2]);
  case emu::Sreg::CtaidX:
    return static_cast<int32_t>(l.ctaid[0]);
  case emu::Sreg::CtaidY:
    return static_cast<int32_t>(l.ctaid[1]);
  case emu::Sreg::CtaidZ:
    return static_cast<int32_t>(l.ctaid[2]);
  case emu::Sreg::NctaidX:
    return static_cast<int32_t>(r.grid[0]);
  case emu::Sreg::NctaidY:
    return static_cast<int32_t>(r.grid[1]);
  case emu::Sreg::NctaidZ:
    return static_cast<int32_t>(r.grid[2]);
  case emu::Sreg::LaneId:
    return static_cast<int32_t>(
        (l.tid[0] + r.block[0] * (l.tid[1] + r.block[1] * l.tid[2])) % 32);
  case emu::Sreg::WarpSize:
    return 32;
  }
  fail(l, "cuLaunchKernel " + r.kernel->name + ": unknown special register " +
              std::to_string(which));
  return 0;
}

namespace {

/// The buffer of the block's workgroup memory holding [address, +bytes),
/// or null.
const SharedBuffer *sharedBufferOf(const Launch &launch, uint64_t address,
                                   int64_t bytes) {
  for (const SharedBuffer &buffer : launch.shared) {
    auto first = reinterpret_cast<uint64_t>(buffer.data);
    if (buffer.data && address >= first &&
        address + static_cast<uint64_t>(bytes) <=
            first + static_cast<uint64_t>(buffer.bytes))
      return &buffer;
  }
  return nullptr;
}

/// Where a failing access goes.
void *redirect(int64_t bytes) {
  if (bytes > static_cast<int64_t>(sizeof(scratch))) {
    std::fprintf(stderr, "fake-cuda: an access of %lld bytes\n",
                 static_cast<long long>(bytes));
    std::abort(); // no kernel of ours moves more than 64 bytes at once
  }
  std::memset(scratch, 0, static_cast<size_t>(bytes));
  return scratch;
}

/// An access of the block's workgroup memory: memcheck against its
/// buffers, racecheck since the last barrier.
void *sharedAccess(Launch &l, void *address, int64_t bytes, int32_t kind) {
  auto at = reinterpret_cast<uint64_t>(address);
  bool ok = sharedBufferOf(l, at, bytes) != nullptr;
  if (!ok) {
    std::string buffers;
    for (const SharedBuffer &buffer : l.shared)
      if (buffer.data)
        buffers += (buffers.empty() ? "" : ", ") + std::string("[") +
                   hex(reinterpret_cast<uint64_t>(buffer.data)) + ", +" +
                   std::to_string(buffer.bytes) + ")";
    fail(l, "memcheck: " + where(l, kind, at, bytes) +
                " (workgroup memory) is outside the block's workgroup "
                "buffers (" +
                (buffers.empty() ? std::string("none") : buffers) + ")");
  }
  if (ok && l.request->racecheck &&
      kind != static_cast<int32_t>(emu::Access::Atomic))
    ok = checkRaces(l, *l.sharedGranules,
                    " of the block (workgroup memory, since the last barrier) ",
                    at, bytes, kind);
  return ok ? address : redirect(bytes);
}

std::string threadName(const Launch &l, const Thread &t) {
  return "thread " + triple(t.tid) + " of block " + triple(l.ctaid);
}

/// The shuffle `t` waits at, answered with its own value (a broken block).
void answerAlone(Thread &t) {
  t.result = static_cast<int64_t>(static_cast<uint32_t>(t.value));
  t.wait = Thread::Wait::Running;
}

/// Completes every warp shuffle whose mask's lanes all wait at it; fails
/// the launch for one that never can. Returns whether one completed, or
/// an error ("" when none).
bool completeShuffles(Launch &l, std::vector<std::unique_ptr<Thread>> &threads,
                      std::string &error) {
  bool progress = false;
  auto n = static_cast<uint32_t>(threads.size());
  std::vector<bool> done(n, false);
  for (uint32_t i = 0; i < n && error.empty(); ++i) {
    Thread &t = *threads[i];
    if (t.wait != Thread::Wait::Shuffle || done[i])
      continue;
    uint32_t base = i / 32 * 32, lane = i % 32;
    uint32_t lanes = std::min<uint32_t>(32, n - base);
    auto mask = static_cast<uint32_t>(t.mask);
    std::string who = "cuLaunchKernel " + l.request->kernel->name + ": " +
                      threadName(l, t) + ": shfl.sync with mask " + hex(mask);
    if (!(mask >> lane & 1)) {
      error = who + " does not name its own lane " + std::to_string(lane);
      break;
    }
    for (uint32_t m = mask; m && error.empty(); m &= m - 1) {
      uint32_t other = __builtin_ctz(m);
      if (other >= lanes) {
        error = who + " names lane " + std::to_string(other) +
                ", which its warp does not have (" + std::to_string(lanes) +
                " lanes)";
        break;
      }
      const Thread &u = *threads[base + other];
      if (u.wait == Thread::Wait::Exited)
        error = who + " waits for lane " + std::to_string(other) +
                ", which has exited";
      else if (u.wait == Thread::Wait::Barrier)
        error = who + " waits for lane " + std::to_string(other) +
                ", which waits at a barrier (deadlock)";
      else if (u.mask != t.mask || u.kind != t.kind || u.c != t.c)
        error = who + " meets lane " + std::to_string(other) +
                " at a different shuffle (mask " +
                hex(static_cast<uint32_t>(u.mask)) + ", kind " +
                std::to_string(u.kind) + ")";
    }
    if (!error.empty())
      break;
    // PTX's shfl.sync: the source lane j, clamped to the segment.
    std::array<int64_t, 32> results = {};
    for (uint32_t m = mask; m && error.empty(); m &= m - 1) {
      uint32_t me = __builtin_ctz(m);
      const Thread &u = *threads[base + me];
      int32_t bval = u.b & 0x1f, cval = u.c & 0x1f, segmask = u.c >> 8 & 0x1f;
      auto lid = static_cast<int32_t>(me);
      int32_t maxLane = (lid & segmask) | (cval & ~segmask);
      int32_t minLane = lid & segmask;
      int32_t j = lid;
      bool valid = false;
      switch (static_cast<emu::Shuffle>(u.kind)) {
      case emu::Shuffle::Up:
        j = lid - bval;
        valid = j >= maxLane;
        break;
      case emu::Shuffle::Down:
        j = lid + bval;
        valid = j <= maxLane;
        break;
      case emu::Shuffle::Bfly:
        j = lid ^ bval;
        valid = j <= maxLane;
        break;
      case emu::Shuffle::Idx:
        j = minLane | (bval & ~segmask);
        valid = j <= maxLane;
        break;
      default:
        error = who + ": unknown shuffle kind " + std::to_string(u.kind);
        continue;
      }
      if (!valid)
        j = lid;
      if (j < 0 || j > 31 || !(mask >> j & 1)) {
        error = "cuLaunchKernel " + l.request->kernel->name + ": " +
                threadName(l, u) + ": shfl.sync reads lane " +
                std::to_string(j) + ", which is not in its mask " + hex(mask) +
                " (an undefined value on the device)";
        continue;
      }
      results[me] = static_cast<int64_t>(
                        static_cast<uint32_t>(threads[base + j]->value)) |
                    (valid ? int64_t(1) << 32 : 0);
    }
    if (!error.empty())
      break;
    for (uint32_t m = mask; m; m &= m - 1) {
      uint32_t me = __builtin_ctz(m);
      Thread &u = *threads[base + me];
      u.result = results[me];
      u.wait = Thread::Wait::Running;
      done[base + me] = true;
    }
    progress = true;
  }
  return progress;
}

/// Lets the block's waiting threads go on: completes the shuffles that can,
/// else the barrier all threads wait at. Returns false (after failing the
/// launch) when no wait can ever complete.
bool release(Launch &l, std::vector<std::unique_ptr<Thread>> &threads) {
  std::string error;
  if (completeShuffles(l, threads, error))
    return true;
  if (error.empty()) {
    // Every waiting thread is at a barrier.
    for (const auto &t : threads)
      if (t->wait == Thread::Wait::Exited) {
        error = "cuLaunchKernel " + l.request->kernel->name + ": " +
                threadName(l, *t) +
                " exited while other threads of its block wait at a "
                "barrier (a barrier not reached by every thread)";
        break;
      }
  }
  if (!error.empty()) {
    fail(l, error);
    return false;
  }
  for (auto &t : threads)
    if (t->wait == Thread::Wait::Barrier)
      t->wait = Thread::Wait::Running;
  l.sharedGranules->clear(); // accesses on either side never race
  return true;
}

void runThread(void *argument) {
  (void)argument;
  const LaunchRequest &r = *current->request;
  r.kernel->entry(r.params);
}

/// Runs the block `launch.ctaid` with each thread a fiber, `order` between
/// the synchronization points.
void runBlockOfFibers(Launch &launch, uint32_t blockIndex,
                      const std::vector<uint32_t> &order) {
  auto &threads = *launch.threads;
  const auto &b = launch.request->block;
  for (uint32_t i = 0; i < threads.size(); ++i) {
    Thread &t = *threads[i];
    t.index = i;
    t.tid = {i % b[0], i / b[0] % b[1], i / (b[0] * b[1])};
    t.wait = Thread::Wait::Running;
    if (!t.fiber.reset(&runThread, &t)) {
      fail(launch, "cuLaunchKernel " + launch.request->kernel->name +
                       ": no stack for thread " + triple(t.tid));
      return;
    }
  }
  launch.broken = false;
  for (;;) {
    bool waiting = false;
    for (uint32_t index : order) {
      Thread &t = *threads[index];
      if (t.wait != Thread::Wait::Running)
        continue;
      launch.running = &t;
      launch.tid = t.tid;
      launch.thread = blockIndex * threads.size() + index + 1;
      t.fiber.resume();
      if (t.fiber.finished())
        t.wait = Thread::Wait::Exited;
      else
        waiting = true;
    }
    launch.running = nullptr;
    if (!waiting)
      return;
    if (!release(launch, threads)) {
      launch.broken = true;
      for (auto &t : threads)
        if (t->wait == Thread::Wait::Shuffle ||
            t->wait == Thread::Wait::Barrier)
          answerAlone(*t);
    }
  }
}

/// The running thread, or null (after failing the launch) when the kernel
/// synchronizes but was not run as fibers.
Thread *synchronizingThread(Launch &l, const char *what) {
  if (l.running)
    return l.running;
  fail(l, "cuLaunchKernel " + l.request->kernel->name + ": " + what +
              " in a kernel not run as fibers (its host form does not say "
              "it synchronizes)");
  return nullptr;
}

} // namespace

extern "C" void *inklingFakeCudaAccess(void *address, int64_t bytes,
                                       int64_t arguments, int32_t kind) {
  Launch &l = *current;
  auto at = reinterpret_cast<uint64_t>(address);
  // An address the compiler could not trace may be workgroup memory.
  if (arguments == 0 && sharedBufferOf(l, at, bytes))
    return sharedAccess(l, address, bytes, kind);
  bool ok = checkBounds(l, at, bytes, arguments, kind);
  if (ok && l.request->racecheck &&
      kind != static_cast<int32_t>(emu::Access::Atomic))
    ok = checkRaces(l, *l.granules, " of the launch ", at, bytes, kind);
  return ok ? address : redirect(bytes);
}

extern "C" void *inklingFakeCudaSharedAccess(void *address, int64_t bytes,
                                             int32_t kind) {
  return sharedAccess(*current, address, bytes, kind);
}

extern "C" void *inklingFakeCudaWorkgroup(int32_t id, int64_t bytes,
                                          int64_t align) {
  Launch &l = *current;
  if (id < 0 || bytes < 0 || id > 4096) {
    fail(l, "cuLaunchKernel " + l.request->kernel->name +
                ": workgroup global " + std::to_string(id) + " of " +
                std::to_string(bytes) + " bytes");
    return redirect(0);
  }
  if (static_cast<size_t>(id) >= l.shared.size())
    l.shared.resize(id + 1);
  SharedBuffer &buffer = l.shared[id];
  if (!buffer.data) {
    size_t a = std::max<int64_t>(16, align);
    buffer.storage.reset(new unsigned char[bytes + a]);
    auto raw = reinterpret_cast<uintptr_t>(buffer.storage.get());
    buffer.data = reinterpret_cast<unsigned char *>((raw + a - 1) / a * a);
    buffer.bytes = bytes;
    std::memset(buffer.data, 0xff, static_cast<size_t>(bytes));
  } else if (buffer.bytes != bytes) {
    fail(l, "cuLaunchKernel " + l.request->kernel->name +
                ": workgroup global " + std::to_string(id) + " asked for " +
                std::to_string(bytes) + " bytes and " +
                std::to_string(buffer.bytes) + " bytes");
  }
  return buffer.data;
}

extern "C" int64_t inklingFakeCudaShuffle(int32_t kind, int32_t mask,
                                          int32_t value, int32_t b, int32_t c) {
  Launch &l = *current;
  Thread *t = synchronizingThread(l, "shfl.sync");
  if (!t || l.broken)
    return static_cast<int64_t>(static_cast<uint32_t>(value));
  t->wait = Thread::Wait::Shuffle;
  t->kind = kind;
  t->mask = mask;
  t->value = value;
  t->b = b;
  t->c = c;
  t->fiber.yield();
  return t->result;
}

extern "C" void inklingFakeCudaBarrier() {
  Launch &l = *current;
  Thread *t = synchronizingThread(l, "barrier");
  if (!t || l.broken)
    return;
  t->wait = Thread::Wait::Barrier;
  t->fiber.yield();
}

std::string execute(const LaunchRequest &request) {
  static thread_local GranuleTable granules, sharedGranules;
  static thread_local std::vector<std::unique_ptr<Thread>> fibers;
  granules.clear();
  Launch launch;
  launch.request = &request;
  launch.granules = &granules;
  launch.sharedGranules = &sharedGranules;
  launch.extents = extentsOf(*request.kernel, request.params);
  const auto &g = request.grid;
  const auto &b = request.block;
  uint32_t blocks = g[0] * g[1] * g[2];
  uint32_t threads = b[0] * b[1] * b[2];
  // A block's threads, their fibers (and stacks) kept from launch to launch.
  std::vector<std::unique_ptr<Thread>> blockThreads;
  if (request.kernel->synchronizes) {
    while (fibers.size() < threads)
      fibers.push_back(std::make_unique<Thread>());
    for (uint32_t i = 0; i < threads; ++i)
      blockThreads.push_back(std::move(fibers[i]));
    launch.threads = &blockThreads;
  }
  std::mt19937_64 rng(request.seed);
  Launch *outer = current;
  current = &launch;
  for (uint32_t blockIndex : ordered(blocks, request.order, rng)) {
    launch.ctaid = {blockIndex % g[0], blockIndex / g[0] % g[1],
                    blockIndex / (g[0] * g[1])};
    sharedGranules.clear();
    for (SharedBuffer &buffer : launch.shared)
      if (buffer.data)
        std::memset(buffer.data, 0xff, static_cast<size_t>(buffer.bytes));
    std::vector<uint32_t> order = ordered(threads, request.order, rng);
    if (request.kernel->synchronizes) {
      runBlockOfFibers(launch, blockIndex, order);
      continue;
    }
    for (uint32_t threadIndex : order) {
      launch.tid = {threadIndex % b[0], threadIndex / b[0] % b[1],
                    threadIndex / (b[0] * b[1])};
      launch.thread = blockIndex * threads + threadIndex + 1;
      request.kernel->entry(request.params);
    }
  }
  current = outer;
  for (uint32_t i = 0; i < blockThreads.size(); ++i)
    fibers[i] = std::move(blockThreads[i]);
  if (!launch.failures)
    return "";
  if (launch.failures > 1)
    launch.failure += " (and " + std::to_string(launch.failures - 1) +
                      " more failed accesses)";
  return launch.failure;
}

} // namespace inkling::fakecuda
