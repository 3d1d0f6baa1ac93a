/*===- ReplayTrace.c - A recorded engine trace through the C API ----------===//
 *
 * Replays the runtime calls that runtime/bench/replay_trace.py recorded
 * (lookups, adds, schedules, step builds, commits, finishes of a serving
 * trace) through libinkling_runtime.so and prints the time spent in them:
 * the C side of the Python-vs-C comparison of issue 30. Every call must
 * succeed and give what the recording got (ids, hits); else it exits 1.
 *
 *   InklingRuntimeReplay trace.bin   ->  "calls N seq_steps S ns T"
 *
 * The trace format (little-endian) is written and documented by
 * replay_trace.py: a header of int64s, the int32 token table, the int64
 * operations.
 *
 *===----------------------------------------------------------------------===*/

#include "inkling/Runtime/inkling_runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
  kLookup = 1,
  kAdd = 2,
  kSchedule = 3,
  kBuild = 4,
  kCommit = 5,
  kFinish = 6
};
enum { kHeaderWords = 16 };

static int64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *readAll(FILE *file, size_t bytes) {
  void *data = malloc(bytes ? bytes : 1);
  if (!data || fread(data, 1, bytes, file) != bytes) {
    fprintf(stderr, "replay: short trace file\n");
    exit(1);
  }
  return data;
}

/* Zeroed, 64-byte aligned (as an engine's step buffers). */
static void *zeroed(int64_t count, size_t size) {
  size_t bytes = ((size_t)count * size + 63) / 64 * 64;
  void *data = aligned_alloc(64, bytes ? bytes : 64);
  if (!data) {
    fprintf(stderr, "replay: out of memory\n");
    exit(1);
  }
  memset(data, 0, bytes);
  return data;
}

