//===- RuntimeCApiFuzzer.cpp - Random operation sequences on the C API ----===//
//
// libFuzzer target: the input bytes choose a manager configuration and a
// sequence of runtime C API calls - valid and invalid - the way a buggy or
// hostile serving engine might issue them. After every call:
//   - the manager's own invariant check must pass (distinct slots for every
//     live window position, reference counts, no leak, capacity);
//   - a call that failed must have changed nothing observable (pool
//     statistics and every known sequence's info) and must have left a
//     message;
//   - a status must be one of the documented codes.
// Any violation traps, which libFuzzer reports as a finding.
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/StepBuffers.h"
#include "inkling/Runtime/inkling_runtime.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

[[noreturn]] void violation(const char *what) {
  // One line for the crash report, then a crash libFuzzer records.
  fprintf(stderr, "runtime fuzzer: invariant violated: %s\n", what);
  __builtin_trap();
}

void require(bool condition, const char *what) {
  if (!condition)
    violation(what);
}

/// What a failed call must leave unchanged.
struct Snapshot {
  std::vector<int64_t> words;

  static Snapshot take(inkling_manager_t *manager,
                       const std::vector<int64_t> &sequences) {
    Snapshot snapshot;
    inkling_manager_stats_t stats;
    memset(&stats, 0, sizeof(stats));
    require(inkling_manager_stats(manager, &stats) == INKLING_OK,
            "stats of a valid manager");
    const int64_t *raw = reinterpret_cast<const int64_t *>(&stats);
    snapshot.words.assign(raw, raw + sizeof(stats) / sizeof(int64_t));
    for (int64_t id : sequences) {
      inkling_sequence_info_t info;
      memset(&info, 0, sizeof(info));
      inkling_status_t status = inkling_sequence_info(manager, id, &info);
      snapshot.words.push_back(status);
      if (status != INKLING_OK)
        continue;
      snapshot.words.insert(snapshot.words.end(),
                            {info.state, info.num_computed, info.num_tokens,
                             info.num_scheduled, info.num_blocks});
    }
    return snapshot;
  }

  bool operator==(const Snapshot &other) const { return words == other.words; }
};

class Driver {
public:
  Driver(FuzzedDataProvider &data, inkling_manager_t *manager,
         int64_t blockSize)
      : data(data), manager(manager), blockSize(blockSize) {}

  void run() {
    int steps = data.ConsumeIntegralInRange<int>(1, 160);
    for (int i = 0; i < steps && data.remaining_bytes() > 0; ++i)
      oneCall();
  }

private:
  std::vector<int32_t> tokens(int64_t maxCount) {
    int64_t count = data.ConsumeIntegralInRange<int64_t>(0, maxCount);
    std::vector<int32_t> result(count);
    // A tiny vocabulary, so that prompts share prefixes.
    for (int32_t &token : result)
      token = data.ConsumeIntegralInRange<int32_t>(0, 3);
    return result;
  }

  /// A known id most of the time; sometimes garbage.
  int64_t pickSequence() {
    if (sequences.empty() || data.ConsumeIntegralInRange<int>(0, 15) == 0)
      return data.ConsumeIntegral<int64_t>();
    return sequences[data.ConsumeIntegralInRange<size_t>(0,
                                                         sequences.size() - 1)];
  }

  int64_t smallCount() {
    // Mostly plausible, sometimes hostile.
    if (data.ConsumeIntegralInRange<int>(0, 15) == 0)
      return data.ConsumeIntegral<int64_t>();
    return data.ConsumeIntegralInRange<int64_t>(-1, 3 * blockSize + 4);
  }

