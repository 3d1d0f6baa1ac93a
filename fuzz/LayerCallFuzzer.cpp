//===- LayerCallFuzzer.cpp - The C/Python layer call's argument checks ----===//
//
// libFuzzer target: one call of the small example layer
// (examples/small_layer.mlir, compiled once on the CPU) through the C API
// (`inkling_layer_call`, what Python's inkling.Layer calls), with
// descriptors and metadata decoded from the input: T, B, M and the cache's
// blocks; per argument its rank, sizes, strides and where its data lies in
// one arena (its own place, or on top of another argument's, misaligned,
// null); the metadata's values (valid ones or arbitrary).
//
// The arena is a mapping between two PROT_NONE pages, filled with a
// pattern. A call must end in INKLING_OK or a one-line error that names an
// argument (never a crash, a hang, a sanitizer report); and when it is
// accepted, (1) no two arguments share a byte where either is written and
// (2) no byte outside the written arguments' elements changed. Both are
// computed here element by element, independently of the validator
// (include/inkling/ExecutionEngine/LayerAbi.h) under test. A read beyond
// the arena faults on a guard page. A violation traps.
//
//===----------------------------------------------------------------------===//

#include "inkling-c/Layer.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#ifndef INKLING_FUZZ_MODEL
#error "INKLING_FUZZ_MODEL: the path of examples/small_layer.mlir"
#endif

