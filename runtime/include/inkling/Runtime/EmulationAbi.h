//===- EmulationAbi.h - The host form of a GPU kernel -----------*- C++ -*-===//
//
// What the compiler's `inkling-gpu-emit-host-form` (lib/Target/GPU) and the
// fake CUDA driver's emulator (runtime/unittests) agree on: the names of the
// functions a kernel's host form calls or exports, and the codes they pass.
// The host form is the kernel's LLVM IR after the NVVM lowering, exactly the
// IR `gpu-module-to-binary` turns into PTX, with each NVVM special register
// read replaced by a call to `kSregFunction` and each global memory access
// preceded by a call to `kAccessFunction`; warp shuffles, block barriers
// and workgroup memory are calls of the functions below (docs/gpu.md,
// "Executing the kernels without a GPU"). No MLIR, LLVM or CUDA here: both
// sides include it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_EMULATIONABI_H
#define INKLING_RUNTIME_EMULATIONABI_H

#include <cstdint>

namespace inkling::emulation {

/// The host form's version; the emulator refuses another one.
inline constexpr int64_t kVersion = 1;

/// `int32_t __inkling_emu_sreg(int32_t register)`: the value of an NVVM
/// special register (`Sreg`) for the calling emulated thread.
inline constexpr char kSregFunction[] = "__inkling_emu_sreg";

/// `void *__inkling_emu_access(void *address, int64_t bytes, int64_t
/// arguments, int32_t kind)`: called before every global memory access of
/// `bytes` at `address`. `arguments` is a mask of the kernel arguments
/// (memref descriptors, in kernel order; bit i = argument i) the address may
/// derive from, as the compiler proved it; 0 when it could not (then only the
/// live allocations bound it). Returns the address to access: `address`
/// itself when the access is valid, else a scratch buffer (the emulator has
/// recorded the failure and the kernel runs on without touching memory it
/// does not own).
inline constexpr char kAccessFunction[] = "__inkling_emu_access";

/// `void __inkling_emu_entry_<kernel>(void **params)`: runs the kernel for
/// the calling emulated thread with cuLaunchKernel's parameter array
/// (`params[i]` points to parameter i).
inline constexpr char kEntryPrefix[] = "__inkling_emu_entry_";

/// `const int64_t __inkling_emu_args_<kernel>[]`: kVersion, the number of
/// kernel arguments n, then per argument its first parameter, rank and
/// element bytes (a memref descriptor: allocated ptr, aligned ptr, offset,
/// rank sizes, rank strides).
inline constexpr char kArgsPrefix[] = "__inkling_emu_args_";

/// `const char __inkling_emu_unsupported[]`: present when the kernel uses
/// operations the emulator cannot execute (their names, comma-separated);
/// loading such a host form fails with that list.
inline constexpr char kUnsupportedGlobal[] = "__inkling_emu_unsupported";

/// `int64_t __inkling_emu_shfl(int32_t kind, int32_t mask, int32_t value,
/// int32_t b, int32_t c)`: NVVM's `shfl.sync` (PTX `shfl.sync.<kind>.b32 d|p,
/// value, b, c, mask`) for the calling thread, `kind` a `Shuffle`, `value`
/// the bits of an i32 or f32. Returns the source lane's value in the low 32
/// bits and the predicate (the source lane was in range) in bit 32. Every
/// lane of `mask` must reach a shuffle with the same mask, kind and `c`
/// before any returns (the emulator suspends the thread until then); a mask
/// naming an exited lane, a lane at a barrier or a lane that does not
/// exist, or a source lane outside the mask, fails the launch.
inline constexpr char kShuffleFunction[] = "__inkling_emu_shfl";

/// `void __inkling_emu_barrier()`: `nvvm.barrier0` (`bar.sync 0`, every
/// thread of the block). Returns when every thread of the block has
/// reached a barrier; a thread that exits while others wait fails the
/// launch. Shared-memory accesses on either side of it do not race.
inline constexpr char kBarrierFunction[] = "__inkling_emu_barrier";

/// `void *__inkling_emu_workgroup(int32_t id, int64_t bytes, int64_t
/// align)`: the calling block's copy of workgroup (shared, address space 3)
/// global number `id` of the kernel, `bytes` long; replaces each
/// `llvm.mlir.addressof` of such a global. Its bytes are 0xff at the start
/// of each block (shared memory is not initialized).
inline constexpr char kWorkgroupFunction[] = "__inkling_emu_workgroup";

/// `void *__inkling_emu_shared_access(void *address, int64_t bytes, int32_t
/// kind)`: called before every access of workgroup memory (an address the
/// compiler proved derives from `kWorkgroupFunction`). memcheck: the bytes
/// lie in one of the block's workgroup buffers; racecheck: no byte is
/// written by one thread and read or written by another of the block
/// between two barriers. Returns the address to access, as
/// `kAccessFunction` does.
inline constexpr char kSharedAccessFunction[] = "__inkling_emu_shared_access";

/// The most kernel arguments an `arguments` mask can name.
inline constexpr int kMaxMaskedArguments = 63;

/// The special registers (`nvvm.read.ptx.sreg.<name>`).
enum class Sreg : int32_t {
  TidX = 0,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpSize,
};

/// `shfl.sync`'s modes (`kind` of kShuffleFunction; NVVM's ShflKind).
enum class Shuffle : int32_t { Bfly = 0, Up = 1, Down = 2, Idx = 3 };

/// What an access does (`kind`). Atomics are exempt from the race check:
/// threads may meet on them by design (checked mode's status count).
enum class Access : int32_t { Load = 0, Store = 1, Atomic = 2 };

} // namespace inkling::emulation

#endif // INKLING_RUNTIME_EMULATIONABI_H