  void oneCall() {
    Snapshot before = Snapshot::take(manager, sequences);
    inkling_status_t status = INKLING_OK;
    switch (data.ConsumeIntegralInRange<int>(0, 21)) {
    case 0: {
      std::vector<int32_t> prompt = tokens(6 * blockSize);
      int64_t start = 0;
      if (data.ConsumeBool()) {
        status = inkling_longest_cached_prefix(
            manager, prompt.data(), static_cast<int64_t>(prompt.size()),
            smallCount(), &start);
        if (status != INKLING_OK)
          break;
      } else if (data.ConsumeIntegralInRange<int>(0, 7) == 0) {
        start = smallCount();
      }
      int64_t id = 0;
      status =
          inkling_add_sequence(manager, prompt.data(),
                               static_cast<int64_t>(prompt.size()), start, &id);
      if (status == INKLING_OK) {
        require(id > 0, "sequence ids are positive");
        sequences.push_back(id);
      }
      break;
    }
    case 1: {
      std::vector<int32_t> more = tokens(3);
      status = inkling_append_tokens(manager, pickSequence(), more.data(),
                                     static_cast<int64_t>(more.size()));
      break;
    }
    case 2:
      status = inkling_schedule(manager, pickSequence(), smallCount());
      break;
    case 3: {
      std::vector<int32_t> more = tokens(4);
      status = inkling_commit(manager, pickSequence(), smallCount(),
                              more.data(), static_cast<int64_t>(more.size()));
      break;
    }
    case 4:
      status = inkling_preempt(manager, pickSequence());
      break;
    case 5:
      status = inkling_resume(manager, pickSequence(),
                              data.ConsumeBool() ? 0 : smallCount());
      break;
    case 6: {
      int64_t id = pickSequence();
      status = inkling_finish(manager, id);
      // Finished ids stay in the list: they must now be reported unknown.
      break;
    }
    case 7: {
      int64_t child = 0;
      status = inkling_fork(manager, pickSequence(), &child);
      if (status == INKLING_OK)
        sequences.push_back(child);
      break;
    }
    case 8: {
      int64_t length = 0;
      status = inkling_sequence_longest_cached_prefix(manager, pickSequence(),
                                                      smallCount(), &length);
      break;
    }
    case 9:
      status = buildStep();
      break;
    case 10:
    case 11:
      status = batch(data.ConsumeBool());
      break;
    case 12: {
      inkling_sequence_info_t info;
      status = inkling_sequence_info(manager, pickSequence(), &info);
      break;
    }
    case 13: {
      inkling_admission_t admission;
      status = inkling_admission(manager, smallCount(), smallCount(),
                                 smallCount(), &admission);
      if (status == INKLING_OK)
        require(admission.needed_blocks >= 0 && admission.free_blocks >= 0 &&
                    admission.reserved_blocks >= 0,
                "admission counts are non-negative");
      break;
    }
    case 14: {
      // A step's lookups in one call; offsets sometimes out of order.
      int64_t count = data.ConsumeIntegralInRange<int64_t>(0, 4);
      std::vector<int32_t> all;
      std::vector<int64_t> offsets{0}, maxLengths;
      for (int64_t i = 0; i < count; ++i) {
        std::vector<int32_t> prompt = tokens(4 * blockSize);
        all.insert(all.end(), prompt.begin(), prompt.end());
        offsets.push_back(static_cast<int64_t>(all.size()));
        maxLengths.push_back(smallCount());
      }
      if (count > 0 && data.ConsumeIntegralInRange<int>(0, 7) == 0)
        std::swap(offsets.front(), offsets.back());
      std::vector<int64_t> lengths(count, -7);
      status = inkling_longest_cached_prefix_batch(
          manager, all.data(), offsets.data(), maxLengths.data(), count,
          lengths.data());
      if (status != INKLING_OK)
        for (int64_t length : lengths)
          require(length == -7, "a failed batch lookup writes nothing");
      break;
    }
    case 15: {
      const char *policies[] = {"window", "snapshots", "every-block", "bogus",
                                nullptr};
      status = inkling_manager_set_prefix_policy(
          manager, policies[data.ConsumeIntegralInRange<int>(0, 4)],
          smallCount());
      break;
    }
    case 16:
      status = inkling_manager_set_drop_last_matched_block(manager,
                                                           data.ConsumeBool());
      break;
    case 17: {
      // Cache points (increasing, sometimes not) and extra keys.
      std::vector<int32_t> prompt = tokens(6 * blockSize);
      std::vector<int64_t> points;
      int64_t point = 0;
      for (int n = data.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) {
        point += data.ConsumeIntegralInRange<int64_t>(-1, 2 * blockSize);
        points.push_back(point);
      }
      std::vector<uint8_t> keys =
          data.ConsumeBytes<uint8_t>(data.ConsumeIntegralInRange<size_t>(0, 8));
      int64_t id = 0;
      status = inkling_add_sequence_with_keys(
          manager, prompt.data(), static_cast<int64_t>(prompt.size()), 0,
          points.data(), static_cast<int64_t>(points.size()), keys.data(),
          static_cast<int64_t>(keys.size()), &id);
      if (status == INKLING_OK) {
        require(id > 0, "sequence ids are positive");
        sequences.push_back(id);
      }
      break;
    }
    case 18:
      status = inkling_schedule_ahead(manager, pickSequence(), smallCount());
      break;
    case 19: {
      std::vector<int32_t> more = tokens(2 * blockSize);
      status =
          inkling_resume_with_tokens(manager, pickSequence(), more.data(),
                                     static_cast<int64_t>(more.size()),
                                     data.ConsumeBool() ? 0 : smallCount());
      break;
    }
    case 20:
      // Same-step hits: schedules register pending entries from now on.
      status = inkling_manager_set_same_step_hits(manager, data.ConsumeBool());
      break;
    case 21: {
      // The readers invalidated with a dropped writer; a small array may
      // not hold them (nothing is written then).
      int64_t capacity = data.ConsumeIntegralInRange<int64_t>(-1, 4);
      std::vector<int64_t> out(4, -7);
      int64_t count = -7;
      status = inkling_take_invalidated_readers(
          manager, data.ConsumeBool() ? out.data() : nullptr, capacity, &count);
      if (status == INKLING_OK)
        require(count >= 0 && count <= std::max<int64_t>(capacity, 0),
                "invalidated readers fit the array");
      else
        require(count == -7 && out[0] == -7, "a failed take writes nothing");
      break;
    }
    }
    require(status >= INKLING_OK && status <= INKLING_INTERNAL,
            "status is a documented code");
    require(status != INKLING_INTERNAL, "no internal error");
    require(inkling_manager_check_invariants(manager) == INKLING_OK,
            inkling_manager_last_error(manager));
    if (status != INKLING_OK) {
      require(Snapshot::take(manager, sequences) == before,
              "a failed call changed nothing");
      require(inkling_manager_last_error(manager)[0] != '\0',
              "a failed call explains itself");
    }
  }

