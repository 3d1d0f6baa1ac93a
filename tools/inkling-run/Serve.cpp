//===- Serve.cpp - A checked synthetic serving workload -------------------===//
//
// Drives the runtime's SequenceManager the way a serving engine does
// (arrivals, chunked prefill under a token budget, decode, speculative
// decoding with random acceptance, preemption and resume, prefix-cache hits,
// forks, finishes) and runs the compiled layer for every layer of every
// step. After every step it checks every output against a full-history
// reference (the conv of docs/Design.md section 4 over inputs regenerated from
// each sequence's token history, never read from the cache) and every cache row
// the next step will read.
//
// Synthetic data. The input x of (layer, stream, position p, head, channel)
// is a function of the sequence's token ids [0..p] only: a hash chain over
// the token ids (xxh3), mixed with the layer and stream, expanded by
// splitmix64 into bf16 values of magnitude in [2^-7, 2). Sequences with a
// common prefix therefore have the same x there, which is what makes a
// prefix-cache hit correct.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Run.h"

#include "inkling/Runtime/CachePlan.h"
#include "inkling/Runtime/Reference.h"
#include "inkling/Runtime/SequenceManager.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <unistd.h>
#include <unordered_set>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

//===----------------------------------------------------------------------===//
// bf16 and the generator
//===----------------------------------------------------------------------===//

inline float bf16ToFloat(uint16_t bits) { return reference::bf16ToFloat(bits); }

inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hashWords(std::initializer_list<uint64_t> words) {
  uint64_t buffer[8];
  size_t n = 0;
  for (uint64_t w : words)
    buffer[n++] = w;
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(buffer), n * sizeof(uint64_t)));
}

/// A bf16 from 16 random bits: random sign and mantissa, exponent
/// `minExp + [0, 8)`.
inline uint16_t randomBits(uint16_t r, int minExp) {
  return static_cast<uint16_t>((r & 0x8000) | ((minExp + ((r >> 7) & 7)) << 7) |
                               (r & 0x7f));
}

/// Fills `count` bf16 values from `seed`.
void fillValues(uint64_t seed, uint16_t *out, int64_t count, int minExp) {
  for (int64_t i = 0; i < count; i += 4) {
    uint64_t r =
        splitmix(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull));
    for (int64_t lane = 0; lane < 4 && i + lane < count; ++lane)
      out[i + lane] =
          randomBits(static_cast<uint16_t>(r >> (16 * lane)), minExp);
  }
}

constexpr int kInputExp = 120;  // [2^-7, 2)
constexpr int kWeightExp = 118; // [2^-9, 2^-1)

struct Generator {
  uint64_t seed;
  uint64_t chainRoot() const { return hashWords({seed, 0x636861696eull}); }
  uint64_t chainNext(uint64_t previous, int32_t token) const {
    return hashWords(
        {previous, static_cast<uint64_t>(static_cast<uint32_t>(token))});
  }
  /// The x row (H*w values) of (layer, stream) at a position with `chain`.
  void row(uint64_t chain, int64_t layer, Stream stream, uint16_t *out,
           int64_t count) const {
    uint64_t rowSeed = hashWords({chain, seed, static_cast<uint64_t>(layer),
                                  static_cast<uint64_t>(stream)});
    fillValues(rowSeed, out, count, kInputExp);
  }
  void params(uint64_t what, int64_t layer, int arg, uint16_t *out,
              int64_t count) const {
    fillValues(hashWords({seed, what, static_cast<uint64_t>(layer),
                          static_cast<uint64_t>(arg)}),
               out, count, kWeightExp);
  }
};

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

struct Aligned {
  explicit Aligned(size_t bytes)
      : size(bytes), data(static_cast<uint8_t *>(
                         std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64))) {
    if (!data) {
      std::fprintf(stderr, "inkling-run: cannot allocate %zu bytes\n", bytes);
      std::exit(1);
    }
  }
  ~Aligned() { std::free(data); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  size_t size;
  uint8_t *data;
};

/// A stream argument's geometry: element (t, e) at offset + t * tokenStride
/// + e, e = h*w + c.
struct StreamGeometry {
  int64_t offset = 0;
  int64_t tokenStride = 0;
};

