//===- Serve.cpp - A checked synthetic serving workload -------------------===//
//
// Sets the Server up (the layer's arguments, the runtime's cache plan and
// sequence manager, the buffers) and runs its loop: every step is scheduled,
// built, run layer by layer with the checks, committed and its caches
// checked. Server.h describes the parts.
//
//===----------------------------------------------------------------------===//

#include "Server.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

//===----------------------------------------------------------------------===//
// Setting up
//===----------------------------------------------------------------------===//

int Server::setUp() {
  N_ = sig_.layout.blockSize;
  if (int rc = checkSignature())
    return rc;
  if (int rc = createRuntime())
    return rc;
  if (int rc = bindStepBuffers())
    return rc;
  int64_t kvBlocks = 0;
  if (sig_.attnSlotMapping >= 0) {
    // The attention KV caches hold every running sequence's positions.
    int64_t maxLength = opt_.maxPrompt + opt_.maxOutput + opt_.lookahead + 2;
    kvBlocks =
        AttentionSlots::blocksFor(opt_.maxBatch, maxLength, sig_.attnBlockSize);
    if (Status s = attention_.init(kvBlocks, sig_.attnBlockSize); !s)
      return fail("the attention block pool: " + s.toString());
  }
  if (int rc = io_.allocate(plan_, workload_.generator(), kvBlocks))
    return rc;
  checker_.setUp(plan_.numBlocks);
  workload_.makeSharedPrefixes();
  return 0;
}

int Server::checkSignature() {
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
    if (arg.isParameter() || role == ArgRole::Status)
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
  // (The plan does not exist yet: the bind says whether pages are shared.)
  if (sig_.crossLayers > 1 && sig_.crossLayers != opt_.layers)
    return fail(opt_.modelPath + ": the sconv.bind of @" + sig_.function +
                " holds the pages of " + std::to_string(sig_.crossLayers) +
                " layers in a block, but " + std::to_string(opt_.layers) +
                " layers are served");
  return 0;
}

int Server::createRuntime() {
  const Layout &layout = sig_.layout;
  int64_t W = layout.config.kernel;
  // The memory budget: the runtime's cache plan of the layers.
  StatusOr<CachePlan> plan = planCache(sig_, opt_.layers, opt_.budgetMB);
  if (!plan) {
    char budget[64];
    std::snprintf(budget, sizeof(budget), "--budget-mb=%g: ", opt_.budgetMB);
    return fail(budget + plan.status().message());
  }
  plan_ = std::move(*plan);
  int64_t numBlocks = plan_.numBlocks;
  // Cross-layer pages pad to the kernels' base alignment (CachePlan.h); an
  // IR whose bind holds unpadded pages cannot take that plan: said before
  // any step, with the page_bytes that serves.
  if (crossLayer() && sig_.pageBytes != plan_.bytesPerBlock &&
      plan_.pageBytes % kBufferAlignment == 0 &&
      sig_.pageBytes % plan_.layers.size() == 0 &&
      (sig_.pageBytes / int64_t(plan_.layers.size())) % kBufferAlignment != 0)
    return fail(opt_.modelPath + ": cross-layer pages of " +
                std::to_string(sig_.pageBytes / plan_.layers.size()) +
                " bytes would start layer 1's cache at a base that is not " +
                std::to_string(kBufferAlignment) +
                "-byte aligned; the cache plan pads them to " +
                std::to_string(plan_.pageBytes) + " bytes: compile @" +
                sig_.function + "'s sconv.bind with page_bytes " +
                std::to_string(plan_.pageBytes) + " at block size " +
                std::to_string(layout.blockSize));
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
  if (numBlocks < perSequence + 1) {
    char text[512];
    std::snprintf(
        text, sizeof(text),
        "--budget-mb=%g: too small for one sequence: %lld blocks of %lld bytes "
        "x %lld layers fit, a sequence needs %lld (the blocks of W-1 = %lld "
        "and "
        "W-1 + lookahead %lld positions at block size %lld) plus the null "
        "block, at least %.3g MiB",
        opt_.budgetMB, static_cast<long long>(numBlocks),
        static_cast<long long>(plan_.pageBytes),
        static_cast<long long>(plan_.layers.size()),
        static_cast<long long>(perSequence), static_cast<long long>(W - 1),
        static_cast<long long>(opt_.lookahead), static_cast<long long>(N_),
        double((perSequence + 1) * plan_.bytesPerBlock) / (1 << 20));
    return fail(text);
  }
  SequenceManagerConfig config;
  config.layout = layout;
  config.numBlocks = numBlocks;
  config.lookahead = opt_.lookahead;
  config.enablePrefixCaching = opt_.prefixCaching;
  config.prefixPolicy = *parsePrefixPolicy(opt_.prefixPolicy);
  config.snapshotEvery = opt_.snapshotEvery;
  auto manager = SequenceManager::create(config);
  if (!manager)
    return fail(opt_.modelPath + ": the runtime rejects the layout of @" +
                sig_.function + ": " + manager.status().toString());
  manager_ = std::move(*manager);
  return 0;
}

