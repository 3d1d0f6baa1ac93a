//===- CApiTest.cpp - The C API as a foreign caller uses it ---------------===//

#include "inkling/Runtime/StepBuffers.h"
#include "inkling/Runtime/inkling_runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

inkling_layout_config_t layoutConfig(int64_t tp = 1) {
  inkling_layout_config_t config{};
  config.kv_heads = 8;
  config.head_dim = 128;
  config.hidden = 4096;
  config.kernel = 4;
  config.tp = tp;
  return config;
}

/// Every entry starts as 77, so that the tests see what the runtime wrote.
struct Buffers : inkling::HostStepBuffers {
  inkling_step_buffer_spec_t cSpec;
  Buffers(int64_t rows, int64_t cols, int64_t tokens, int64_t maxCopies)
      : HostStepBuffers(rows, cols, tokens, maxCopies, /*withTokenSeq=*/true,
                        /*fill=*/77),
        cSpec(cApiSpec()) {}
};

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    inkling_manager_config_t config{};
    config.layout = layoutConfig();
    config.num_blocks = 32;
    config.lookahead = 3;
    config.enable_prefix_caching = 1;
    char error[128] = "";
    ASSERT_EQ(inkling_manager_create(&config, &manager, error, sizeof error),
              INKLING_OK)
        << error;
    // The tests check the window's slot mapping (no snapshots).
    ASSERT_EQ(inkling_manager_set_prefix_policy(manager, "window", 8),
              INKLING_OK);
    ASSERT_EQ(inkling_step_buffers_create(manager, &buffers.cSpec, &step),
              INKLING_OK)
        << inkling_manager_last_error(manager);
  }
  void TearDown() override {
    inkling_step_buffers_destroy(step);
    inkling_manager_destroy(manager);
  }

  int64_t add(std::vector<int32_t> tokens, int64_t start = 0) {
    int64_t id = -1;
    EXPECT_EQ(
        inkling_add_sequence(manager, tokens.data(), tokens.size(), start, &id),
        INKLING_OK)
        << inkling_manager_last_error(manager);
    return id;
  }
  /// Adds `prompt`, computes it in one step and commits it with `sampled`.
  int64_t prefill(std::vector<int32_t> prompt, int32_t sampled) {
    int64_t id = add(prompt);
    int64_t n = prompt.size();
    EXPECT_EQ(inkling_schedule(manager, id, n), INKLING_OK);
    EXPECT_EQ(inkling_commit(manager, id, n, &sampled, 1), INKLING_OK)
        << inkling_manager_last_error(manager);
    return id;
  }
  inkling_step_info_t build(std::vector<int64_t> ids, int64_t rows = 0,
                            int64_t tokens = 0) {
    inkling_step_info_t info{};
    EXPECT_EQ(inkling_build_step(manager, step, ids.data(), ids.size(), rows,
                                 tokens, &info),
              INKLING_OK)
        << inkling_manager_last_error(manager);
    return info;
  }

  inkling_manager_t *manager = nullptr;
  Buffers buffers{4, 32, 64, 4};
  inkling_step_buffers_t *step = nullptr;
};

