//===- FakeCudaSyncTest.cpp - Warp shuffles, barriers, shared memory ------===//
//
// Kernels written by hand in their host form (inkling/Runtime/
// EmulationAbi.h) that synchronize: the emulator runs a block's threads in
// lock step at shuffles and barriers, in every order, gives each block its
// workgroup memory, and reports what a device would leave undefined (a
// shuffle from an exited lane or one outside the mask, a barrier a thread
// never reaches) and every race and stray access of workgroup memory.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaKernel.h"
#include "inkling/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::cuda;

namespace {

/// The host form of `sync`: %x, %y (the descriptors' aligned pointers),
/// %tid (i32), %i = ctaid.x * ntid.x + tid.x (i64) and %v = x[%i] (i32)
/// are defined before `body`, which ends the function.
std::string syncHostForm(const std::string &body) {
  return xyHostFormHead(
             "sync",
             "declare i64 @__inkling_emu_shfl(i32, i32, i32, i32, i32)\n"
             "declare void @__inkling_emu_barrier()\n"
             "declare ptr @__inkling_emu_workgroup(i32, i64, i64)\n"
             "declare ptr @__inkling_emu_shared_access(ptr, i64, i32)\n") +
         R"(  %src = getelementptr i16, ptr %x, i64 %i
  %s = call ptr @__inkling_emu_access(ptr %src, i64 2, i64 1, i32 0)
  %v16 = load i16, ptr %s
  %v = zext i16 %v16 to i32
)" + body +
         "}\n";
}

/// Stores the i32 `value` to y[%i].
std::string storeY(const std::string &value) {
  return "  %out = trunc i32 " + value +
         " to i16\n"
         "  %dst = getelementptr i16, ptr %y, i64 %i\n"
         "  %d = call ptr @__inkling_emu_access(ptr %dst, i64 2, i64 2, "
         "i32 1)\n"
         "  store i16 %out, ptr %d\n"
         "  ret void\n";
}

/// A butterfly sum of %v over the warp's lanes (offsets `offsets`), in %sN.
std::string butterfly(const std::vector<int> &offsets,
                      const std::string &mask = "-1") {
  std::string body;
  std::string sum = "%v";
  for (size_t k = 0; k < offsets.size(); ++k) {
    std::string n = std::to_string(k);
    body += "  %r" + n + " = call i64 @__inkling_emu_shfl(i32 0, i32 " + mask +
            ", i32 " + sum + ", i32 " + std::to_string(offsets[k]) +
            ", i32 31)\n";
    body += "  %t" + n + " = trunc i64 %r" + n + " to i32\n";
    body += "  %s" + n + " = add i32 " + sum + ", %t" + n + "\n";
    sum = "%s" + n;
  }
  return body;
}

/// The sync kernel in the fake driver, executed from `hostForm`, on 64
/// threads a block.
struct SyncLaunch : XYLaunch {
  explicit SyncLaunch(const std::string &hostForm)
      : XYLaunch("sync", hostForm, /*threads=*/64) {}
};

constexpr const char *kOrders[] = {"shuffle", "reverse", "forward"};

TEST(FakeCudaSync, AShuffleXorReductionSumsEachWarpInEveryOrder) {
  for (const char *order : kOrders) {
    setenv("INKLING_FAKE_CUDA_ORDER", order, 1);
    SyncLaunch k(syncHostForm(butterfly({1, 2, 4, 8, 16}) + storeY("%s4")));
    ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
    Status s = k.run(2);
    ASSERT_TRUE(s.isOk()) << order << ": " << s.toString();
    for (size_t i = 0; i < k.output.size(); ++i) {
      // Each warp's 32 values of x = 1, 2, ...: (first + last) * 16.
      size_t first = i / 32 * 32 + 1;
      EXPECT_EQ(k.output[i], (2 * first + 31) * 16) << order << " " << i;
    }
  }
  unsetenv("INKLING_FAKE_CUDA_ORDER");
}

TEST(FakeCudaSync, ShuffleDownAndIdxFollowPtx) {
  // down 1 within 8-lane segments (c = 0x1807: segmask 0x18, clamp 7): the
  // last lane of each segment keeps its own value (predicate false), then
  // idx 0 of the segment broadcasts lane 0's result.
  std::string body =
      "  %r = call i64 @__inkling_emu_shfl(i32 2, i32 -1, i32 %v, i32 1, "
      "i32 6151)\n"
      "  %dn = trunc i64 %r to i32\n"
      "  %p64 = lshr i64 %r, 32\n"
      "  %p = trunc i64 %p64 to i32\n"
      "  %b = call i64 @__inkling_emu_shfl(i32 3, i32 -1, i32 %dn, i32 0, "
      "i32 6151)\n"
      "  %bt = trunc i64 %b to i32\n"
      "  %scaled = mul i32 %bt, 4\n"
      "  %w = add i32 %scaled, %p\n" +
      storeY("%w");
  for (const char *order : kOrders) {
    setenv("INKLING_FAKE_CUDA_ORDER", order, 1);
    SyncLaunch k(syncHostForm(body));
    ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
    ASSERT_TRUE(k.run(1).isOk()) << order;
    for (size_t i = 0; i < k.output.size(); ++i) {
      // Lane 0 of a segment got lane 1's value, x[segment start + 1].
      uint16_t broadcast = static_cast<uint16_t>(i / 8 * 8 + 2);
      uint16_t valid = i % 8 != 7;
      EXPECT_EQ(k.output[i], 4 * broadcast + valid) << order << " " << i;
    }
  }
  unsetenv("INKLING_FAKE_CUDA_ORDER");
}