StreamGeometry streamGeometry(const ArgInfo &arg, int64_t rowElements) {
  StreamGeometry g;
  g.offset = arg.offset == kDynamic ? 0 : arg.offset;
  g.tokenStride = arg.strides[0] == kDynamic ? rowElements : arg.strides[0];
  return g;
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

/// The expected outputs of one token of one conv: the runtime's reference
/// (docs/Design.md section 4). `weights` is [W][row] (transposed), `taps[j]`
/// the input row at position p - (W-1) + j (zeros before position 0).
void expectedRow(const uint16_t *const *taps, int64_t W, const float *weights,
                 const float *bias, bool silu, const uint16_t *residual,
                 int64_t row, float *acc, uint16_t *out) {
  reference::referenceConvRow(taps, W, weights, bias, silu, residual, row, acc,
                              out);
}

struct Request {
  int64_t number = 0;
  SequenceId id = 0;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> chain; ///< chain[p]: hash of tokens [0..p]
  int64_t target = 0;
  int64_t computed = 0;
  int64_t admitOrder = 0;
  int64_t cachePoint = 0; ///< The shared prompt's end, if named; else 0.
  bool preempted = false;
  /// --async: the sampled token the runtime has not been given yet.
  bool tokenPending = false;
  int32_t pendingToken = 0;
  // The pending step.
  bool scheduled = false;
  bool decode = false;
  int64_t numScheduled = 0;
  std::vector<int32_t> stepTokens;
  std::vector<uint64_t> stepChain;
};

struct Mismatch {
  bool found = false;
  std::string text;
};

struct Stats {
  int64_t steps = 0, tokens = 0, prefillTokens = 0, decodeTokens = 0;
  int64_t specProposed = 0, specAccepted = 0;
  int64_t arrivals = 0, finished = 0, preemptions = 0, oobPreemptions = 0,
          resumes = 0, prefixHits = 0, prefixHitTokens = 0, forks = 0,
          blockCopies = 0;
  /// What an unbounded every-block cache would hit on the same admissions,
  /// from the requests' token chains alone (not the runtime).
  int64_t prefixHitTokensIdeal = 0;
  int64_t peakBlocks = 0, baselinePeakBlocks = 0;
  /// Blocks held between steps (after commit; cached blocks not counted)
  /// and snapshot blocks during a step.
  int64_t peakIdleBlocks = 0, peakSnapshotBlocks = 0;
  /// The most blocks one sequence held between steps (checked runs).
  int64_t peakIdleSequenceBlocks = 0;
  int64_t outputsChecked = 0, cacheValuesChecked = 0;
  int64_t paddingTokens = 0;
  int64_t mismatches = 0;
  double schedule = 0, inputs = 0, kernels = 0, checking = 0;
};

std::string hex16(uint16_t bits) {
  char text[48];
  std::snprintf(text, sizeof(text), "0x%04x (%g)", bits, bf16ToFloat(bits));
  return text;
}

class Server {
public:
  Server(const LayerSignature &signature, Executor &executor,
         const ServeOptions &options)
      : sig_(signature), exec_(executor), opt_(options), gen_{options.seed},
        rng_(options.seed) {}

  int run();

private:
  int setUp();
  void arrive();
  void admit();
  bool scheduleBatch();
  void fillInputs(int64_t layer);
  bool invokeLayer(int64_t layer);
  bool checkOutputs(int64_t layer);
  bool commitBatch();
  /// The row of padding token t at this step (seeded; not a sequence's).
  uint64_t padChain(int64_t t) const {
    return hashWords({gen_.seed, 0x706164ull, static_cast<uint64_t>(step_),
                      static_cast<uint64_t>(t)});
  }
  /// Points the padding tokens' slots at live history rows and their
  /// token_seq entries out of range: a kernel that touched the cache or the
  /// metadata for them would show in the checks. undoPadding restores the
  /// slots (the step buffers' invariant: -1 past the real tokens).
  void poisonPadding();
  void undoPadding();
  /// False at the first mismatch (in mismatch_), or when the executor
  /// cannot bring a page back (printed; mismatch_ not found).
  bool checkCache();
  enum class Fault { None, Input, Output, Cache, Padding };
  bool injectFault(Fault fault);
  int report(int exitCode);
  void preempt(Request *r, bool outOfBlocks);
  /// --async: gives the runtime r's sampled token if it has not got it.
  bool deliverToken(Request *r) {
    if (!r->tokenPending)
      return true;
    if (Status s = manager_->appendTokens(r->id, &r->pendingToken, 1); !s) {
      internalError("appendTokens (the sampled token)", s);
      return false;
    }
    r->tokenPending = false;
    return true;
  }
  uint64_t extendChain(const std::vector<uint64_t> &chain, size_t p,
                       int32_t token) const {
    return gen_.chainNext(p == 0 ? gen_.chainRoot() : chain[p - 1], token);
  }
  std::unique_ptr<Request> newRequest();
  int internalError(const std::string &what, const Status &status) {
    return fail("internal error at step " + std::to_string(step_) + ": " +
                what + ": " + status.toString());
  }
  int64_t rowElements(Stream s) const {
    return sig_.layout.headsPerRank * sig_.layout.range(s).width;
  }
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  int32_t randomToken() {
    return static_cast<int32_t>(uniform(0, opt_.vocab - 1));
  }

  /// Prints a failure of the executor (a driver error, not a mismatch).
  bool executorOk(const char *what, const Status &status) {
    if (!status)
      fail("step " + std::to_string(step_) + ": " + what + " on " +
           exec_.description() + ": " + status.message());
    return status.isOk();
  }
  /// Hands the host buffers to the executor.
  int addBuffers();

  const LayerSignature &sig_;
  Executor &exec_;
  ServeOptions opt_;
  Generator gen_;
  std::mt19937_64 rng_;
  Stats stats_;
  Mismatch mismatch_;
  std::string failure_; // a kernel status report
  int64_t step_ = 0;
  int64_t W_ = 0, N_ = 0;
  int64_t numBlocks_ = 0, numCols_ = 0;

  std::unique_ptr<SequenceManager> manager_;
  std::unique_ptr<StepBuffers> stepBuffers_;
  std::vector<int32_t> qsl_, nc_, bt_, copies_;
  std::vector<int64_t> slots_;
  std::vector<int32_t> tokenSeq_;
  std::vector<int64_t> status_;
  /// The runtime's cache plan: one allocation per plan tensor (per layer,
  /// or with cross-layer pages one for all), layer l's view at its byte
  /// offset with the plan's block stride.
  CachePlan plan_;
  std::vector<std::unique_ptr<Aligned>> caches_;
  int64_t layerPage_ = 0; ///< Bytes of a layer's page inside a block.
  int64_t blockStrideBytes_ = 0;
  bool crossLayer() const {
    return plan_.layoutKind == CacheLayoutKind::CrossLayer;
  }
  uint8_t *layerBase(int64_t layer) const {
    const LayerView &view = plan_.layers[layer];
    return caches_[view.tensor]->data + view.byteOffset;
  }
  /// Layer l's buffer runs to the end of its tensor.
  int64_t layerBytes(int64_t layer) const {
    const LayerView &view = plan_.layers[layer];
    return plan_.tensors[view.tensor].bytes - view.byteOffset;
  }
  /// Per block: the step after which its pages were last brought to the
  /// host for the checker.
  std::vector<int64_t> hostPageStep_;
  // Per argument: host storage (inputs, outputs; weights and bias per
  // layer).
  std::vector<std::unique_ptr<Aligned>> argData_;
  std::vector<std::vector<std::unique_ptr<Aligned>>> paramData_; // [layer][arg]
  std::vector<std::vector<std::vector<float>>> paramFloat_;      // [layer][arg]
  std::vector<StreamGeometry> geometry_;
  std::vector<MemRefArg> call_;
  StepInfo info_;

  std::vector<std::unique_ptr<Request>> live_; // running or preempted
  std::vector<Request *> running_;
  std::deque<Request *> preempted_;
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<Request *> batch_;
  std::vector<std::vector<int32_t>> sharedPrefixes_;
  /// The ideal cache: the chain hash of every whole block any request has
  /// computed (chain[(j+1)N - 1] for block j).
  std::unordered_set<uint64_t> idealBlocks_;
  int64_t idealHit(const Request &r) const {
    for (int64_t p = (int64_t(r.tokens.size()) - 1) / N_ * N_; p > 0; p -= N_)
      if (idealBlocks_.count(r.chain[p - 1]))
        return p;
    return 0;
  }
  int64_t nextNumber_ = 0, nextAdmit_ = 0;
  std::vector<uint16_t> scratch_, zeros_, expected_;
  std::vector<float> acc_;
};

int Server::setUp() {
  const Layout &layout = sig_.layout;
  W_ = layout.config.kernel;
  N_ = layout.blockSize;

  // Serving needs dynamic token and batch dimensions.
  auto dynamicFirst = [&](int index, const char *what) -> bool {
    const ArgInfo &arg = sig_.args[index];
    return arg.shape.empty() || arg.shape[0] == kDynamic ||
           (fail(opt_.modelPath + ": argument " + std::to_string(index) +
                 " of @" + sig_.function + " (" + arg.type + ", the " + what +
                 ") has a static first dimension; inkling-run needs it "
                 "dynamic"),
            false);
  };
  for (size_t i = 0; i < sig_.args.size(); ++i) {
    const ArgInfo &arg = sig_.args[i];
    ArgRole role = arg.role;
    if (role == ArgRole::Weights || role == ArgRole::Bias ||
        role == ArgRole::Status)
      continue;
    if (!dynamicFirst(static_cast<int>(i), argRoleName(role)))
      return 1;
    if (role == ArgRole::BlockTable && arg.shape[1] != kDynamic)
      return fail(opt_.modelPath + ": argument " + std::to_string(i) + " of @" +
                  sig_.function + " (" + arg.type +
                  ", the block_table) has a static width; inkling-run needs "
                  "it dynamic");
  }

  // Cross-layer pages: the bind's block stride holds every layer's page.
  if (crossLayer() && sig_.crossLayers != opt_.layers)
    return fail(opt_.modelPath + ": the sconv.bind of @" + sig_.function +
                " holds the pages of " + std::to_string(sig_.crossLayers) +
                " layers in a block, but " + std::to_string(opt_.layers) +
                " layers are served");
  // The memory budget: the runtime's cache plan of the layers.
  StatusOr<CachePlan> plan = planCache(sig_, opt_.layers, opt_.budgetMB);
  if (!plan) {
    char budget[64];
    std::snprintf(budget, sizeof(budget), "--budget-mb=%g: ", opt_.budgetMB);
    return fail(budget + plan.status().message());
  }
  plan_ = std::move(*plan);
  numBlocks_ = plan_.numBlocks;
  layerPage_ = plan_.pageBytes;
  blockStrideBytes_ = plan_.layers[0].blockStrideBytes;
  // The plan binds the IR: its views must be the bind's memref.
  for (const LayerView &view : plan_.layers)
    if (view.blockStrideBytes != sig_.pageBytes ||
        view.strides[0] != sig_.blockStride ||
        view.shape[2] != layout.blockSize)
      return fail(opt_.modelPath + ": the cache plan's view of " + view.name +
                  " (block stride " + std::to_string(view.blockStrideBytes) +
                  " bytes, block size " + std::to_string(view.shape[2]) +
                  ") is not the sconv.bind of @" + sig_.function +
                  " (page_bytes " + std::to_string(sig_.pageBytes) +
                  ", block size " + std::to_string(layout.blockSize) + ")");
  // A sequence holds at most span(W-1) + span(W-1+L) blocks during a step
  // (SequenceManager.h), span(m) = ceil((m-1)/N) + 1.
  int64_t perSequence =
      SequenceManager::maxBlocksPerSequence(layout, opt_.lookahead);
  if (numBlocks_ < perSequence + 1) {
    char text[512];
    std::snprintf(
        text, sizeof(text),
        "--budget-mb=%g: too small for one sequence: %lld blocks of %lld bytes "
        "x %lld layers fit, a sequence needs %lld (the blocks of W-1 = %lld "
        "and "
        "W-1 + lookahead %lld positions at block size %lld) plus the null "
        "block, at least %.3g MiB",
        opt_.budgetMB, static_cast<long long>(numBlocks_),
        static_cast<long long>(plan_.pageBytes),
        static_cast<long long>(plan_.layers.size()),
        static_cast<long long>(perSequence), static_cast<long long>(W_ - 1),
        static_cast<long long>(opt_.lookahead), static_cast<long long>(N_),
        double((perSequence + 1) * plan_.bytesPerBlock) / (1 << 20));
    return fail(text);
  }
  SequenceManagerConfig config;
  config.layout = layout;
  config.numBlocks = numBlocks_;
  config.lookahead = opt_.lookahead;
  config.enablePrefixCaching = opt_.prefixCaching;
  config.prefixPolicy = *parsePrefixPolicy(opt_.prefixPolicy);
  config.snapshotEvery = opt_.snapshotEvery;
  auto manager = SequenceManager::create(config);
  if (!manager)
    return fail(opt_.modelPath + ": the runtime rejects the layout of @" +
                sig_.function + ": " + manager.status().toString());
  manager_ = std::move(*manager);

  // Step buffers sized for the workload's longest sequence.
  int64_t maxLength = opt_.maxPrompt + opt_.maxOutput + opt_.lookahead + 2;
  numCols_ = (maxLength + N_ - 1) / N_ + 1;
  int64_t maxRows = opt_.maxBatch, maxTokens = opt_.tokenBudget;
  if (opt_.padTokens > 0)
    maxTokens =
        (maxTokens + opt_.padTokens - 1) / opt_.padTokens * opt_.padTokens;
  qsl_.assign(maxRows + 1, 0);
  nc_.assign(maxRows, 0);
  bt_.assign(maxRows * numCols_, 0);
  slots_.assign(maxTokens, -1);
  tokenSeq_.assign(maxTokens, 0);
  copies_.assign(2 * maxRows, 0);
  status_.assign(8, 0);
  StepBufferSpec spec;
  spec.queryStartLoc = qsl_.data();
  spec.numComputed = nc_.data();
  spec.blockTable = bt_.data();
  spec.slotMapping = slots_.data();
  spec.blockCopies = copies_.data();
  spec.maxRows = maxRows;
  spec.numCols = numCols_;
  spec.maxTokens = maxTokens;
  spec.maxCopies = maxRows;
  spec.tokenSeq = tokenSeq_.data();
  auto buffers = manager_->bindStepBuffers(spec);
  if (!buffers)
    return fail("the runtime rejects the step buffers: " +
                buffers.status().toString());
  stepBuffers_ = std::make_unique<StepBuffers>(std::move(*buffers));

  // One allocation per plan tensor, poisoned (bf16 NaN) so that a read of
  // a row that was never written shows.
  hostPageStep_.assign(numBlocks_, -1);
  for (const PlanTensor &tensor : plan_.tensors) {
    caches_.push_back(std::make_unique<Aligned>(tensor.bytes));
    std::memset(caches_.back()->data, 0xff, tensor.bytes);
  }

  // Stream inputs and outputs (shared by the layers), weights and biases
  // (per layer, seeded).
  size_t numArgs = sig_.args.size();
  argData_.resize(numArgs);
  geometry_.resize(numArgs);
  paramData_.resize(opt_.layers);
  paramFloat_.resize(opt_.layers);
  for (int64_t l = 0; l < opt_.layers; ++l) {
    paramData_[l].resize(numArgs);
    paramFloat_[l].resize(numArgs);
  }
  for (size_t i = 0; i < numArgs; ++i) {
    const ArgInfo &arg = sig_.args[i];
    if (arg.role == ArgRole::Input || arg.role == ArgRole::Output) {
      int64_t row = rowElements(*arg.stream);
      geometry_[i] = streamGeometry(arg, row);
      // A static token stride or offset of the IR sizes the buffer: check
      // the product before it overflows (1 TiB at most).
      int64_t elements = 0;
      if (geometry_[i].offset < 0 || geometry_[i].tokenStride < row ||
          __builtin_mul_overflow(maxTokens, geometry_[i].tokenStride,
                                 &elements) ||
          __builtin_add_overflow(elements, geometry_[i].offset, &elements) ||
          elements > (int64_t(1) << 39))
        return fail(opt_.modelPath + ": argument " + std::to_string(i) + " (" +
                    arg.type + "): token stride " +
                    std::to_string(geometry_[i].tokenStride) + " and offset " +
                    std::to_string(geometry_[i].offset) + " for " +
                    std::to_string(maxTokens) +
                    " tokens (--token-budget): not a buffer inkling-run can "
                    "allocate");
      argData_[i] = std::make_unique<Aligned>(elements * 2);
      std::memset(argData_[i]->data, 0, elements * 2);
    } else if (arg.role == ArgRole::Weights || arg.role == ArgRole::Bias) {
      int64_t count =
          rowElements(*arg.stream) * (arg.role == ArgRole::Weights ? W_ : 1);
      for (int64_t l = 0; l < opt_.layers; ++l) {
        // Weights are read through their type's strides; the bindings here
        // are dense (what the verifier allows: identity layouts).
        auto data = std::make_unique<Aligned>(count * 2);
        auto *bits = reinterpret_cast<uint16_t *>(data->data);
        gen_.params(arg.role == ArgRole::Weights ? 0x77 : 0x62, l,
                    static_cast<int>(i), bits, count);
        // For the checker, as floats; weights transposed to [W][H*w].
        std::vector<float> values(count);
        int64_t rows = rowElements(*arg.stream);
        for (int64_t e = 0; e < count; ++e)
          values[arg.role == ArgRole::Weights ? (e % W_) * rows + e / W_ : e] =
              bf16ToFloat(bits[e]);
        paramData_[l][i] = std::move(data);
        paramFloat_[l][i] = std::move(values);
      }
    }
  }
  call_.resize(numArgs);
  if (int rc = addBuffers())
    return rc;

  // Prompts that requests share (system prompts), at most half the longest
  // prompt, so that a shared prefix leaves a tail to compute.
  for (int64_t i = 0; i < opt_.numSharedPrefixes; ++i) {
    int64_t length = uniform(std::min<int64_t>(N_, opt_.maxPrompt / 2),
                             std::max<int64_t>(N_, opt_.maxPrompt / 2));
    std::vector<int32_t> prefix;
    for (int64_t j = 0; j < length; ++j)
      prefix.push_back(randomToken());
    sharedPrefixes_.push_back(std::move(prefix));
  }
  return 0;
}

int Server::addBuffers() {
  auto add = [&](void *data, size_t bytes) {
    return executorOk("allocating device memory", exec_.addBuffer(data, bytes));
  };
  bool ok = add(qsl_.data(), qsl_.size() * sizeof(int32_t)) &&
            add(nc_.data(), nc_.size() * sizeof(int32_t)) &&
            add(bt_.data(), bt_.size() * sizeof(int32_t)) &&
            add(slots_.data(), slots_.size() * sizeof(int64_t)) &&
            add(tokenSeq_.data(), tokenSeq_.size() * sizeof(int32_t)) &&
            add(status_.data(), status_.size() * sizeof(int64_t));
  for (size_t l = 0; ok && l < caches_.size(); ++l)
    ok = add(caches_[l]->data, plan_.tensors[l].bytes);
  for (size_t i = 0; ok && i < argData_.size(); ++i)
    if (argData_[i])
      ok = add(argData_[i]->data, argData_[i]->size);
  for (size_t l = 0; ok && l < paramData_.size(); ++l)
    for (size_t i = 0; ok && i < paramData_[l].size(); ++i)
      if (paramData_[l][i])
        ok = add(paramData_[l][i]->data, paramData_[l][i]->size);
  return ok ? 0 : 1;
}

std::unique_ptr<Request> Server::newRequest() {
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

void Server::arrive() {
  // Bernoulli arrivals per step (at most one per draw), several draws for
  // rates above 1.
  double rate = opt_.arrivalRate;
  while (rate > 0) {
    double p = std::min(rate, 1.0);
    rate -= p;
    if (chance(p) && waiting_.size() < size_t(4 * opt_.maxBatch)) {
      waiting_.push_back(newRequest());
      ++stats_.arrivals;
    }
  }
  // Keep the server busy at the start.
  if (running_.empty() && waiting_.empty() && preempted_.empty()) {
    waiting_.push_back(newRequest());
    ++stats_.arrivals;
  }
}

void Server::preempt(Request *r, bool outOfBlocks) {
  // A preempted sequence resumes from the runtime's token hashes.
  if (!deliverToken(r))
    std::exit(1);
  if (Status s = manager_->preempt(r->id); !s) {
    internalError("preempt", s);
    std::exit(1);
  }
  r->preempted = true;
  r->computed = 0;
  r->scheduled = false;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  auto inBatch = std::find(batch_.begin(), batch_.end(), r);
  if (inBatch != batch_.end())
    batch_.erase(inBatch);
  preempted_.push_back(r);
  ++stats_.preemptions;
  if (outOfBlocks)
    ++stats_.oobPreemptions;
}

void Server::admit() {
  while (static_cast<int64_t>(running_.size()) < opt_.maxBatch &&
         (!preempted_.empty() || !waiting_.empty())) {
    // Leave room for a step of the running sequences.
    if (manager_->pool().numFreeBlocks() <
        manager_->maxBlocksPerSequence() * (1 + int64_t(running_.size()) / 4))
      break;
    if (!preempted_.empty()) {
      Request *r = preempted_.front();
      auto hit = manager_->longestCachedPrefix(r->id, r->tokens.size() - 1);
      if (!hit) {
        internalError("longestCachedPrefix", hit.status());
        std::exit(1);
      }
      stats_.prefixHitTokensIdeal += idealHit(*r);
      if (Status s = manager_->resume(r->id, *hit); !s) {
        internalError("resume", s);
        std::exit(1);
      }
      preempted_.pop_front();
      r->preempted = false;
      r->computed = *hit;
      r->admitOrder = nextAdmit_++;
      running_.push_back(r);
      ++stats_.resumes;
      if (*hit > 0) {
        ++stats_.prefixHits;
        stats_.prefixHitTokens += *hit;
      }
      continue;
    }
    std::unique_ptr<Request> owned = std::move(waiting_.front());
    waiting_.pop_front();
    Request *r = owned.get();
    auto hit = manager_->longestCachedPrefix(r->tokens.data(), r->tokens.size(),
                                             r->tokens.size() - 1);
    if (!hit) {
      internalError("longestCachedPrefix", hit.status());
      std::exit(1);
    }
    stats_.prefixHitTokensIdeal += idealHit(*r);
    auto id = manager_->addSequence(r->tokens.data(), r->tokens.size(), *hit,
                                    &r->cachePoint, r->cachePoint > 0 ? 1 : 0);
    if (!id) {
      internalError("addSequence", id.status());
      std::exit(1);
    }
    r->id = *id;
    r->computed = *hit;
    r->admitOrder = nextAdmit_++;
    if (*hit > 0) {
      ++stats_.prefixHits;
      stats_.prefixHitTokens += *hit;
    }
    running_.push_back(r);
    live_.push_back(std::move(owned));
  }
}

bool Server::scheduleBatch() {
  batch_.clear();
  int64_t budget = opt_.tokenBudget;
  std::vector<Request *> order = running_;
  std::sort(order.begin(), order.end(), [](Request *a, Request *b) {
    return a->admitOrder < b->admitOrder;
  });
  for (Request *r : order) {
    if (budget == 0 || static_cast<int64_t>(batch_.size()) >= opt_.maxBatch)
      break;
    if (r->preempted) // a victim of an earlier out-of-blocks retry
      continue;
    int64_t known = r->tokens.size(), c = r->computed, n;
    bool decode = c >= known - 1;
    if (!decode) {
      n = std::min({known - c, opt_.maxChunk, budget});
    } else {
      int64_t drafts = opt_.lookahead > 0 && chance(opt_.specRate)
                           ? uniform(1, opt_.lookahead)
                           : 0;
      n = std::min(1 + drafts, budget);
    }
    // --async: scheduled before the runtime knows the step's first token.
    auto schedule = [&] {
      return opt_.async ? manager_->scheduleAhead(r->id, n)
                        : manager_->schedule(r->id, n);
    };
    Status s = schedule();
    while (!s && s.code() == StatusCode::OutOfBlocks) {
      // Out of blocks: preempt the newest running sequence and retry.
      Request *victim = *std::max_element(
          running_.begin(), running_.end(),
          [](Request *a, Request *b) { return a->admitOrder < b->admitOrder; });
      preempt(victim, /*outOfBlocks=*/true);
      if (victim == r)
        break;
      s = schedule();
    }
    if (r->preempted)
      continue;
    if (!s) {
      internalError("schedule", s);
      return false;
    }
    r->scheduled = true;
    r->decode = decode;
    r->numScheduled = n;
    r->stepTokens.clear();
    r->stepChain.clear();
    for (int64_t i = 0; i < n; ++i) {
      int64_t p = c + i;
      int32_t token = p < known ? r->tokens[p] : randomToken(); // drafts
      r->stepTokens.push_back(token);
      uint64_t previous =
          p == 0 ? gen_.chainRoot()
                 : (i == 0 ? r->chain[p - 1] : r->stepChain[i - 1]);
      r->stepChain.push_back(gen_.chainNext(previous, token));
    }
    batch_.push_back(r);
    budget -= n;
  }
  return true;
}

void Server::fillInputs(int64_t layer) {
  for (int s = 0; s < kNumStreams; ++s) {
    int arg = sig_.input[s];
    if (arg < 0)
      continue;
    Stream stream = static_cast<Stream>(s);
    int64_t row = rowElements(stream);
    auto *x = reinterpret_cast<uint16_t *>(argData_[arg]->data);
    const StreamGeometry &g = geometry_[arg];
    for (size_t b = 0; b < batch_.size(); ++b) {
      Request *r = batch_[b];
      for (int64_t i = 0; i < r->numScheduled; ++i)
        gen_.row(r->stepChain[i], layer, stream,
                 x + g.offset + (qsl_[b] + i) * g.tokenStride, row);
    }
    for (int64_t t = info_.numTokens; t < info_.numPaddedTokens; ++t)
      gen_.row(padChain(t), layer, stream, x + g.offset + t * g.tokenStride,
               row);
  }
}

bool Server::invokeLayer(int64_t layer) {
  // Kernels see the padded token dimension.
  int64_t B = info_.numSequences, T = info_.numPaddedTokens;
  const Layout &layout = sig_.layout;
  for (size_t i = 0; i < sig_.args.size(); ++i) {
    const ArgInfo &arg = sig_.args[i];
    MemRefArg &m = call_[i];
    m.offset = 0;
    switch (arg.role) {
    case ArgRole::Cache:
      m.data = layerBase(layer);
      m.sizes = {layerBytes(layer)};
      m.strides = {1};
      break;
    case ArgRole::QueryStartLoc:
      m.data = qsl_.data();
      m.sizes = {B + 1};
      m.strides = {1};
      break;
    case ArgRole::NumComputed:
      m.data = nc_.data();
      m.sizes = {B};
      m.strides = {1};
      break;
    case ArgRole::BlockTable:
      m.data = bt_.data();
      m.sizes = {B, numCols_};
      m.strides = {numCols_, 1};
      break;
    case ArgRole::SlotMapping:
      m.data = slots_.data();
      m.sizes = {T};
      m.strides = {1};
      break;
    case ArgRole::TokenSeq:
      m.data = tokenSeq_.data();
      m.sizes = {T};
      m.strides = {1};
      break;
    case ArgRole::Status:
      std::fill(status_.begin(), status_.end(), 0);
      m.data = status_.data();
      m.sizes = {static_cast<int64_t>(status_.size())};
      m.strides = {1};
      break;
    case ArgRole::Input:
    case ArgRole::Output: {
      const StreamGeometry &g = geometry_[i];
      int64_t w = layout.range(*arg.stream).width;
      m.data = argData_[i]->data;
      m.offset = g.offset;
      if (arg.shape.size() == 3) {
        m.sizes = {T, layout.headsPerRank, w};
        m.strides = {g.tokenStride, w, 1};
      } else {
        m.sizes = {T, layout.headsPerRank * w};
        m.strides = {g.tokenStride, 1};
      }
      break;
    }
    case ArgRole::Weights:
    case ArgRole::Bias: {
      m.data = paramData_[layer][i]->data;
      int64_t rows = rowElements(*arg.stream);
      if (arg.role == ArgRole::Weights) {
        m.sizes = {rows, W_};
        m.strides = {W_, 1};
      } else {
        m.sizes = {rows};
        m.strides = {1};
      }
      break;
    }
    }
  }
  if (!executorOk("the layer", exec_.invoke(call_)))
    return false;
  if (sig_.status >= 0 && status_[0] != 0 && failure_.empty()) {
    failure_ = "step " + std::to_string(step_) + ", layer " +
               std::to_string(layer) + ": the checked kernel " +
               exec::describeCheckedStatus(status_.data());
  }
  return true;
}

bool Server::checkOutputs(int64_t layer) {
  const Layout &layout = sig_.layout;
  int64_t hist = W_ - 1;
  for (const ConvInfo &conv : sig_.convs) {
    Stream stream = conv.stream;
    int64_t row = rowElements(stream), w = layout.range(stream).width;
    const auto *y =
        reinterpret_cast<const uint16_t *>(argData_[conv.out]->data);
    const StreamGeometry &gy = geometry_[conv.out];
    const float *weights = paramFloat_[layer][conv.weights].data();
    const float *bias =
        conv.bias >= 0 ? paramFloat_[layer][conv.bias].data() : nullptr;
    zeros_.assign(row, 0);
    acc_.resize(row);
    expected_.resize(row);
    for (size_t b = 0; b < batch_.size(); ++b) {
      Request *r = batch_[b];
      int64_t c = r->computed, n = r->numScheduled;
      // Rows [c - (W-1), c + n): the history and this step's inputs, all
      // regenerated from the token chain, never read from the buffer the
      // kernel ran on (a kernel that corrupted x must not be checked against
      // its own corruption).
      scratch_.resize(std::max<size_t>(scratch_.size(), (hist + n) * row));
      for (int64_t j = 0; j < hist + n; ++j) {
        int64_t q = c - hist + j;
        if (q >= 0)
          gen_.row(q < c ? r->chain[q] : r->stepChain[q - c], layer, stream,
                   scratch_.data() + j * row, row);
      }
      auto rowAt = [&](int64_t q) {
        return scratch_.data() + (q - (c - hist)) * row;
      };
      for (int64_t i = 0; i < n; ++i) {
        int64_t t = qsl_[b] + i, p = c + i;
        const uint16_t *yt = y + gy.offset + t * gy.tokenStride;
        const uint16_t *taps[16];
        for (int64_t j = 0; j < W_; ++j) {
          int64_t q = p - hist + j;
          taps[j] = q < 0 ? zeros_.data() : rowAt(q);
        }
        expectedRow(taps, W_, weights, bias, conv.silu,
                    conv.residual ? rowAt(p) : nullptr, row, acc_.data(),
                    expected_.data());
        if (std::memcmp(expected_.data(), yt, row * 2) != 0) {
          for (int64_t e = 0; e < row; ++e) {
            uint16_t expected = expected_[e], found = yt[e];
            bool same = expected == found;
            if (!same && conv.silu) // exp differs between libms: 1 bf16 ulp
              same =
                  ((expected ^ found) & 0x8000) == 0 &&
                  std::abs(int(expected & 0x7fff) - int(found & 0x7fff)) <= 1;
            if (same)
              continue;
            mismatch_.found = true;
            mismatch_.text =
                "mismatch in step " + std::to_string(step_) + ", layer " +
                std::to_string(layer) + ": output of stream " +
                streamName(stream) + ", sequence " + std::to_string(r->number) +
                " (runtime id " + std::to_string(r->id) + "), position " +
                std::to_string(p) + ", head " + std::to_string(e / w) +
                ", channel " + std::to_string(e % w) + ": expected " +
                hex16(expected) + ", found " + hex16(found);
            return false;
          }
        }
        stats_.outputsChecked += row;
      }
    }
    // Padding tokens: y = x, regenerated (not read from the input buffer).
    for (int64_t t = info_.numTokens; t < info_.numPaddedTokens; ++t) {
      const uint16_t *yt = y + gy.offset + t * gy.tokenStride;
      gen_.row(padChain(t), layer, stream, expected_.data(), row);
      for (int64_t e = 0; e < row; ++e) {
        if (expected_[e] == yt[e])
          continue;
        mismatch_.found = true;
        mismatch_.text = "mismatch in step " + std::to_string(step_) +
                         ", layer " + std::to_string(layer) +
                         ": output of stream " + streamName(stream) +
                         ", padding token " + std::to_string(t) + ", head " +
                         std::to_string(e / w) + ", channel " +
                         std::to_string(e % w) + ": expected its input " +
                         hex16(expected_[e]) + ", found " + hex16(yt[e]);
        return false;
      }
      stats_.outputsChecked += row;
    }
  }
  return true;
}

void Server::poisonPadding() {
  // A history row of the first sequence that has one (position c - 1).
  int64_t slot = -1;
  for (size_t b = 0; b < batch_.size() && slot < 0; ++b) {
    int64_t c = batch_[b]->computed;
    if (c > 0)
      slot = int64_t(bt_[b * numCols_ + (c - 1) / N_]) * N_ + (c - 1) % N_;
  }
  for (int64_t t = info_.numTokens; t < info_.numPaddedTokens; ++t) {
    slots_[t] = slot;
    tokenSeq_[t] = static_cast<int32_t>(info_.numRows + 7);
  }
}

void Server::undoPadding() {
  for (int64_t t = info_.numTokens; t < info_.numPaddedTokens; ++t)
    slots_[t] = -1;
}

bool Server::commitBatch() {
  for (Request *r : batch_) {
    int64_t known = r->tokens.size(), c = r->computed, n = r->numScheduled;
    int64_t k = r->decode ? uniform(1, n) : n;
    int64_t next = c + k;
    std::vector<int32_t> fresh;
    for (int64_t p = known; p < next; ++p)
      fresh.push_back(r->stepTokens[p - c]); // accepted drafts
    if (next >= known)
      fresh.push_back(randomToken()); // the sampled token
    // --async: the sampled token reaches the runtime only after the next
    // step was scheduled (deliverToken, before the build).
    bool withhold = opt_.async && next >= known;
    if (Status s = manager_->commit(r->id, k, fresh.data(),
                                    fresh.size() - (withhold ? 1 : 0));
        !s) {
      internalError("commit", s);
      return false;
    }
    if (withhold) {
      r->tokenPending = true;
      r->pendingToken = fresh.back();
    }
    for (int32_t token : fresh) {
      r->chain.push_back(extendChain(r->chain, r->tokens.size(), token));
      r->tokens.push_back(token);
    }
    for (int64_t j = c / N_; j < next / N_; ++j)
      idealBlocks_.insert(r->chain[(j + 1) * N_ - 1]);
    r->computed = next;
    r->scheduled = false;
    stats_.tokens += n;
    if (r->decode) {
      stats_.decodeTokens += n;
      stats_.specProposed += n - 1;
      stats_.specAccepted += k - 1;
    } else {
      stats_.prefillTokens += n;
    }
  }
  // Finishes: a sequence that reached its length.
  for (size_t i = 0; i < running_.size();) {
    Request *r = running_[i];
    if (static_cast<int64_t>(r->tokens.size()) >= r->target &&
        r->computed >= static_cast<int64_t>(r->tokens.size()) - 1) {
      if (Status s = manager_->finish(r->id); !s) {
        internalError("finish", s);
        return false;
      }
      running_.erase(running_.begin() + i);
      ++stats_.finished;
      live_.erase(std::find_if(live_.begin(), live_.end(),
                               [&](const auto &p) { return p.get() == r; }));
      continue;
    }
    ++i;
  }
  return true;
}

bool Server::checkCache() {
  const Layout &layout = sig_.layout;
  int64_t hist = W_ - 1;
  int64_t D = layout.headSize, H = layout.headsPerRank;
  int64_t maxRow = 0;
  for (Stream s : kAllStreams)
    maxRow = std::max(maxRow, rowElements(s));
  scratch_.resize(std::max<size_t>(scratch_.size(), maxRow));
  for (Request *r : running_) {
    auto info = manager_->sequenceInfo(r->id);
    if (!info) {
      internalError("sequenceInfo", info.status());
      std::exit(1);
    }
    if (info->numComputed != r->computed) {
      mismatch_.found = true;
      mismatch_.text = "after step " + std::to_string(step_) + ": sequence " +
                       std::to_string(r->number) + ": the runtime says " +
                       std::to_string(info->numComputed) +
                       " tokens are computed, the workload " +
                       std::to_string(r->computed);
      return false;
    }
    stats_.peakIdleSequenceBlocks =
        std::max<int64_t>(stats_.peakIdleSequenceBlocks, info->blocks.size());
    int64_t c = r->computed;
    for (int64_t q = std::max<int64_t>(0, c - hist); q < c; ++q) {
      int64_t logical = q / N_, physical = -1;
      for (const MappedBlock &m : info->blocks)
        if (m.logical == logical)
          physical = m.physical;
      if (physical <= 0 || physical >= numBlocks_) {
        mismatch_.found = true;
        mismatch_.text =
            "after step " + std::to_string(step_) + ": sequence " +
            std::to_string(r->number) + " (runtime id " +
            std::to_string(r->id) + "), position " + std::to_string(q) +
            ": the next step reads it from logical block " +
            std::to_string(logical) + ", which the runtime does not map (" +
            std::to_string(physical) + ")";
        return false;
      }
      // The block's page in every layer, from where the caches live (once
      // per step: the pages the next step reads, not the whole caches).
      if (hostPageStep_[physical] != step_) {
        for (auto &cache : caches_)
          if (!executorOk(
                  "reading the cache back",
                  exec_.download(cache->data + physical * blockStrideBytes_,
                                 blockStrideBytes_)))
            return false; // mismatch_ stays empty: not a mismatch
        hostPageStep_[physical] = step_;
      }
      for (int64_t l = 0; l < opt_.layers; ++l) {
        const auto *cache = reinterpret_cast<const uint16_t *>(layerBase(l));
        for (Stream stream : kAllStreams) {
          if (!sig_.inserted[static_cast<int>(stream)])
            continue;
          const StreamRange &range = layout.range(stream);
          gen_.row(r->chain[q], l, stream, scratch_.data(),
                   rowElements(stream));
          for (int64_t h = 0; h < H; ++h) {
            const uint16_t *rowPtr = cache +
                                     physical * plan_.layers[l].strides[0] +
                                     (h * N_ + q % N_) * D + range.offset;
            const uint16_t *expected = scratch_.data() + h * range.width;
            if (std::memcmp(rowPtr, expected, range.width * 2) == 0)
              continue;
            for (int64_t ch = 0; ch < range.width; ++ch) {
              if (rowPtr[ch] == expected[ch])
                continue;
              mismatch_.found = true;
              mismatch_.text =
                  "mismatch after step " + std::to_string(step_) + ", layer " +
                  std::to_string(l) + ": cache of stream " +
                  streamName(stream) + ", sequence " +
                  std::to_string(r->number) + " (runtime id " +
                  std::to_string(r->id) + "), position " + std::to_string(q) +
                  " (block " + std::to_string(physical) + ", row " +
                  std::to_string(q % N_) + "), head " + std::to_string(h) +
                  ", channel " + std::to_string(ch) + ": expected " +
                  hex16(expected[ch]) + ", found " + hex16(rowPtr[ch]);
              return false;
            }
          }
          stats_.cacheValuesChecked += rowElements(stream);
        }
      }
    }
  }
  return true;
}

bool Server::injectFault(Fault fault) {
  if (fault == Fault::Input || fault == Fault::Output) {
    if (sig_.convs.empty() || batch_.empty())
      return true;
    const ConvInfo &conv = sig_.convs.front();
    if (fault == Fault::Input) {
      // x of the step's first token, before the kernel: what a kernel that
      // scribbled on its input would see. 65536 moves every output it feeds.
      auto *x = reinterpret_cast<uint16_t *>(argData_[conv.x]->data);
      x[geometry_[conv.x].offset] = 0x4780;
      return true;
    }
    auto *y = reinterpret_cast<uint16_t *>(argData_[conv.out]->data);
    y[geometry_[conv.out].offset + 1] ^= 0x0001;
    return true;
  }
  if (fault == Fault::Padding) {
    // The first padding token's output (a kernel that computed a conv for
    // it instead of y = x).
    if (sig_.convs.empty() || info_.numPaddedTokens == info_.numTokens)
      return true;
    const ConvInfo &conv = sig_.convs.front();
    auto *y = reinterpret_cast<uint16_t *>(argData_[conv.out]->data);
    const StreamGeometry &g = geometry_[conv.out];
    y[g.offset + info_.numTokens * g.tokenStride + 2] ^= 0x0001;
    return true;
  }
  for (Request *r : running_) {
    if (r->computed == 0)
      continue;
    auto info = manager_->sequenceInfo(r->id);
    int64_t q = r->computed - 1;
    for (const MappedBlock &m : info->blocks)
      if (m.logical == q / N_) {
        Stream stream = Stream::K;
        for (Stream s : kAllStreams)
          if (sig_.inserted[static_cast<int>(s)]) {
            stream = s;
            break;
          }
        auto *cacheData = reinterpret_cast<uint16_t *>(layerBase(0));
        uint16_t &value = cacheData[m.physical * plan_.layers[0].strides[0] +
                                    (q % N_) * sig_.layout.headSize +
                                    sig_.layout.range(stream).offset + 2];
        if (!executorOk("injecting the fault", exec_.download(&value, 2)))
          return false;
        value ^= 0x0100;
        return executorOk("injecting the fault", exec_.upload(&value, 2));
      }
  }
  return true;
}

int Server::run() {
  if (int rc = setUp())
    return rc;
  bool tty = opt_.progress && !opt_.json && isatty(STDOUT_FILENO);
  int64_t faultStep = -1;
  Fault fault = Fault::None;
  if (!opt_.injectFault.empty()) {
    size_t colon = opt_.injectFault.find(':');
    std::string kind = opt_.injectFault.substr(0, colon);
    fault = kind == "cache"     ? Fault::Cache
            : kind == "input"   ? Fault::Input
            : kind == "padding" ? Fault::Padding
                                : Fault::Output;
    faultStep = std::atoll(opt_.injectFault.c_str() + colon + 1);
  }
  auto start = Clock::now();
  for (step_ = 0; step_ < opt_.steps; ++step_) {
    auto t0 = Clock::now();
    arrive();
    // Random preemption of a running sequence.
    if (!running_.empty() && chance(opt_.preemptRate))
      preempt(running_[uniform(0, running_.size() - 1)], false);
    // A fork for parallel sampling: a child of an idle decoding sequence.
    if (!running_.empty() &&
        static_cast<int64_t>(running_.size()) < opt_.maxBatch &&
        chance(opt_.forkRate)) {
      Request *parent = running_[uniform(0, running_.size() - 1)];
      if (parent->computed == static_cast<int64_t>(parent->tokens.size()) - 1) {
        auto id = manager_->fork(parent->id);
        if (!id)
          return internalError("fork", id.status());
        auto child = std::make_unique<Request>(*parent);
        child->number = nextNumber_++;
        child->id = *id;
        child->admitOrder = nextAdmit_++;
        running_.push_back(child.get());
        live_.push_back(std::move(child));
        ++stats_.forks;
      }
    }
    admit();
    if (!scheduleBatch())
      return 1;
    std::vector<SequenceId> ids;
    for (Request *r : batch_) {
      if (!deliverToken(r)) // --async: the sampled tokens arrive
        return 1;
      ids.push_back(r->id);
    }
    if (batch_.empty()) {
      stats_.schedule += seconds(t0, Clock::now());
      continue;
    }
    StepShape shape;
    if (opt_.padTokens > 0) {
      int64_t tokens = 0;
      for (Request *r : batch_)
        tokens += r->numScheduled;
      shape.numTokens =
          (tokens + opt_.padTokens - 1) / opt_.padTokens * opt_.padTokens;
    }
    auto built =
        manager_->buildStep(ids.data(), ids.size(), shape, *stepBuffers_);
    if (!built)
      return internalError("buildStep", built.status());
    info_ = *built;
    stats_.paddingTokens += info_.numPaddedTokens - info_.numTokens;
    poisonPadding();
    // Copy-on-write pages, in every layer's cache, before the kernels (with
    // cross-layer pages one copy of the block moves every layer's page).
    for (int64_t i = 0; i < info_.numCopies; ++i) {
      int32_t src = copies_[2 * i], dst = copies_[2 * i + 1];
      for (auto &cache : caches_)
        if (!executorOk(
                "copy-on-write",
                exec_.copyCacheBytes(cache->data + dst * blockStrideBytes_,
                                     cache->data + src * blockStrideBytes_,
                                     blockStrideBytes_)))
          return report(1);
    }
    stats_.blockCopies += info_.numCopies;
    // Blocks: the runtime's (held now, the step's peak) and an
    // allocate-the-whole-chunk policy's (ceil(n/N) + 1 per scheduled
    // sequence, what the others hold).
    stats_.peakBlocks =
        std::max<int64_t>(stats_.peakBlocks, manager_->pool().numHeldBlocks());
    stats_.peakSnapshotBlocks =
        std::max(stats_.peakSnapshotBlocks, manager_->numSnapshotBlocks());
    int64_t baseline = 0;
    for (Request *r : running_) {
      if (r->scheduled) {
        baseline += (r->numScheduled + N_ - 1) / N_ + 1;
      } else if (auto info = manager_->sequenceInfo(r->id)) {
        baseline += info->blocks.size();
      }
    }
    stats_.baselinePeakBlocks = std::max(stats_.baselinePeakBlocks, baseline);
    auto t1 = Clock::now();
    stats_.schedule += seconds(t0, t1);

    for (int64_t layer = 0; layer < opt_.layers; ++layer) {
      auto a = Clock::now();
      fillInputs(layer);
      if (step_ == faultStep && fault == Fault::Input && layer == 0)
        injectFault(fault);
      auto b = Clock::now();
      bool invoked = invokeLayer(layer);
      auto c = Clock::now();
      if (!invoked)
        return report(1);
      stats_.inputs += seconds(a, b);
      stats_.kernels += seconds(b, c);
      if (!failure_.empty()) {
        ++stats_.mismatches;
        fail(failure_);
        return report(1);
      }
      if (step_ == faultStep &&
          (fault == Fault::Output || fault == Fault::Padding) && layer == 0)
        injectFault(fault);
      if (opt_.check && !checkOutputs(layer)) {
        ++stats_.mismatches;
        stats_.checking += seconds(c, Clock::now());
        fail(mismatch_.text);
        return report(1);
      }
      stats_.checking += seconds(c, Clock::now());
    }

    undoPadding();
    auto t2 = Clock::now();
    if (!commitBatch())
      return 1;
    stats_.peakIdleBlocks = std::max<int64_t>(stats_.peakIdleBlocks,
                                              manager_->pool().numHeldBlocks());
    ++stats_.steps;
    auto t3 = Clock::now();
    stats_.schedule += seconds(t2, t3);
    if (step_ == faultStep && fault == Fault::Cache && !injectFault(fault))
      return report(1);
    if (opt_.check && !checkCache()) {
      stats_.checking += seconds(t3, Clock::now());
      if (mismatch_.found) {
        ++stats_.mismatches;
        fail(mismatch_.text);
      }
      return report(1);
    }
    stats_.checking += seconds(t3, Clock::now());

    if (tty && (step_ % std::max<int64_t>(1, opt_.steps / 200) == 0 ||
                step_ + 1 == opt_.steps)) {
      int width = 30, done = static_cast<int>(width * (step_ + 1) / opt_.steps);
      double elapsed = seconds(start, Clock::now());
      std::printf("\r  [%.*s%*s] step %lld/%lld, %lld tokens, %.0f tokens/s, "
                  "%lld mismatches ",
                  done, "##############################", width - done, "",
                  static_cast<long long>(step_ + 1),
                  static_cast<long long>(opt_.steps),
                  static_cast<long long>(stats_.tokens),
                  elapsed > 0 ? stats_.tokens / elapsed : 0.0,
                  static_cast<long long>(stats_.mismatches));
      std::fflush(stdout);
    }
  }
  if (tty)
    std::printf("\r%*s\r", 110, "");
  if (Status s = manager_->checkInvariants(); !s)
    return internalError("checkInvariants", s);
  return report(0);
}

int Server::report(int exitCode) {
  const Layout &layout = sig_.layout;
  double serveTime =
      stats_.schedule + stats_.inputs + stats_.kernels + stats_.checking;
  double tokensPerS = serveTime > 0 ? stats_.tokens / serveTime : 0;
  double kernelTokensPerS =
      stats_.kernels > 0 ? stats_.tokens / stats_.kernels : 0;
  const char *fusion =
      opt_.compile.fusion.empty() ? "default" : opt_.compile.fusion.c_str();
  if (opt_.json) {
    llvm::json::Object time{{"compile", opt_.compileSeconds},
                            {"schedule", stats_.schedule},
                            {"inputs", stats_.inputs},
                            {"kernels", stats_.kernels},
                            {"transfers", exec_.transferSeconds()},
                            {"device_kernels", exec_.deviceSeconds()},
                            {"checking", stats_.checking},
                            {"total", opt_.compileSeconds + serveTime}};
    llvm::json::Object o{
        {"model", opt_.modelPath},
        {"function", sig_.function},
        {"device", exec_.description()},
        {"launches", exec_.launches()},
        {"layers", opt_.layers},
        {"fusion", fusion},
        {"threads", opt_.cpuThreads},
        {"checked", opt_.compile.checked},
        {"check", opt_.check},
        {"async", opt_.async},
        {"pad_tokens", opt_.padTokens},
        {"padding_tokens", stats_.paddingTokens},
        {"seed", static_cast<int64_t>(opt_.seed)},
        {"num_blocks", numBlocks_},
        {"page_bytes", blockStrideBytes_},
        {"kernel", W_},
        {"block_size", N_},
        {"cross_layer", crossLayer()},
        {"layer_page_bytes", layerPage_},
        {"steps", stats_.steps},
        {"tokens", stats_.tokens},
        {"prefill_tokens", stats_.prefillTokens},
        {"decode_tokens", stats_.decodeTokens},
        {"spec_proposed", stats_.specProposed},
        {"spec_accepted", stats_.specAccepted},
        {"arrivals", stats_.arrivals},
        {"finished", stats_.finished},
        {"preemptions", stats_.preemptions},
        {"out_of_blocks_preemptions", stats_.oobPreemptions},
        {"resumes", stats_.resumes},
        {"prefix_hits", stats_.prefixHits},
        {"prefix_hit_tokens", stats_.prefixHitTokens},
        {"prefix_hit_tokens_ideal", stats_.prefixHitTokensIdeal},
        {"prefix_policy", opt_.prefixPolicy},
        {"snapshot_every", opt_.snapshotEvery},
        {"cache_point_rate", opt_.cachePointRate},
        {"forks", stats_.forks},
        {"block_copies", stats_.blockCopies},
        {"mismatches", stats_.mismatches},
        {"outputs_checked", stats_.outputsChecked},
        {"cache_values_checked", stats_.cacheValuesChecked},
        {"peak_blocks", stats_.peakBlocks},
        {"baseline_peak_blocks", stats_.baselinePeakBlocks},
        {"peak_idle_blocks", stats_.peakIdleBlocks},
        {"peak_snapshot_blocks", stats_.peakSnapshotBlocks},
        {"peak_idle_sequence_blocks", stats_.peakIdleSequenceBlocks},
        {"max_blocks_between_steps", manager_->maxBlocksBetweenSteps()},
        {"max_blocks_per_sequence", manager_->maxBlocksPerSequence()},
        {"time_s", std::move(time)},
        {"tokens_per_s", tokensPerS},
        {"kernel_tokens_per_s", kernelTokensPerS},
    };
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o)))
                 << "\n";
    llvm::outs().flush();
    return exitCode;
  }
  auto ll = [](int64_t v) { return static_cast<long long>(v); };
  std::string threads =
      opt_.cpuThreads > 0 ? ", " + std::to_string(opt_.cpuThreads) +
                                (opt_.cpuThreads == 1 ? " thread" : " threads")
                          : "";
  std::printf("inkling-run: %s @%s, %lld layers, fusion %s%s, %s%s\n",
              opt_.modelPath.c_str(), sig_.function.c_str(), ll(opt_.layers),
              fusion, opt_.compile.checked ? ", checked" : "",
              exec_.description().c_str(), threads.c_str());
  std::printf("  layout         kv_heads %lld, head_dim %lld, hidden %lld, "
              "kernel %lld, tp %lld: H %lld, N %lld, D %lld, page %lld bytes\n",
              ll(layout.config.kvHeads), ll(layout.config.headDim),
              ll(layout.config.hidden), ll(layout.config.kernel),
              ll(layout.config.tp), ll(layout.headsPerRank), ll(N_),
              ll(layout.headSize), ll(layerPage_));
  if (crossLayer())
    std::printf("  cache          %g MiB: %lld blocks of %lld layers' pages "
                "side by side (block stride %lld bytes; block 0 null)\n",
                opt_.budgetMB, ll(numBlocks_), ll(plan_.layers.size()),
                ll(blockStrideBytes_));
  else
    std::printf("  cache          %g MiB: %lld blocks per layer (block 0 "
                "null)\n",
                opt_.budgetMB, ll(numBlocks_));
  std::printf("  steps          %lld\n", ll(stats_.steps));
  if (opt_.async || opt_.padTokens > 0)
    std::printf("  step contract  %s%lld padding tokens (--pad-tokens=%lld)\n",
                opt_.async ? "async scheduling (scheduleAhead); " : "",
                ll(stats_.paddingTokens), ll(opt_.padTokens));
  std::printf("  tokens         %lld (prefill %lld, decode %lld; speculative "
              "drafts %lld proposed, %lld accepted)\n",
              ll(stats_.tokens), ll(stats_.prefillTokens),
              ll(stats_.decodeTokens), ll(stats_.specProposed),
              ll(stats_.specAccepted));
  std::printf("  sequences      %lld arrived, %lld finished, %lld forks, %lld "
              "preemptions (%lld out of blocks), %lld resumes\n",
              ll(stats_.arrivals), ll(stats_.finished), ll(stats_.forks),
              ll(stats_.preemptions), ll(stats_.oobPreemptions),
              ll(stats_.resumes));
  std::printf("  prefix cache   %s policy: %lld hits, %lld tokens not "
              "recomputed (an unbounded every-block cache: %lld); %lld "
              "copy-on-write pages\n",
              opt_.prefixPolicy.c_str(), ll(stats_.prefixHits),
              ll(stats_.prefixHitTokens), ll(stats_.prefixHitTokensIdeal),
              ll(stats_.blockCopies));
  bool silu = std::any_of(sig_.convs.begin(), sig_.convs.end(),
                          [](const ConvInfo &conv) { return conv.silu; });
  if (opt_.check)
    std::printf("  mismatches     %lld (%lld outputs and %lld cache values "
                "checked against the full-history reference: bit-exact%s)\n",
                ll(stats_.mismatches), ll(stats_.outputsChecked),
                ll(stats_.cacheValuesChecked),
                silu ? "; SiLU outputs within 1 bf16 ulp" : "");
  else
    std::printf("  mismatches     not checked (--no-check)\n");
  std::printf("  peak blocks    %lld (window-only) vs %lld "
              "(allocate-the-whole-chunk); %lld held between steps, %lld "
              "snapshot blocks in a step\n",
              ll(stats_.peakBlocks), ll(stats_.baselinePeakBlocks),
              ll(stats_.peakIdleBlocks), ll(stats_.peakSnapshotBlocks));
  if (opt_.check)
    std::printf("  per sequence   %lld blocks at most between steps (bound "
                "%lld = ceil((W-2)/N) + 1); bound during a step %lld\n",
                ll(stats_.peakIdleSequenceBlocks),
                ll(manager_->maxBlocksBetweenSteps()),
                ll(manager_->maxBlocksPerSequence()));
  std::printf(
      "  time           compile %.2f s, schedule %.2f s, inputs %.2f s, "
      "kernels %.2f s, checking %.2f s\n",
      opt_.compileSeconds, stats_.schedule, stats_.inputs, stats_.kernels,
      stats_.checking);
  if (exec_.launches() > 0)
    std::printf("  device         %lld kernel launches, %.3f s on the device "
                "(CUDA events); host<->device copies %.2f s (counted in "
                "kernels and checking)\n",
                ll(exec_.launches()), exec_.deviceSeconds(),
                exec_.transferSeconds());
  std::printf("  throughput     %.0f tokens/s (%.0f tokens/s in the kernels; "
              "%lld layers per token)\n",
              tokensPerS, kernelTokensPerS, ll(opt_.layers));
  std::fflush(stdout);
  return exitCode;
}

} // namespace