namespace {

[[noreturn]] void violation(const char *what, const std::string &detail) {
  std::fprintf(stderr, "layer-call fuzzer: invariant violated: %s (%s)\n", what,
               detail.c_str());
  __builtin_trap();
}

/// Calls accepted and refused, printed at exit: a fuzzer that never gets a
/// call through tests only the refusals.
size_t accepted = 0, refused = 0;
void printCounts() {
  std::fprintf(stderr, "layer-call fuzzer: %zu calls accepted, %zu refused\n",
               accepted, refused);
}

struct Arg {
  std::string role, stream;
  int64_t elementBytes = 0;
  std::vector<int64_t> shape, strides; // -1 where dynamic
  bool written() const {
    return role == "cache" || role == "output" || role == "status";
  }
};

struct Layer {
  inkling_layer_t *handle = nullptr;
  std::vector<Arg> args;
  inkling_layer_layout_t layout{};
};

const Layer &layer() {
  static Layer l = [] {
    Layer made;
    inkling_layer_options_t options{};
    options.threads = 1;
    char error[512];
    if (inkling_layer_create_from_file(INKLING_FUZZ_MODEL, &options,
                                       &made.handle, error,
                                       sizeof error) != INKLING_OK)
      violation("the example layer does not compile", error);
    for (int64_t i = 0; i < inkling_layer_num_args(made.handle); ++i) {
      inkling_layer_arg_t info;
      inkling_layer_get_arg(made.handle, i, &info);
      Arg arg;
      arg.role = info.role;
      arg.stream = info.stream ? info.stream : "";
      arg.elementBytes = info.element_bytes;
      arg.shape.assign(info.shape, info.shape + info.rank);
      arg.strides.assign(info.strides, info.strides + info.rank);
      made.args.push_back(arg);
    }
    inkling_layer_get_layout(made.handle, &made.layout);
    std::atexit(printCounts);
    return made;
  }();
  return l;
}

constexpr size_t kArenaBytes = 1 << 16;

/// The arena between two guard pages, made once.
uint8_t *arena() {
  static uint8_t *base = [] {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *map = mmap(nullptr, kArenaBytes + 2 * page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
      violation("mmap", "the arena");
    auto *bytes = static_cast<uint8_t *>(map);
    mprotect(bytes, page, PROT_NONE);
    mprotect(bytes + page + kArenaBytes, page, PROT_NONE);
    return bytes + page;
  }();
  return base;
}

struct Desc {
  int64_t rank = 0;
  std::vector<int64_t> sizes, strides;
  int64_t offset = -1; // byte offset in the arena; -1: null data
};

/// Every element's first byte (arena offsets), or false if one lies
/// outside the arena.
bool elements(const Desc &d, int64_t elementBytes, std::vector<int64_t> &out) {
  out.clear();
  for (int64_t s : d.sizes)
    if (s == 0)
      return true;
  if (d.offset < 0)
    return true;
  std::vector<int64_t> index(d.rank, 0);
  while (true) {
    int64_t at = d.offset;
    for (int64_t k = 0; k < d.rank; ++k)
      at += index[k] * d.strides[k] * elementBytes;
    if (at < 0 || at + elementBytes > static_cast<int64_t>(kArenaBytes))
      return false;
    out.push_back(at);
    if (out.size() > kArenaBytes)
      return false;
    int64_t k = d.rank - 1;
    for (; k >= 0; --k) {
      if (++index[k] < d.sizes[k])
        break;
      index[k] = 0;
    }
    if (k < 0)
      return true;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Layer &l = layer();
  FuzzedDataProvider fdp(data, size);
  int64_t H = l.layout.heads_per_rank, N = l.layout.block_size,
          W = l.layout.kernel;
  int64_t T = fdp.ConsumeIntegralInRange<int64_t>(0, 12);
  int64_t B = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  int64_t M = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  int64_t blocks = fdp.ConsumeIntegralInRange<int64_t>(1, 8);

  // The descriptors: the step's shapes, then the input's changes.
  size_t n = l.args.size();
  std::vector<Desc> descs(n);
  int64_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const Arg &arg = l.args[i];
    Desc &d = descs[i];
    d.rank = static_cast<int64_t>(arg.shape.size());
    int64_t w = 0;
    if (!arg.stream.empty()) {
      int s = arg.stream == "k"      ? 0
              : arg.stream == "v"    ? 1
              : arg.stream == "attn" ? 2
                                     : 3;
      w = l.layout.stream_width[s];
    }
    if (arg.role == "cache")
      d.sizes = {blocks * l.layout.page_bytes};
    else if (arg.role == "query_start_loc")
      d.sizes = {B + 1};
    else if (arg.role == "num_computed")
      d.sizes = {B};
    else if (arg.role == "block_table")
      d.sizes = {B, M};
    else if (arg.role == "slot_mapping" || arg.role == "token_seq")
      d.sizes = {T};
    else if (arg.role == "weights")
      d.sizes = {H * w, W};
    else if (arg.role == "bias")
      d.sizes = {H * w};
    else if (d.rank == 3)
      d.sizes = {T, H, w};
    else
      d.sizes = {T, H * w};
    d.strides.assign(d.rank, 1);
    for (int64_t k = d.rank - 2; k >= 0; --k)
      d.strides[k] = d.strides[k + 1] * std::max<int64_t>(1, d.sizes[k + 1]);
    switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: // another size
      if (d.rank > 0)
        d.sizes[fdp.ConsumeIntegralInRange<int64_t>(0, d.rank - 1)] =
            fdp.ConsumeIntegralInRange<int64_t>(-2, 40);
      break;
    case 1: // another stride
      if (d.rank > 0)
        d.strides[fdp.ConsumeIntegralInRange<int64_t>(0, d.rank - 1)] =
            fdp.ConsumeIntegralInRange<int64_t>(-2, 80);
      break;
    case 2: // another rank
      d.rank = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
      d.sizes.resize(d.rank, 1);
      d.strides.resize(d.rank, 1);
      break;
    default:
      break;
    }
    std::vector<int64_t> at;
    int64_t extent = 0;
    if (elements(Desc{d.rank, d.sizes, d.strides, 0}, arg.elementBytes, at))
      for (int64_t e : at)
        extent = std::max(extent, e + arg.elementBytes);
    else
      extent = kArenaBytes + 1; // beyond the arena: null data below
    // Where the data lies: its own 64-byte aligned place, on another's,
    // misaligned, or null.
    int how = fdp.ConsumeIntegralInRange<int>(0, 9);
    if (how == 0 && i > 0 && descs[i - 1].offset >= 0) {
      size_t other = fdp.ConsumeIntegralInRange<size_t>(0, i - 1);
      d.offset = descs[other].offset >= 0
                     ? descs[other].offset +
                           16 * fdp.ConsumeIntegralInRange<int64_t>(0, 8)
                     : -1;
    } else if (how == 1) {
      d.offset = -1;
    } else {
      d.offset =
          next + (how == 2 ? 2 * fdp.ConsumeIntegralInRange<int>(1, 7) : 0);
      next = (next + extent + 63) / 64 * 64 + 64;
    }
    if (d.offset >= 0 && d.offset + extent > static_cast<int64_t>(kArenaBytes))
      d.offset = -1;
  }

  // The arena: a pattern, then the metadata's values at their places.
  uint8_t *base = arena();
  for (size_t b = 0; b < kArenaBytes; ++b)
    base[b] = static_cast<uint8_t>(b * 131 + 7) & 0xBF; // finite bf16
  bool validMetadata = fdp.ConsumeBool();
  for (size_t i = 0; i < n; ++i) {
    const Arg &arg = l.args[i];
    Desc &d = descs[i];
    if (d.offset < 0 || arg.role == "cache" || arg.role == "input" ||
        arg.role == "output" || arg.role == "weights" || arg.role == "bias")
      continue;
    std::vector<int64_t> at;
    if (!elements(d, arg.elementBytes, at))
      continue;
    for (size_t e = 0; e < at.size(); ++e) {
      int64_t value;
      if (!validMetadata) {
        value = fdp.ConsumeIntegralInRange<int64_t>(-3, 3 * blocks * N + 3);
      } else if (arg.role == "query_start_loc") {
        value = std::min<int64_t>(T, static_cast<int64_t>(e) * T /
                                         std::max<int64_t>(1, B));
      } else if (arg.role == "num_computed") {
        value = fdp.ConsumeIntegralInRange<int64_t>(0, M * N);
      } else if (arg.role == "block_table") {
        value = fdp.ConsumeIntegralInRange<int64_t>(0, blocks - 1);
      } else { // slots: distinct, in the cache or -1
        value =
            static_cast<int64_t>(e) < blocks * N ? static_cast<int64_t>(e) : -1;
      }
      if (arg.elementBytes == 8)
        std::memcpy(base + at[e], &value, 8);
      else {
        auto v32 = static_cast<int32_t>(value);
        std::memcpy(base + at[e], &v32, 4);
      }
    }
  }
  std::vector<uint8_t> before(base, base + kArenaBytes);

  std::vector<inkling_memref_t> memrefs(n);
  for (size_t i = 0; i < n; ++i) {
    Desc &d = descs[i];
    memrefs[i].data = d.offset >= 0 ? base + d.offset : nullptr;
    memrefs[i].rank = d.rank;
    memrefs[i].sizes = d.sizes.data();
    memrefs[i].strides = d.strides.data();
  }
  char error[1024];
  error[0] = '\0';
  inkling_status_t status =
      inkling_layer_call(l.handle, memrefs.data(), static_cast<int64_t>(n),
                         nullptr, error, sizeof error);
  if (status != INKLING_OK) {
    ++refused;
    std::string message = error;
    if (status != INKLING_INVALID_ARGUMENT && status != INKLING_OUT_OF_RANGE)
      violation("an unexpected status", message);
    if (message.rfind("argument ", 0) != 0 &&
        message.rfind("@small_layer", 0) != 0)
      violation("an error that names no argument", message);
    if (std::memcmp(before.data(), base, kArenaBytes) != 0)
      violation("a refused call changed memory", message);
    return 0;
  }
  // Accepted: the independent oracle.
  ++accepted;
  std::vector<std::vector<int64_t>> elems(n);
  std::vector<uint8_t> owners(kArenaBytes, 0), writtenBy(kArenaBytes, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!elements(descs[i], l.args[i].elementBytes, elems[i]))
      violation("an accepted argument lies outside its memory",
                "argument " + std::to_string(i));
    std::vector<uint8_t> mine(kArenaBytes, 0);
    for (int64_t e : elems[i])
      for (int64_t b = 0; b < l.args[i].elementBytes; ++b)
        mine[e + b] = 1;
    for (size_t b = 0; b < kArenaBytes; ++b) {
      if (!mine[b])
        continue;
      if (owners[b] && (writtenBy[b] || l.args[i].written()))
        violation("an accepted call with overlapping buffers",
                  "argument " + std::to_string(i));
      owners[b] = 1;
      writtenBy[b] |= l.args[i].written();
    }
  }
  for (size_t b = 0; b < kArenaBytes; ++b)
    if (!writtenBy[b] && base[b] != before[b])
      violation("a byte outside every written argument changed",
                "arena offset " + std::to_string(b));
  return 0;
}
