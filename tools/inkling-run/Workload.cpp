//===- Workload.cpp - inkling-run's synthetic requests and data -----------===//

#include "Workload.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>

using namespace inkling;
using namespace inkling::run;

namespace {

inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A bf16 from 16 random bits: random sign and mantissa, exponent
/// `minExp + [0, 8)`.
inline uint16_t randomBits(uint16_t r, int minExp) {
  return static_cast<uint16_t>((r & 0x8000) | ((minExp + ((r >> 7) & 7)) << 7) |
                               (r & 0x7f));
}

} // namespace

uint64_t run::hashWords(std::initializer_list<uint64_t> words) {
  uint64_t buffer[8];
  size_t n = 0;
  for (uint64_t w : words)
    buffer[n++] = w;
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(buffer), n * sizeof(uint64_t)));
}

void run::fillValues(uint64_t seed, uint16_t *out, int64_t count, int minExp) {
  for (int64_t i = 0; i < count; i += 4) {
    uint64_t r =
        splitmix(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull));
    for (int64_t lane = 0; lane < 4 && i + lane < count; ++lane)
      out[i + lane] =
          randomBits(static_cast<uint16_t>(r >> (16 * lane)), minExp);
  }
}

void Workload::makeSharedPrefixes() {
  for (int64_t i = 0; i < opt_.numSharedPrefixes; ++i) {
    int64_t length = uniform(std::min<int64_t>(N_, opt_.maxPrompt / 2),
                             std::max<int64_t>(N_, opt_.maxPrompt / 2));
    std::vector<int32_t> prefix;
    for (int64_t j = 0; j < length; ++j)
      prefix.push_back(randomToken());
    sharedPrefixes_.push_back(std::move(prefix));
  }
}

std::unique_ptr<Request> Workload::newRequest() {
  auto r = std::make_unique<Request>();
  r->number = nextNumber_++;
  int64_t length = uniform(opt_.minPrompt, opt_.maxPrompt);
  if (!sharedPrefixes_.empty() && chance(opt_.sharedPrefixRate)) {
    const auto &prefix =
        sharedPrefixes_[uniform(0, sharedPrefixes_.size() - 1)];
    r->tokens = prefix;
    length = std::max<int64_t>(length, prefix.size() + 1);
    if (chance(opt_.cachePointRate))
      r->cachePoint = prefix.size();
  }
  while (static_cast<int64_t>(r->tokens.size()) < length)
    r->tokens.push_back(randomToken());
  r->target = length + uniform(opt_.minOutput, opt_.maxOutput);
  for (size_t p = 0; p < r->tokens.size(); ++p)
    r->chain.push_back(extendChain(r->chain, p, r->tokens[p]));
  return r;
}
