//===- Checker.h - inkling-run's full-history reference checks --*- C++ -*-===//
//
// After every layer of a step the checker compares every output with the
// conv of docs/Design.md section 4 over inputs regenerated from each
// sequence's token history (never read from the buffers the kernel ran
// on), padding outputs with their inputs; after every step, every cache
// row the next step will read. Fault injection (--inject-fault) corrupts one
// value to show that the checks catch it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_CHECKER_H
#define INKLING_TOOLS_INKLING_RUN_CHECKER_H

#include "Serving.h"
#include "StepIO.h"
#include "Workload.h"

#include <map>
#include <string>
#include <vector>

namespace inkling::run {

struct Mismatch {
  bool found = false;
  std::string text;
};

/// --inject-fault=KIND:STEP[:LAYER].
struct FaultPlan {
  /// kv: one value of a stored KV row; normed: one normed hidden value.
  enum class Kind { None, Input, Output, Cache, Padding, Kv, Normed };
  Kind kind = Kind::None;
  int64_t step = -1;
  /// The layer whose value is corrupted (default 0).
  int64_t layer = 0;
  static FaultPlan parse(const std::string &text);
  bool at(int64_t s, Kind k) const { return step == s && kind == k; }
};

/// What the checks look at in one step.
struct CheckedStep {
  int64_t step = 0;
  const std::vector<Request *> *batch = nullptr;
  const std::vector<Request *> *running = nullptr;
  StepInfo info;
};

class Checker {
public:
  Checker(const exec::LayerSignature &signature, Executor &executor,
          const ServeOptions &options, const Workload &workload, StepIO &io,
          Stats &stats)
      : sig_(signature), exec_(executor), opt_(options), workload_(workload),
        io_(io), stats_(stats) {}

  /// The weights and biases as floats (weights transposed to [W][H*w]);
  /// after io's allocate.
  void setUp(int64_t numBlocks);

  /// False at the first mismatch of `layer`'s outputs (mismatch()).
  bool checkOutputs(int64_t layer, const CheckedStep &s);
  /// After the commit: false at the first mismatch, or when the executor
  /// cannot bring a page back (printed; mismatch() not found).
  bool checkCache(const CheckedStep &s, const SequenceManager &manager);
  /// Corrupts one value; false if the executor failed (printed).
  bool injectFault(FaultPlan::Kind fault, int64_t layer, const CheckedStep &s,
                   const SequenceManager &manager);

  const Mismatch &mismatch() const { return mismatch_; }

private:
  /// The conv's expected rows [T][H*w] of the step (padding: y = x).
  void expectedConvRows(int64_t layer, const exec::ConvInfo &conv,
                        const CheckedStep &s, std::vector<uint16_t> &rows);
  bool checkConvOutputs(int64_t layer, const exec::ConvInfo &conv,
                        const CheckedStep &s,
                        const std::vector<uint16_t> &rows);
  /// The epilogues' outputs against runtime/lib/EpilogueReference.cpp on
  /// the expected conv rows: each sum and normed row bit-exact, each KV
  /// cache whole (the stored rows, and every other row unchanged).
  bool checkEpilogues(int64_t layer, const CheckedStep &s);
  bool compareRows(int64_t layer, const CheckedStep &s, int arg,
                   const std::vector<uint16_t> &expected);
  bool compareKvCache(int64_t layer, const CheckedStep &s, int arg);
  bool checkPaddingOutputs(int64_t layer, const exec::ConvInfo &conv,
                           const CheckedStep &s);
  /// Position q of r from its cache page `physical` in every layer.
  bool checkCacheRow(const Request &r, int64_t q, int64_t physical,
                     int64_t step);

  const exec::LayerSignature &sig_;
  Executor &exec_;
  const ServeOptions &opt_;
  const Workload &workload_;
  StepIO &io_;
  Stats &stats_;
  Mismatch mismatch_;
  int64_t numBlocks_ = 0;
  std::vector<std::vector<std::vector<float>>> paramFloat_; // [layer][arg]
  /// Per block: the step after which its pages were last brought to the
  /// host for the checker.
  std::vector<int64_t> hostPageStep_;
  std::vector<uint16_t> scratch_, zeros_, expected_;
  /// Per conv: the step's expected rows; per sum argument: its expected
  /// rows (the MLP's residual may be the ATTN's sum).
  std::vector<std::vector<uint16_t>> expectedY_;
  std::map<int, std::vector<uint16_t>> expectedSum_;
  /// [layer][arg]: what each KV cache must hold.
  std::vector<std::vector<std::vector<uint16_t>>> kvShadow_;
  std::vector<float> acc_;
};

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_CHECKER_H