  inkling_status_t buildStep() {
    int64_t rows = data.ConsumeIntegralInRange<int64_t>(0, 8);
    int64_t cols = data.ConsumeIntegralInRange<int64_t>(0, 16);
    int64_t maxTokens = data.ConsumeIntegralInRange<int64_t>(0, 64);
    int64_t maxCopies = data.ConsumeIntegralInRange<int64_t>(0, 4);
    inkling::HostStepBuffers host(rows, cols, maxTokens, maxCopies,
                                  /*withTokenSeq=*/false);
    inkling_step_buffer_spec_t spec = host.cApiSpec();
    inkling_step_buffers_t *buffers = nullptr;
    inkling_status_t status =
        inkling_step_buffers_create(manager, &spec, &buffers);
    if (status != INKLING_OK)
      return status;
    std::vector<int64_t> ids;
    int64_t count = data.ConsumeIntegralInRange<int64_t>(0, rows + 1);
    for (int64_t i = 0; i < count; ++i)
      ids.push_back(pickSequence());
    inkling_step_info_t info;
    status = inkling_build_step(
        manager, buffers, ids.data(), static_cast<int64_t>(ids.size()),
        data.ConsumeIntegralInRange<int64_t>(0, rows),
        data.ConsumeIntegralInRange<int64_t>(0, 64), &info);
    if (status == INKLING_OK) {
      // Every stored slot addresses a real, non-null block.
      for (int64_t t = 0; t < info.num_padded_tokens; ++t) {
        int64_t slot = host.slotMapping[t];
        require(slot >= -1, "slots are -1 or valid");
        if (slot >= 0)
          require(slot / blockSize > 0, "no slot in the null block");
      }
      require(info.num_padded_tokens <= maxTokens, "tokens fit the buffer");
      int32_t ordered = inkling_step_buffers_ordered_inserts_required(buffers);
      require(ordered == 0 || ordered == 1, "the ordering flag is 0 or 1");
    }
    inkling_step_buffers_destroy(buffers);
    return status;
  }

  inkling_status_t batch(bool schedule) {
    int64_t count = data.ConsumeIntegralInRange<int64_t>(0, 5);
    std::vector<int64_t> ids, counts, offsets{0};
    std::vector<int32_t> appended;
    for (int64_t i = 0; i < count; ++i) {
      ids.push_back(pickSequence());
      counts.push_back(smallCount());
      std::vector<int32_t> more = tokens(3);
      appended.insert(appended.end(), more.begin(), more.end());
      offsets.push_back(static_cast<int64_t>(appended.size()));
    }
    if (schedule)
      return inkling_schedule_batch(manager, ids.data(), counts.data(), count);
    return inkling_commit_batch(manager, ids.data(), counts.data(),
                                offsets.data(), appended.data(), count);
  }

  FuzzedDataProvider &data;
  inkling_manager_t *manager;
  int64_t blockSize;
  std::vector<int64_t> sequences;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  FuzzedDataProvider data(bytes, size);
  inkling_manager_config_t config;
  memset(&config, 0, sizeof(config));
  config.layout.kv_heads = 2;
  config.layout.head_dim = 8;
  config.layout.hidden = 16;
  config.layout.kernel = data.ConsumeIntegralInRange<int64_t>(1, 8);
  config.layout.tp = 1;
  config.num_blocks = data.ConsumeIntegralInRange<int64_t>(0, 48);
  config.lookahead = data.ConsumeIntegralInRange<int64_t>(-1, 4);
  config.enable_prefix_caching = data.ConsumeBool();
  config.prefix_seed = data.ConsumeIntegral<uint64_t>();
  char error[256];
  inkling_manager_t *manager = nullptr;
  inkling_status_t status =
      inkling_manager_create(&config, &manager, error, sizeof(error));
  if (status != INKLING_OK) {
    require(manager == nullptr, "no manager after a failed create");
    require(error[0] != '\0', "a failed create explains itself");
    return 0;
  }
  Driver(data, manager, config.layout.kernel).run();
  inkling_manager_destroy(manager);
  return 0;
}