int Server::bindStepBuffers() {
  // Step buffers sized for the workload's longest sequence.
  int64_t maxLength = opt_.maxPrompt + opt_.maxOutput + opt_.lookahead + 2;
  int64_t numCols = (maxLength + N_ - 1) / N_ + 1;
  int64_t maxRows = opt_.maxBatch, maxTokens = opt_.tokenBudget;
  if (opt_.padTokens > 0)
    maxTokens =
        (maxTokens + opt_.padTokens - 1) / opt_.padTokens * opt_.padTokens;
  io_.allocateStepBuffers(maxRows, numCols, maxTokens);
  auto buffers = manager_->bindStepBuffers(io_.stepBuffers().spec);
  if (!buffers)
    return fail("the runtime rejects the step buffers: " +
                buffers.status().toString());
  stepBuffers_ = std::make_unique<StepBuffers>(std::move(*buffers));
  return 0;
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

int Server::buildStep(Clock::time_point t0) {
  std::vector<SequenceId> ids;
  for (Request *r : batch_) {
    if (!deliverToken(r)) // --async: the sampled tokens arrive
      return 1;
    ids.push_back(r->id);
  }
  if (batch_.empty()) {
    stats_.schedule += seconds(t0, Clock::now());
    return -1;
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
  io_.poisonPadding(batch_, info_);
  if (sig_.attnSlotMapping >= 0)
    if (Status s =
            attention_.assign(running_, batch_, io_.stepBuffers().queryStartLoc,
                              io_.attnSlots(), io_.attnSlotCount());
        !s)
      return internalError("the attention slots", s);
  if (!io_.copyPages(info_, step_))
    return report(1);
  stats_.blockCopies += info_.numCopies;
  recordPeakBlocks();
  stats_.schedule += seconds(t0, Clock::now());
  return 0;
}

void Server::recordPeakBlocks() {
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
}

int Server::runLayers() {
  using Kind = FaultPlan::Kind;
  for (int64_t layer = 0; layer < opt_.layers; ++layer) {
    auto a = Clock::now();
    io_.fillInputs(layer, batch_, info_, workload_, step_);
    if (fault_.at(step_, Kind::Input) && layer == fault_.layer)
      checker_.injectFault(Kind::Input, layer, checkedStep(), *manager_);
    auto b = Clock::now();
    bool invoked = io_.invokeLayer(layer, info_, step_, failure_);
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
    if ((fault_.at(step_, Kind::Output) || fault_.at(step_, Kind::Padding) ||
         fault_.at(step_, Kind::Kv) || fault_.at(step_, Kind::Normed)) &&
        layer == fault_.layer)
      checker_.injectFault(fault_.kind, layer, checkedStep(), *manager_);
    if (opt_.check && !checker_.checkOutputs(layer, checkedStep())) {
      ++stats_.mismatches;
      stats_.checking += seconds(c, Clock::now());
      fail(checker_.mismatch().text);
      return report(1);
    }
    stats_.checking += seconds(c, Clock::now());
  }
  return 0;
}

int Server::finishStep() {
  io_.undoPadding(info_);
  auto t2 = Clock::now();
  if (!commitBatch())
    return 1;
  stats_.peakIdleBlocks = std::max<int64_t>(stats_.peakIdleBlocks,
                                            manager_->pool().numHeldBlocks());
  ++stats_.steps;
  auto t3 = Clock::now();
  stats_.schedule += seconds(t2, t3);
  if (fault_.at(step_, FaultPlan::Kind::Cache) &&
      !checker_.injectFault(FaultPlan::Kind::Cache, fault_.layer, checkedStep(),
                            *manager_))
    return report(1);
  if (opt_.check && !checker_.checkCache(checkedStep(), *manager_)) {
    stats_.checking += seconds(t3, Clock::now());
    if (checker_.mismatch().found) {
      ++stats_.mismatches;
      fail(checker_.mismatch().text);
    }
    return report(1);
  }
  stats_.checking += seconds(t3, Clock::now());
  return 0;
}

void Server::printProgress(Clock::time_point start) const {
  if (step_ % std::max<int64_t>(1, opt_.steps / 200) != 0 &&
      step_ + 1 != opt_.steps)
    return;
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

int Server::run() {
  if (int rc = setUp())
    return rc;
  bool tty = opt_.progress && !opt_.json && isatty(STDOUT_FILENO);
  fault_ = FaultPlan::parse(opt_.injectFault);
  if (fault_.layer < 0 || fault_.layer >= opt_.layers)
    return fail("--inject-fault=" + opt_.injectFault + ": layer " +
                std::to_string(fault_.layer) + " of " +
                std::to_string(opt_.layers));
  auto start = Clock::now();
  for (step_ = 0; step_ < opt_.steps; ++step_) {
    auto t0 = Clock::now();
    arrive();
    maybePreempt();
    if (!maybeFork())
      return 1;
    admit();
    if (!scheduleBatch())
      return 1;
    int built = buildStep(t0);
    if (built < 0)
      continue;
    if (built > 0)
      return built;
    if (int rc = runLayers())
      return rc;
    if (int rc = finishStep())
      return rc;
    if (tty)
      printProgress(start);
  }
  if (tty)
    std::printf("\r%*s\r", 110, "");
  if (Status s = manager_->checkInvariants(); !s)
    return internalError("checkInvariants", s);
  return report(0);
}

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