// The per-token sequence ids (sconv.step's token_seq): row b's tokens get
// b, padding tokens 0.
TEST_F(CApiTest, BuildStepWritesTokenSeq) {
  int64_t a = add({1, 2, 3}), b = add({4, 5});
  ASSERT_EQ(inkling_schedule(manager, a, 3), INKLING_OK);
  ASSERT_EQ(inkling_schedule(manager, b, 2), INKLING_OK);
  inkling_step_info_t info = build({b, a}, 0, 8);
  EXPECT_EQ(info.num_tokens, 5);
  EXPECT_EQ(info.num_padded_tokens, 8);
  EXPECT_EQ(std::vector<int32_t>(buffers.tokenSeq.begin(),
                                 buffers.tokenSeq.begin() + 8),
            (std::vector<int32_t>{0, 0, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(buffers.tokenSeq[8], 77) << "nothing past the padded tokens";
}

// Same-step hits through the C API: a prompt looked up while another
// sequence prefills it hits the pending blocks; the step holding both asks
// for inserts before convs; preempting the writer before its commit
// invalidates the reader, which the engine collects.
TEST_F(CApiTest, SameStepHitsAndTheirWithdrawal) {
  ASSERT_EQ(inkling_manager_set_same_step_hits(manager, 1), INKLING_OK);
  std::vector<int32_t> prompt(19);
  for (int32_t i = 0; i < 19; ++i)
    prompt[i] = 40 + i;
  int64_t writer = add(prompt);
  ASSERT_EQ(inkling_schedule(manager, writer, 19), INKLING_OK);
  // Lookahead 3: the blocks ending by 16 are pending; the window stores
  // [13, 19), so block 3 ([12, 16), history [13, 16)) is.
  int64_t hit = -1;
  ASSERT_EQ(inkling_longest_cached_prefix(manager, prompt.data(), 19, 18, &hit),
            INKLING_OK);
  EXPECT_EQ(hit, 16);
  int64_t reader = add(prompt, hit);
  ASSERT_EQ(inkling_schedule(manager, reader, 3), INKLING_OK);
  inkling_step_info_t info{};
  EXPECT_EQ(inkling_build_step(manager, step, &reader, 1, 0, 0, &info),
            INKLING_FAILED_PRECONDITION)
      << "the reader without its writer";
  EXPECT_EQ(inkling_step_buffers_ordered_inserts_required(step), 0);
  build({writer, reader});
  EXPECT_EQ(inkling_step_buffers_ordered_inserts_required(step), 1);
  EXPECT_EQ(inkling_step_buffers_ordered_inserts_required(nullptr), 0);
  ASSERT_EQ(inkling_preempt(manager, writer), INKLING_OK);
  int64_t out[4] = {0, 0, 0, 0}, count = -1;
  EXPECT_EQ(inkling_take_invalidated_readers(manager, out, 0, &count),
            INKLING_OUT_OF_RANGE);
  EXPECT_EQ(count, -1) << "a failed call writes nothing";
  ASSERT_EQ(inkling_take_invalidated_readers(manager, out, 4, &count),
            INKLING_OK);
  ASSERT_EQ(count, 1);
  EXPECT_EQ(out[0], reader);
  inkling_sequence_info_t seq{};
  ASSERT_EQ(inkling_sequence_info(manager, reader, &seq), INKLING_OK);
  EXPECT_EQ(seq.state, INKLING_SEQUENCE_PREEMPTED);
  ASSERT_EQ(inkling_take_invalidated_readers(manager, out, 4, &count),
            INKLING_OK);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(inkling_manager_check_invariants(manager), INKLING_OK)
      << inkling_manager_last_error(manager);
  build({});
  EXPECT_EQ(inkling_step_buffers_ordered_inserts_required(step), 0);
}

// Async scheduling: the next step is scheduled before the sampled token is
// known; building or committing it before the token arrives fails, names
// the sequence and the call, and changes nothing.
TEST_F(CApiTest, ScheduleAheadThenTheTokenArrives) {
  int64_t seq = add({1, 2, 3});
  ASSERT_EQ(inkling_schedule(manager, seq, 3), INKLING_OK);
  build({seq});
  ASSERT_EQ(inkling_commit(manager, seq, 3, nullptr, 0), INKLING_OK);
  EXPECT_EQ(inkling_schedule(manager, seq, 1), INKLING_FAILED_PRECONDITION)
      << "a plain schedule needs the token";
  ASSERT_EQ(inkling_schedule_ahead(manager, seq, 1), INKLING_OK)
      << inkling_manager_last_error(manager);
  inkling_step_info_t info{};
  EXPECT_EQ(inkling_build_step(manager, step, &seq, 1, 0, 0, &info),
            INKLING_FAILED_PRECONDITION);
  std::string error = inkling_manager_last_error(manager);
  EXPECT_NE(error.find("build step"), std::string::npos) << error;
  EXPECT_NE(error.find("sequence " + std::to_string(seq)), std::string::npos)
      << error;
  EXPECT_EQ(inkling_commit(manager, seq, 1, nullptr, 0),
            INKLING_FAILED_PRECONDITION);
  error = inkling_manager_last_error(manager);
  EXPECT_NE(error.find("commit"), std::string::npos) << error;
  int32_t sampled = 4;
  ASSERT_EQ(inkling_append_tokens(manager, seq, &sampled, 1), INKLING_OK);
  info = build({seq});
  EXPECT_EQ(info.num_tokens, 1);
  EXPECT_EQ(buffers.numComputed[0], 3);
  EXPECT_EQ(inkling_commit(manager, seq, 1, nullptr, 0), INKLING_OK)
      << inkling_manager_last_error(manager);
}

TEST(CApiStandaloneTest, StatusNamesMatchTheCodes) {
  EXPECT_STREQ(inkling_status_name(INKLING_OK), "ok");
  EXPECT_STREQ(inkling_status_name(INKLING_NOT_FOUND), "not found");
  EXPECT_STREQ(inkling_status_name(INKLING_INTERNAL), "internal");
  EXPECT_STREQ(inkling_status_name(42), "unknown");
}

TEST(CApiStandaloneTest, LayoutDerive) {
  inkling_layout_config_t config = layoutConfig(2);
  inkling_layout_t layout{};
  ASSERT_EQ(inkling_layout_derive(&config, &layout, nullptr, 0), INKLING_OK);
  EXPECT_EQ(layout.heads_per_rank, 4);
  EXPECT_EQ(layout.head_size, 2048);
  EXPECT_EQ(layout.page_bytes, 4 * 4 * 2048 * 2);
  EXPECT_EQ(layout.stream_offset[3], 256 + 512);
  config.element_type = "f32";
  char error[256];
  EXPECT_EQ(inkling_layout_derive(&config, &layout, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("'f32'"), std::string::npos) << error;
}

TEST(CApiStandaloneTest, CreateErrorsGoToTheCallerBuffer) {
  inkling_manager_config_t config{};
  config.layout = layoutConfig();
  config.num_blocks = 1;
  inkling_manager_t *manager = reinterpret_cast<inkling_manager_t *>(0x1);
  char error[128];
  EXPECT_EQ(inkling_manager_create(&config, &manager, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("num_blocks (1)"), std::string::npos);
  EXPECT_EQ(manager, reinterpret_cast<inkling_manager_t *>(0x1))
      << "a failed call writes no output";
  // Truncated to the buffer, always terminated.
  char tiny[8];
  std::memset(tiny, 'x', sizeof tiny);
  EXPECT_EQ(inkling_manager_create(&config, &manager, tiny, sizeof tiny),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(std::strlen(tiny), 7u);
  EXPECT_EQ(inkling_manager_create(nullptr, &manager, nullptr, 0),
            INKLING_INVALID_ARGUMENT);
  config.layout.kernel = 1;
  config.num_blocks = 8;
  EXPECT_EQ(inkling_manager_create(&config, &manager, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
}

TEST(CApiStandaloneTest, NullHandlesAreErrorsNotCrashes) {
  int64_t id = 0;
  EXPECT_EQ(inkling_schedule(nullptr, 1, 1), INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(inkling_add_sequence(nullptr, nullptr, 0, 0, &id),
            INKLING_INVALID_ARGUMENT);
  EXPECT_STREQ(inkling_manager_last_error(nullptr), "manager is NULL");
  inkling_manager_destroy(nullptr);
  inkling_step_buffers_destroy(nullptr);
}

TEST_F(CApiTest, OneEngineStep) {
  int64_t a = add({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  int64_t b = add({20, 21});
  ASSERT_EQ(inkling_schedule(manager, a, 10), INKLING_OK);
  ASSERT_EQ(inkling_schedule(manager, b, 2), INKLING_OK);
  inkling_step_info_t info = build({a, b}, 3, 16);
  EXPECT_EQ(info.num_sequences, 2);
  EXPECT_EQ(info.num_rows, 3);
  EXPECT_EQ(info.num_tokens, 12);
  EXPECT_EQ(info.num_padded_tokens, 16);
  EXPECT_EQ(buffers.queryStartLoc[0], 0);
  EXPECT_EQ(buffers.queryStartLoc[1], 10);
  EXPECT_EQ(buffers.queryStartLoc[2], 12);
  EXPECT_EQ(buffers.queryStartLoc[3], 12);
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(buffers.slotMapping[t], -1) << "lookahead 3: stores [4, 10)";
  for (int t = 4; t < 12; ++t)
    EXPECT_GE(buffers.slotMapping[t], 4) << t;
  for (int t = 12; t < 16; ++t)
    EXPECT_EQ(buffers.slotMapping[t], -1) << t;
  // Row a maps logical blocks 1 and 2 only.
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(buffers.blockTable[j] != 0, j == 1 || j == 2) << j;
  EXPECT_EQ(buffers.slotMapping[4], buffers.blockTable[1] * 4 + 0);
  EXPECT_EQ(buffers.slotMapping[9], buffers.blockTable[2] * 4 + 1);
  int32_t sampled = 11;
  ASSERT_EQ(inkling_commit(manager, a, 10, &sampled, 1), INKLING_OK);
  ASSERT_EQ(inkling_commit(manager, b, 2, &sampled, 1), INKLING_OK);
  inkling_sequence_info_t seq{};
  ASSERT_EQ(inkling_sequence_info(manager, a, &seq), INKLING_OK);
  EXPECT_EQ(seq.state, INKLING_SEQUENCE_IDLE);
  EXPECT_EQ(seq.num_computed, 10);
  EXPECT_EQ(seq.num_tokens, 11);
  EXPECT_EQ(seq.num_blocks, 2);
  EXPECT_EQ(inkling_manager_check_invariants(manager), INKLING_OK);
}

TEST_F(CApiTest, SpeculativeStepAndRejectionBeyondTheLookahead) {
  int64_t id = prefill({1, 2, 3, 4, 5}, 6);
  // 1 + 3 drafts; accept 2 (the real token and one draft) + bonus token.
  ASSERT_EQ(inkling_schedule(manager, id, 4), INKLING_OK);
  build({id});
  int32_t accepted[] = {7, 8};
  ASSERT_EQ(inkling_commit(manager, id, 2, accepted, 2), INKLING_OK);
  inkling_sequence_info_t seq{};
  ASSERT_EQ(inkling_sequence_info(manager, id, &seq), INKLING_OK);
  EXPECT_EQ(seq.num_computed, 7);
  EXPECT_EQ(seq.num_tokens, 8);
  // 5 tokens scheduled, 0 accepted: 5 rejected > lookahead 3.
  ASSERT_EQ(inkling_schedule(manager, id, 5), INKLING_OK);
  EXPECT_EQ(inkling_commit(manager, id, 0, nullptr, 0), INKLING_OUT_OF_RANGE);
  EXPECT_NE(std::string(inkling_manager_last_error(manager))
                .find("more than the lookahead (3)"),
            std::string::npos);
  ASSERT_EQ(inkling_sequence_info(manager, id, &seq), INKLING_OK);
  EXPECT_EQ(seq.state, INKLING_SEQUENCE_SCHEDULED) << "unchanged";
}

TEST_F(CApiTest, PrefixHitAndFork) {
  std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12};
  int64_t first = prefill(prompt, 13);
  int64_t hit = -1;
  ASSERT_EQ(inkling_longest_cached_prefix(manager, prompt.data(), 8, 8, &hit),
            INKLING_OK);
  EXPECT_EQ(hit, 8);
  int64_t second = add(prompt, 8);
  inkling_sequence_info_t seq{};
  ASSERT_EQ(inkling_sequence_info(manager, second, &seq), INKLING_OK);
  EXPECT_EQ(seq.num_computed, 8);
  EXPECT_EQ(seq.num_blocks, 1);

  // Fork inside a block: the first writer gets a copy-on-write page.
  ASSERT_EQ(inkling_schedule(manager, first, 1), INKLING_OK);
  int32_t sampled = 13;
  ASSERT_EQ(inkling_commit(manager, first, 1, &sampled, 1), INKLING_OK);
  int64_t child = -1;
  ASSERT_EQ(inkling_fork(manager, first, &child), INKLING_OK);
  ASSERT_EQ(inkling_schedule(manager, child, 1), INKLING_OK);
  inkling_step_info_t info = build({child});
  EXPECT_EQ(info.num_copies, 1);
  EXPECT_NE(buffers.blockCopies[0], buffers.blockCopies[1]);
  EXPECT_EQ(buffers.blockTable[2], buffers.blockCopies[1])
      << "the row maps the copy's destination";
  inkling_manager_stats_t stats{};
  ASSERT_EQ(inkling_manager_stats(manager, &stats), INKLING_OK);
  EXPECT_EQ(stats.num_sequences, 3);
  EXPECT_EQ(stats.block_size, 4);
  EXPECT_GE(stats.num_cached_blocks, 1);
  EXPECT_EQ(stats.num_free_blocks + stats.num_held_blocks, 31);
}

// Issue 30's C entry points: a step's lookups in one call (all validated
// before any is answered), the admission query, the EAGLE rule.
TEST_F(CApiTest, LookupBatchAdmissionAndEagle) {
  std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12};
  int64_t first = prefill(prompt, 13);
  // Entry 0: the prompt (hit 8); entry 1: its first 7 tokens (0); entry 2:
  // empty.
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), prompt.begin(), prompt.begin() + 7);
  int64_t offsets[] = {0, 8, 15, 15};
  int64_t limits[] = {8, 7, 0};
  int64_t hits[3] = {-1, -1, -1};
  ASSERT_EQ(inkling_longest_cached_prefix_batch(manager, tokens.data(), offsets,
                                                limits, 3, hits),
            INKLING_OK)
      << inkling_manager_last_error(manager);
  EXPECT_EQ(hits[0], 8);
  EXPECT_EQ(hits[1], 0);
  EXPECT_EQ(hits[2], 0);
  // A bad last entry: nothing written, the message names it.
  int64_t bad[] = {8, 7, -1};
  int64_t untouched[3] = {-5, -5, -5};
  EXPECT_EQ(inkling_longest_cached_prefix_batch(manager, tokens.data(), offsets,
                                                bad, 3, untouched),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(inkling_manager_last_error(manager))
                .find("max length (-1) of lookup entry 2"),
            std::string::npos);
  EXPECT_EQ(untouched[0], -5);
  // EAGLE: the hit at 8 needs blocks 1 and 2 (only block 1 is cached).
  ASSERT_EQ(inkling_manager_set_drop_last_matched_block(manager, 1),
            INKLING_OK);
  ASSERT_EQ(inkling_longest_cached_prefix_batch(manager, tokens.data(), offsets,
                                                limits, 1, hits),
            INKLING_OK);
  EXPECT_EQ(hits[0], 0);
  ASSERT_EQ(inkling_manager_set_drop_last_matched_block(manager, 0),
            INKLING_OK);
  // Admission: 31 usable blocks; the first sequence holds block 1 ([5, 8))
  // and needs block 2 for a 1 + 3-token step; a new one stores at most
  // W-1+L = 6 positions in its first step: 3 blocks.
  inkling_admission_t admission{};
  ASSERT_EQ(inkling_admission(manager, 100, 0, 0, &admission), INKLING_OK);
  EXPECT_EQ(admission.admit, 1);
  EXPECT_EQ(admission.free_blocks, 30);
  EXPECT_EQ(admission.reserved_blocks, 1);
  EXPECT_EQ(admission.needed_blocks, 3);
  ASSERT_EQ(inkling_admission(manager, 100, 0, 26, &admission), INKLING_OK);
  EXPECT_EQ(admission.admit, 1);
  ASSERT_EQ(inkling_admission(manager, 100, 0, 27, &admission), INKLING_OK);
  EXPECT_EQ(admission.admit, 0);
  EXPECT_EQ(inkling_admission(manager, 100, 0, -1, &admission),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(inkling_admission(manager, 100, 0, 0, nullptr),
            INKLING_INVALID_ARGUMENT);
}

TEST_F(CApiTest, ResumeWithAndWithoutTokenIds) {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int64_t seq =
      prefill(std::vector<int32_t>(tokens.begin(), tokens.end() - 1), 9);
  ASSERT_EQ(inkling_preempt(manager, seq), INKLING_OK);
  int64_t hit = -1;
  ASSERT_EQ(inkling_sequence_longest_cached_prefix(manager, seq, 100, &hit),
            INKLING_OK);
  EXPECT_EQ(hit, 8);
  // Wrong token ids are refused; the right ones rebuild the chain.
  std::vector<int32_t> wrong = tokens;
  wrong[0] = 77;
  EXPECT_EQ(inkling_resume_with_tokens(manager, seq, wrong.data(), 9, hit),
            INKLING_INVALID_ARGUMENT);
  ASSERT_EQ(inkling_resume_with_tokens(manager, seq, tokens.data(), 9, hit),
            INKLING_OK);
  inkling_sequence_info_t info{};
  ASSERT_EQ(inkling_sequence_info(manager, seq, &info), INKLING_OK);
  EXPECT_EQ(info.num_computed, 8);
  ASSERT_EQ(inkling_preempt(manager, seq), INKLING_OK);
  ASSERT_EQ(inkling_resume(manager, seq, 8), INKLING_OK);
  ASSERT_EQ(inkling_manager_check_invariants(manager), INKLING_OK);
}

TEST_F(CApiTest, FailedCallsWriteNoOutputAndExplain) {
  int64_t id = 99;
  EXPECT_EQ(inkling_add_sequence(manager, nullptr, 4, 0, &id),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(id, 99);
  EXPECT_EQ(inkling_schedule(manager, 123456789, 1), INKLING_NOT_FOUND);
  EXPECT_NE(std::string(inkling_manager_last_error(manager))
                .find("unknown sequence id 123456789"),
            std::string::npos);
  int64_t seq = add({1, 2, 3});
  ASSERT_EQ(inkling_schedule(manager, seq, 3), INKLING_OK);
  inkling_step_info_t info{};
  info.num_tokens = -5;
  EXPECT_EQ(inkling_build_step(manager, step, &seq, 1, 0, 2, &info),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(info.num_tokens, -5);
  // Step buffers of another manager are refused.
  inkling_manager_config_t config{};
  config.layout = layoutConfig();
  config.num_blocks = 8;
  inkling_manager_t *other = nullptr;
  ASSERT_EQ(inkling_manager_create(&config, &other, nullptr, 0), INKLING_OK);
  EXPECT_EQ(inkling_build_step(other, step, &seq, 1, 0, 0, &info),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(inkling_manager_last_error(other)).find("another manager"),
      std::string::npos);
  inkling_manager_destroy(other);
}

/// An sconv layer's spec and an attention layer's, unified.
struct UnifiedPair {
  inkling_cache_spec_t specs[2];
  inkling_unified_spec_t out[2];
  int64_t page = 0;
};

/// Unifies the sconv layer of `config` with an attention layer of
/// `attentionBlock` tokens (8 KV heads of 128, 2-byte, K and V per page),
/// which must give pages of `page` bytes.
void unifyWithAttention(const inkling_layout_config_t &config,
                        int64_t attentionBlock, int64_t page,
                        UnifiedPair &pair) {
  ASSERT_EQ(
      inkling_cache_spec_sconv(&config, "sconv", &pair.specs[0], nullptr, 0),
      INKLING_OK);
  ASSERT_EQ(inkling_cache_spec_attention("attn", attentionBlock, 8, 128, 2, 0,
                                         2, &pair.specs[1], nullptr, 0),
            INKLING_OK);
  ASSERT_EQ(
      inkling_unify_page_sizes(pair.specs, 2, pair.out, &pair.page, nullptr, 0),
      INKLING_OK);
  ASSERT_EQ(pair.page, page);
}

TEST(CApiStandaloneTest, PageUnification) {
  inkling_layout_config_t config = layoutConfig();
  UnifiedPair pair;
  ASSERT_NO_FATAL_FAILURE(unifyWithAttention(config, 16, 131072, pair));
  EXPECT_EQ(pair.out[0].adjustment, INKLING_PAGE_UNCHANGED);
  EXPECT_EQ(pair.out[1].adjustment, INKLING_PAGE_SCALED_BLOCK_SIZE);
  EXPECT_EQ(pair.out[1].block_size, 32);
  ASSERT_EQ(inkling_cache_spec_attention("odd", 3, 8, 128, 2, 0, 2,
                                         &pair.specs[1], nullptr, 0),
            INKLING_OK);
  config.tp = 8; // sconv page 16384; odd attention page 12288
  ASSERT_EQ(
      inkling_cache_spec_sconv(&config, "sconv", &pair.specs[0], nullptr, 0),
      INKLING_OK);
  char error[512];
  EXPECT_EQ(inkling_unify_page_sizes(pair.specs, 2, pair.out, &pair.page, error,
                                     sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("'odd'"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find("'sconv'"), std::string::npos) << error;
}

TEST(CApiStandaloneTest, BlockSizeFromTheUnifierMakesTheManager) {
  // A 256 KiB attention page scales the conv block size: the engine
  // derives the layout and creates the manager at the unifier's N.
  inkling_layout_config_t config = layoutConfig();
  UnifiedPair pair;
  ASSERT_NO_FATAL_FAILURE(unifyWithAttention(config, 64, 262144, pair));
  EXPECT_EQ(pair.out[0].adjustment, INKLING_PAGE_SCALED_BLOCK_SIZE);
  EXPECT_EQ(pair.out[0].block_size, 8);
  config.block_size = pair.out[0].block_size;
  inkling_layout_t layout;
  ASSERT_EQ(inkling_layout_derive(&config, &layout, nullptr, 0), INKLING_OK);
  EXPECT_EQ(layout.block_size, 8);
  EXPECT_EQ(layout.sliding_window, 4);
  EXPECT_EQ(layout.page_bytes, pair.page);
  inkling_manager_config_t managerConfig{};
  managerConfig.layout = config;
  managerConfig.num_blocks = 16;
  managerConfig.lookahead = 3;
  inkling_manager_t *manager = nullptr;
  ASSERT_EQ(inkling_manager_create(&managerConfig, &manager, nullptr, 0),
            INKLING_OK);
  inkling_manager_stats_t stats;
  ASSERT_EQ(inkling_manager_stats(manager, &stats), INKLING_OK);
  EXPECT_EQ(stats.block_size, 8);
  EXPECT_EQ(stats.max_blocks_between_steps, 2);
  EXPECT_EQ(stats.max_blocks_per_sequence, 4); // span(3) + span(6) at N = 8
  inkling_manager_destroy(manager);
  // A block size below 1 is named.
  config.block_size = -1;
  char error[256];
  EXPECT_EQ(inkling_layout_derive(&config, &layout, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("block_size must be >= 1, got -1"),
            std::string::npos)
      << error;
}

TEST(CApiStandaloneTest, RankLayoutsTileAndABrokenTilingIsNamed) {
  inkling_layout_config_t config = layoutConfig(4);
  inkling_rank_layout_t ranks[4];
  char error[256];
  EXPECT_EQ(inkling_rank_layouts(&config, ranks, 2, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  ASSERT_EQ(inkling_rank_layouts(&config, ranks, 4, error, sizeof error),
            INKLING_OK)
      << error;
  EXPECT_EQ(ranks[3].head_begin, 6);
  EXPECT_EQ(ranks[3].hidden_end, 4096);
  EXPECT_EQ(inkling_check_rank_tiling(&config, ranks, 4, error, sizeof error),
            INKLING_OK)
      << error;
  ranks[1].layout.head_size = 1024; // a rank that packs rows differently
  EXPECT_EQ(inkling_check_rank_tiling(&config, ranks, 4, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("rank 1 packs rows"), std::string::npos)
      << error;
  ranks[1].layout.head_size = 2048;
  ranks[2].head_begin = 3;
  ranks[2].head_end = 5;
  ranks[2].hidden_begin = 3 * 512;
  ranks[2].hidden_end = 5 * 512;
  EXPECT_EQ(inkling_check_rank_tiling(&config, ranks, 4, error, sizeof error),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("overlap"), std::string::npos) << error;
}

TEST(CApiStandaloneTest, CachePlanOfAMixedModel) {
  // The real layout (page 131072 at N = 4) beside attention at block 64
  // (page 262144): the sconv N scales to 8; cross-layer: one tensor.
  inkling_cache_registry_t *registry = nullptr;
  ASSERT_EQ(inkling_cache_registry_create(&registry), INKLING_OK);
  inkling_layout_config_t config = layoutConfig();
  ASSERT_EQ(
      inkling_cache_registry_add_sconv(registry, "layers.0.sconv", &config, 0),
      INKLING_OK);
  inkling_attention_layer_t attention{64, 8, 128, 2, 0, 2};
  ASSERT_EQ(inkling_cache_registry_add_attention(registry, "layers.0.attn",
                                                 &attention),
            INKLING_OK)
      << inkling_cache_registry_last_error(registry);
  // Bad input: a status naming the value, nothing registered.
  EXPECT_EQ(
      inkling_cache_registry_add_sconv(registry, "layers.0.sconv", &config, 0),
      INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(inkling_cache_registry_last_error(registry))
                .find("duplicate layer name 'layers.0.sconv'"),
            std::string::npos);
  EXPECT_EQ(inkling_cache_registry_add_attention(registry, "", &attention),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(inkling_cache_registry_add_attention(registry, nullptr, &attention),
            INKLING_INVALID_ARGUMENT);
  inkling_cache_plan_t *plan = nullptr;
  EXPECT_EQ(inkling_cache_registry_plan(registry, 1000,
                                        INKLING_CACHE_CROSS_LAYER, &plan),
            INKLING_INVALID_ARGUMENT);
  EXPECT_NE(std::string(inkling_cache_registry_last_error(registry))
                .find("1000 bytes is below one block per layer"),
            std::string::npos);
  EXPECT_EQ(inkling_cache_registry_plan(registry, 1 << 24, 7, &plan),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);

  ASSERT_EQ(inkling_cache_registry_plan(registry, (1 << 24) + 5,
                                        INKLING_CACHE_CROSS_LAYER, &plan),
            INKLING_OK)
      << inkling_cache_registry_last_error(registry);
  inkling_cache_plan_info_t info{};
  ASSERT_EQ(inkling_cache_plan_info(plan, &info), INKLING_OK);
  EXPECT_EQ(info.layout, INKLING_CACHE_CROSS_LAYER);
  EXPECT_EQ(info.page_bytes, 262144);
  EXPECT_EQ(info.bytes_per_block, 524288);
  EXPECT_EQ(info.num_blocks, 32);
  EXPECT_EQ(info.num_tensors, 1);
  EXPECT_EQ(info.num_layers, 2);
  int64_t bytes = 0;
  ASSERT_EQ(inkling_cache_plan_tensor_bytes(plan, 0, &bytes), INKLING_OK);
  EXPECT_EQ(bytes, 1 << 24);
  EXPECT_EQ(inkling_cache_plan_tensor_bytes(plan, 1, &bytes),
            INKLING_OUT_OF_RANGE);
  inkling_layer_view_t view{};
  ASSERT_EQ(inkling_cache_plan_layer(plan, 0, &view), INKLING_OK);
  EXPECT_STREQ(view.name, "layers.0.sconv");
  EXPECT_EQ(view.kind, INKLING_CACHE_LAYER_SCONV);
  EXPECT_EQ(view.adjustment, INKLING_PAGE_SCALED_BLOCK_SIZE);
  EXPECT_EQ(view.block_size, 8);
  EXPECT_EQ(view.rank, 4);
  const int64_t sconvShape[] = {32, 8, 8, 2048};
  const int64_t sconvStrides[] = {262144, 16384, 2048, 1};
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(view.shape[d], sconvShape[d]) << d;
    EXPECT_EQ(view.strides[d], sconvStrides[d]) << d;
  }
  ASSERT_EQ(inkling_cache_plan_layer(plan, 1, &view), INKLING_OK);
  EXPECT_STREQ(view.name, "layers.0.attn");
  EXPECT_EQ(view.kind, INKLING_CACHE_LAYER_ATTENTION);
  EXPECT_EQ(view.byte_offset, 262144);
  EXPECT_EQ(view.block_stride_bytes, 524288);
  EXPECT_EQ(view.rank, 5);
  const int64_t attnShape[] = {32, 2, 64, 8, 128};
  const int64_t attnStrides[] = {262144, 65536, 1024, 128, 1};
  for (int d = 0; d < 5; ++d) {
    EXPECT_EQ(view.shape[d], attnShape[d]) << d;
    EXPECT_EQ(view.strides[d], attnStrides[d]) << d;
  }
  EXPECT_EQ(inkling_cache_plan_layer(plan, 2, &view), INKLING_OUT_OF_RANGE);
  // Frozen after planning.
  EXPECT_EQ(
      inkling_cache_registry_add_sconv(registry, "layers.1.sconv", &config, 0),
      INKLING_FAILED_PRECONDITION);
  EXPECT_NE(std::string(inkling_cache_registry_last_error(registry))
                .find("'layers.1.sconv'"),
            std::string::npos);
  inkling_cache_plan_destroy(plan);
  inkling_cache_registry_destroy(registry);
  EXPECT_EQ(inkling_cache_registry_plan(nullptr, 1, 0, &plan),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(inkling_cache_plan_info(nullptr, &info), INKLING_INVALID_ARGUMENT);
}

} // namespace