int run::serve(const LayerSignature &signature, Executor &executor,
               const ServeOptions &options) {
  Server server(signature, executor, options);
  return server.run();
}

StatusOr<CachePlan>
inkling::run::planCache(const LayerSignature &sig, int64_t layers,
                        double budgetMB,
                        const std::vector<int64_t> &attentionBlockSizes) {
  // The bind's block stride holds `crossLayers` pages: a layer's page is
  // its share (the layout's page, or a padded one the IR was compiled for).
  bool cross = sig.crossLayers > 1;
  int64_t layerPage = cross ? sig.pageBytes / sig.crossLayers : sig.pageBytes;
  CacheRegistry registry;
  for (int64_t l = 0; l < layers; ++l)
    if (Status status = registry.addSconvLayer(
            "layers." + std::to_string(l) + ".sconv", sig.layout, layerPage);
        !status)
      return status;
  // Attention beside them (--print-plan): the layer's KV heads and head_dim.
  for (size_t i = 0; i < attentionBlockSizes.size(); ++i) {
    AttentionLayerSpec attention;
    attention.blockSize = attentionBlockSizes[i];
    attention.numKvHeads = sig.layout.headsPerRank;
    attention.headSize = sig.layout.config.headDim;
    attention.dtypeBytes = sig.layout.elementBytes;
    if (Status status = registry.addAttentionLayer(
            "layers." + std::to_string(i) + ".attn", attention);
        !status)
      return status;
  }
  return registry.plan(static_cast<int64_t>(budgetMB * 1024 * 1024),
                       cross ? CacheLayoutKind::CrossLayer
                             : CacheLayoutKind::PerLayer);
}
