/*===- CApiSmoke.c - A C11 client of the runtime: one engine step ---------===*/
/*
 * Compiled as strict C11 to prove the header is C; exits non-zero on any
 * unexpected result.
 */

#include "inkling/Runtime/inkling_runtime.h"

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  char error[256];
  inkling_manager_config_t config;
  inkling_manager_t *manager = NULL;
  inkling_step_buffers_t *buffers = NULL;
  int32_t qsl[5], computed[4], table[4 * 16], copies[8];
  int64_t slots[32];
  inkling_step_buffer_spec_t spec;
  inkling_step_info_t info;
  int32_t prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  int32_t sampled = 11;
  int64_t seq = 0;
  int t;

  memset(&config, 0, sizeof config);
  config.layout.kv_heads = 8;
  config.layout.head_dim = 128;
  config.layout.hidden = 4096;
  config.layout.kernel = 4;
  config.layout.tp = 1;
  config.num_blocks = 16;
  config.enable_prefix_caching = 1;
  CHECK(inkling_runtime_api_version() == INKLING_RUNTIME_API_VERSION);
  CHECK(inkling_manager_create(&config, &manager, error, sizeof error) ==
        INKLING_OK);
  /* The window's slot mapping is checked below (no snapshots). */
  CHECK(inkling_manager_set_prefix_policy(manager, "window", 8) == INKLING_OK);
  CHECK(inkling_manager_set_prefix_policy(manager, "lru", 8) ==
        INKLING_INVALID_ARGUMENT);
  CHECK(strstr(inkling_manager_last_error(manager), "'lru'") != NULL);

  memset(&spec, 0, sizeof spec);
  spec.query_start_loc = qsl;
  spec.num_computed = computed;
  spec.block_table = table;
  spec.slot_mapping = slots;
  spec.block_copies = copies;
  spec.max_rows = 4;
  spec.num_cols = 16;
  spec.max_tokens = 32;
  spec.max_copies = 4;
  CHECK(inkling_step_buffers_create(manager, &spec, &buffers) == INKLING_OK);

  CHECK(inkling_add_sequence(manager, prompt, 10, 0, &seq) == INKLING_OK);
  CHECK(inkling_schedule(manager, seq, 10) == INKLING_OK);
  CHECK(inkling_build_step(manager, buffers, &seq, 1, 2, 16, &info) ==
        INKLING_OK);
  CHECK(info.num_tokens == 10 && info.num_padded_tokens == 16);
  CHECK(qsl[0] == 0 && qsl[1] == 10 && qsl[2] == 10);
  for (t = 0; t < 7; ++t)
    CHECK(slots[t] == -1); /* only the last W-1 = 3 positions are stored */
  for (t = 7; t < 10; ++t)
    CHECK(slots[t] >= 4);
  for (t = 10; t < 16; ++t)
    CHECK(slots[t] == -1);
  CHECK(inkling_commit(manager, seq, 10, &sampled, 1) == INKLING_OK);

  /* A bad call: a status, a message, nothing changed. */
  CHECK(inkling_commit(manager, seq, 1, NULL, 0) ==
        INKLING_FAILED_PRECONDITION);
  CHECK(strstr(inkling_manager_last_error(manager), "no scheduled step"));
  CHECK(strcmp(inkling_status_name(INKLING_OUT_OF_BLOCKS), "out of blocks") ==
        0);

  inkling_step_buffers_destroy(buffers);
  inkling_manager_destroy(manager);
  printf("C API smoke test passed\n");
  return 0;
}