static void check(inkling_manager_t *manager, inkling_status_t status,
                  const char *what, int64_t op) {
  if (status != INKLING_OK) {
    fprintf(stderr, "replay: %s (op at word %lld) failed: %s\n", what,
            (long long)op, inkling_manager_last_error(manager));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s trace.bin\n", argv[0]);
    return 2;
  }
  FILE *file = fopen(argv[1], "rb");
  if (!file) {
    perror(argv[1]);
    return 1;
  }
  int64_t *header = readAll(file, kHeaderWords * sizeof(int64_t));
  if (header[0] != 0x31454341524b4e49LL) { /* "INKRACE1" */
    fprintf(stderr, "replay: not a trace file\n");
    return 1;
  }
  int64_t numTokens = header[1], numWords = header[2];
  int32_t *tokens = readAll(file, (size_t)numTokens * sizeof(int32_t));
  int64_t *ops = readAll(file, (size_t)numWords * sizeof(int64_t));
  fclose(file);

  inkling_manager_config_t config;
  memset(&config, 0, sizeof config);
  config.layout.kv_heads = 8;
  config.layout.head_dim = 128;
  config.layout.hidden = 4096;
  config.layout.kernel = header[3];
  config.layout.tp = 1;
  config.layout.element_type = "bf16";
  config.layout.block_size = header[4];
  config.num_blocks = header[5];
  config.lookahead = header[6];
  config.enable_prefix_caching = 1;
  char error[512];
  inkling_manager_t *manager = NULL;
  if (inkling_manager_create(&config, &manager, error, sizeof error) !=
      INKLING_OK) {
    fprintf(stderr, "replay: %s\n", error);
    return 1;
  }
  static const char *policies[] = {"window", "snapshots", "every-block"};
  check(manager,
        inkling_manager_set_prefix_policy(manager, policies[header[11]],
                                          header[12]),
        "set policy", 0);
  inkling_step_buffer_spec_t spec;
  memset(&spec, 0, sizeof spec);
  int64_t rows = header[7], cols = header[8], maxTok = header[9],
          copies = header[10];
  spec.query_start_loc = zeroed(rows + 1, sizeof(int32_t));
  spec.num_computed = zeroed(rows, sizeof(int32_t));
  spec.block_table = zeroed(rows * cols, sizeof(int32_t));
  spec.slot_mapping = zeroed(maxTok, sizeof(int64_t));
  spec.block_copies = zeroed(copies * 2, sizeof(int32_t));
  spec.token_seq = zeroed(maxTok, sizeof(int32_t));
  spec.max_rows = rows;
  spec.num_cols = cols;
  spec.max_tokens = maxTok;
  spec.max_copies = copies;
  inkling_step_buffers_t *buffers = NULL;
  check(manager, inkling_step_buffers_create(manager, &spec, &buffers),
        "step buffers", 0);

  int64_t *hits = zeroed(header[13], sizeof(int64_t));
  int64_t total = 0, calls = 0, seqSteps = 0, byOp[7] = {0}, opCalls[7] = {0};
  for (int64_t w = 0; w < numWords;) {
    int64_t op = ops[w], at = w;
    int64_t start = 0, end = 0;
    switch (op) {
    case kLookup: {
      int64_t n = ops[w + 1];
      const int64_t *offsets = ops + w + 2, *limits = offsets + n + 1,
                    *expected = limits + n;
      start = nowNs();
      check(manager,
            inkling_longest_cached_prefix_batch(manager, tokens, offsets,
                                                limits, n, hits),
            "lookup batch", at);
      end = nowNs();
      for (int64_t i = 0; i < n; ++i)
        if (hits[i] != expected[i]) {
          fprintf(stderr, "replay: lookup %lld hit %lld, recorded %lld\n",
                  (long long)i, (long long)hits[i], (long long)expected[i]);
          return 1;
        }
      w += 2 + (n + 1) + 2 * n;
      break;
    }
    case kAdd: {
      int64_t from = ops[w + 1], to = ops[w + 2], startPos = ops[w + 3],
              points = ops[w + 4], expected = ops[w + 5 + points], id = 0;
      start = nowNs();
      check(manager,
            inkling_add_sequence_with_keys(manager, tokens + from, to - from,
                                           startPos, ops + w + 5, points, NULL,
                                           0, &id),
            "add", at);
      end = nowNs();
      if (id != expected) {
        fprintf(stderr, "replay: add gave id %lld, recorded %lld\n",
                (long long)id, (long long)expected);
        return 1;
      }
      w += 6 + points;
      break;
    }
    case kSchedule: {
      int64_t n = ops[w + 1];
      start = nowNs();
      check(manager,
            inkling_schedule_batch(manager, ops + w + 2, ops + w + 2 + n, n),
            "schedule batch", at);
      end = nowNs();
      seqSteps += n;
      w += 2 + 2 * n;
      break;
    }
    case kBuild: {
      int64_t n = ops[w + 1];
      inkling_step_info_t info;
      start = nowNs();
      check(manager,
            inkling_build_step(manager, buffers, ops + w + 2, n, ops[w + 2 + n],
                               ops[w + 3 + n], &info),
            "build step", at);
      end = nowNs();
      w += 4 + n;
      break;
    }
    case kCommit: {
      int64_t n = ops[w + 1];
      const int64_t *ids = ops + w + 2, *accepted = ids + n,
                    *offsets = accepted + n;
      start = nowNs();
      check(manager,
            inkling_commit_batch(manager, ids, accepted, offsets, tokens, n),
            "commit batch", at);
      end = nowNs();
      w += 2 + 3 * n + 1;
      break;
    }
    case kFinish:
      start = nowNs();
      check(manager, inkling_finish(manager, ops[w + 1]), "finish", at);
      end = nowNs();
      w += 2;
      break;
    default:
      fprintf(stderr, "replay: bad op %lld at word %lld\n", (long long)op,
              (long long)w);
      return 1;
    }
    total += end - start;
    byOp[op] += end - start;
    ++opCalls[op];
    ++calls;
  }
  printf("calls %lld seq_steps %lld ns %lld\n", (long long)calls,
         (long long)seqSteps, (long long)total);
  static const char *names[] = {"",      "lookup", "add",   "schedule",
                                "build", "commit", "finish"};
  for (int i = 1; i < 7; ++i)
    fprintf(stderr, "  %-8s %6lld calls %9.3f us each\n", names[i],
            (long long)opCalls[i],
            opCalls[i] ? byOp[i] / 1e3 / (double)opCalls[i] : 0.0);
  inkling_step_buffers_destroy(buffers);
  inkling_manager_destroy(manager);
  return 0;
}