/// Each thread stores %v to shared[tid], then (after a barrier when
/// `barrier`) reads shared[63 - tid + `shift`] into y[%i].
std::string exchange(bool barrier, int shift = 0) {
  return R"(
  %wg = call ptr @__inkling_emu_workgroup(i32 0, i64 128, i64 16)
  %tid64 = zext i32 %tid to i64
  %mine = getelementptr i16, ptr %wg, i64 %tid64
  %m = call ptr @__inkling_emu_shared_access(ptr %mine, i64 2, i32 1)
  store i16 %v16, ptr %m
)" + std::string(barrier ? "  call void @__inkling_emu_barrier()\n" : "") +
         "  %back = sub i64 " + std::to_string(63 + shift) + R"(, %tid64
  %theirs = getelementptr i16, ptr %wg, i64 %back
  %t = call ptr @__inkling_emu_shared_access(ptr %theirs, i64 2, i32 0)
  %u16 = load i16, ptr %t
  %u = zext i16 %u16 to i32
)" + storeY("%u");
}

TEST(FakeCudaSync, ABarrierSeparatedSharedExchangeIsCorrectAndNoRace) {
  for (const char *order : kOrders) {
    setenv("INKLING_FAKE_CUDA_ORDER", order, 1);
    SyncLaunch k(syncHostForm(exchange(/*barrier=*/true)));
    ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
    Status s = k.run(3);
    ASSERT_TRUE(s.isOk()) << order << ": " << s.toString();
    for (size_t i = 0; i < k.output.size(); ++i)
      EXPECT_EQ(k.output[i], k.input[i / 64 * 64 + 63 - i % 64])
          << order << " " << i;
  }
  unsetenv("INKLING_FAKE_CUDA_ORDER");
}

TEST(FakeCudaSync, RacecheckCatchesAMissingBarrier) {
  SyncLaunch k(syncHostForm(exchange(/*barrier=*/false)));
  ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
  Status s = k.run(1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("racecheck: cuLaunchKernel sync: thread ("),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(
                "of the block (workgroup memory, since the last barrier)"),
            std::string::npos)
      << s.message();
}

TEST(FakeCudaSync, MemcheckCatchesASharedAccessPastTheBuffer) {
  SyncLaunch k(syncHostForm(exchange(/*barrier=*/true, /*shift=*/1)));
  ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
  Status s = k.run(1);
  ASSERT_FALSE(s.isOk());
  // Thread 0 reads shared[64] of 64.
  EXPECT_NE(s.message().find("memcheck: cuLaunchKernel sync: thread (0, 0, "
                             "0) of block (0, 0, 0): 2-byte load at "),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("is outside the block's workgroup buffers ("),
            std::string::npos)
      << s.message();
}

/// Lanes 16 and up of each warp exit first; the others shuffle with
/// `mask`, xor `offset`.
std::string halfWarpShuffle(const std::string &mask, int offset) {
  return R"(
  %lane = and i32 %tid, 31
  %late = icmp uge i32 %lane, 16
  br i1 %late, label %exit, label %work
exit:
  ret void
work:
)" + butterfly({offset}, mask) +
         storeY("%s0");
}

TEST(FakeCudaSync, AShuffleWaitingForAnExitedLaneIsAnError) {
  SyncLaunch k(syncHostForm(halfWarpShuffle("-1", 1)));
  ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
  Status s = k.run(1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("shfl.sync with mask 0xffffffff waits for lane "),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("which has exited"), std::string::npos)
      << s.message();
}

TEST(FakeCudaSync, AShuffleFromALaneOutsideTheMaskIsAnError) {
  // The active half (mask 0xffff) reads lane ^ 16: exited, not in the mask.
  SyncLaunch k(syncHostForm(halfWarpShuffle("65535", 16)));
  ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
  Status s = k.run(1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("shfl.sync reads lane 16, "), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("which is not in its mask 0xffff"),
            std::string::npos)
      << s.message();
  // A correct half-warp shuffle (offset 1 stays in the mask) runs.
  SyncLaunch ok(syncHostForm(halfWarpShuffle("65535", 1)));
  ASSERT_TRUE(ok.attached.isOk());
  EXPECT_TRUE(ok.run(1).isOk());
  EXPECT_EQ(ok.output[0], 1 + 2);
  EXPECT_EQ(ok.output[15], 15 + 16);
}

TEST(FakeCudaSync, ABarrierAThreadNeverReachesIsAnError) {
  std::string body = R"(
  %late = icmp eq i32 %tid, 5
  br i1 %late, label %exit, label %work
exit:
  ret void
work:
  call void @__inkling_emu_barrier()
)" + storeY("%v");
  SyncLaunch k(syncHostForm(body));
  ASSERT_TRUE(k.attached.isOk()) << k.attached.toString();
  Status s = k.run(1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("thread (5, 0, 0) of block (0, 0, 0) exited "
                             "while other threads of its block wait at a "
                             "barrier"),
            std::string::npos)
      << s.message();
}

} // namespace
