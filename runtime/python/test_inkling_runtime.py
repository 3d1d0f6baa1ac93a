"""unittest for the ctypes module: a serving engine's steps, end to end.

Run from ctest with INKLING_RUNTIME_LIB set to libinkling_runtime.so, or by
hand:  INKLING_RUNTIME_LIB=build/libinkling_runtime.so \
           python3 -m unittest discover -s runtime/python
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inkling_runtime as rt  # noqa: E402

W = 4  # kernel = block size N = sliding window


def layout_config(tp=1):
    # The Inkling reference sizes: D = 2048, page = H * 4 * 2048 * 2 bytes.
    return rt.LayoutConfig(kv_heads=8, head_dim=128, hidden=4096, kernel=W,
                           tp=tp)


def expected_slots(table_row, computed, count, lookahead):
    """DESIGN section 3 restated: slot = block * N + p % N for the stored
    positions [max(c, p1 - (W-1) - L), p1); -1 for the others."""
    end = computed + count
    store_from = max(computed, end - (W - 1) - lookahead)
    return [-1 if p < store_from else table_row[p // W] * W + p % W
            for p in range(computed, end)]


class CacheModel:
    """The cache's contents by effect, kept by the test alone: a slot holds
    the value of the position last written there (a position's value is its
    token prefix, so equal prefixes share values, as prefix hits need).
    Every step must read each history position back, through the block
    table it gets, with the value that position's sequence wrote there;
    the expected slots are never derived from the runtime's own tables."""

    def __init__(self, test):
        self.test = test
        self.cache = {}    # slot -> value
        self.tokens = {}   # seq -> its known token ids
        self.pending = {}  # seq -> (num_computed, {position: slot written})

    def value(self, seq, p):
        tokens = self.tokens[seq]
        return tuple(tokens[:p + 1]) if p < len(tokens) else ("draft", seq, p)

    def check_step(self, step, plan):
        t = self.test
        for src, dst in step.block_copies:  # before the kernels
            for r in range(W):
                self.cache[dst * W + r] = self.cache.get(src * W + r)
        offset, written = 0, set()
        for row, (seq, count) in enumerate(plan):
            computed = step.num_computed[row]
            table = step.block_table[row]
            for q in range(max(0, computed - (W - 1)), computed):
                slot = table[q // W] * W + q % W
                t.assertEqual(self.cache.get(slot), self.value(seq, q),
                              "sequence %d reads history position %d from "
                              "slot %d" % (seq, q, slot))
            stores = {}
            for i in range(count):
                slot = step.slot_mapping[offset + i]
                if slot < 0:
                    continue
                t.assertGreaterEqual(slot, W, "a write to the null block")
                t.assertNotIn(slot, written, "two positions write one slot")
                written.add(slot)
                self.cache[slot] = self.value(seq, computed + i)
                stores[computed + i] = slot
            self.pending[seq] = (computed, stores)
            offset += count

    def committed(self, seq, accepted, tokens):
        self.tokens[seq] = self.tokens[seq] + list(tokens)
        # (No pending writes: the step was scheduled, never built.)
        computed, stores = self.pending.pop(seq, (0, {}))
        # Accepted drafts were these tokens all along.
        for p in range(computed, computed + accepted):
            if p in stores:
                self.cache[stores[p]] = self.value(seq, p)


class ServingEngineStepTest(unittest.TestCase):
    """How a serving engine drives the runtime, one step at a time."""

    def setUp(self):
        self.manager = rt.Manager(layout_config(), num_blocks=64, lookahead=2)
        # Fixed shapes, allocated once (CUDA graph capture wants them).
        self.buffers = self.manager.step_buffers(
            max_rows=8, num_cols=32, max_tokens=64, max_copies=8)
        self.model = CacheModel(self)

    # The engine's calls, with the model kept in step.
    def add(self, tokens, start=0):
        seq = self.manager.add_sequence(tokens, start=start)
        self.model.tokens[seq] = list(tokens)
        return seq

    def commit(self, seq, accepted, tokens=()):
        self.manager.commit(seq, accepted, tokens)
        self.model.committed(seq, accepted, tokens)

    def fork(self, parent):
        child = self.manager.fork(parent)
        self.model.tokens[child] = list(self.model.tokens[parent])
        return child

    def tearDown(self):
        self.manager.check_invariants()
        self.manager.close()

    def run_step(self, plan, num_rows=0, num_padded_tokens=0):
        """plan: [(seq, num_tokens)]. Schedules, builds, checks, returns."""
        for seq, count in plan:
            self.manager.schedule(seq, count)
        step = self.buffers.build([seq for seq, _ in plan], num_rows,
                                  num_padded_tokens)
        self.model.check_step(step, plan)
        # The metadata a kernel reads, consistent as DESIGN section 3 says
        # (slots through the same table; the model above checks the table).
        offset = 0
        for row, (seq, count) in enumerate(plan):
            self.assertEqual(step.query_start_loc[row], offset)
            computed = step.num_computed[row]
            self.assertEqual(
                step.slot_mapping[offset:offset + count],
                expected_slots(step.block_table[row], computed, count, 2))
            self.assertEqual(step.token_seq[offset:offset + count],
                             [row] * count)
            # History the conv reads comes through the block table.
            for q in range(max(0, computed - (W - 1)), computed):
                self.assertNotEqual(step.block_table[row][q // W], 0)
            offset += count
        self.assertEqual(step.info.num_tokens, offset)
        self.assertTrue(all(s == -1 for s in step.slot_mapping[offset:]))
        self.assertTrue(all(s == 0 for s in step.token_seq[offset:]))
        for row in range(len(plan), step.info.num_rows):
            self.assertEqual(step.block_table[row], [0] * 32)
            self.assertEqual(step.query_start_loc[row + 1], offset)
        return step

    def test_prefill_then_decode_batch(self):
        prompts = [list(range(1, 11)), [7, 7, 7], list(range(100, 117))]
        seqs = [self.add(p) for p in prompts]
        # One step prefills all three prompts, padded to 4 rows, 32 tokens.
        step = self.run_step([(s, len(p)) for s, p in zip(seqs, prompts)],
                             num_rows=4, num_padded_tokens=32)
        self.assertEqual(step.info.num_tokens, 30)
        self.assertEqual(step.info.num_rows, 4)
        # The 17-token prompt stores only its last W-1+L = 5 positions.
        self.assertEqual(step.slot_mapping[13:25], [-1] * 12)
        for seq, sampled in zip(seqs, (11, 8, 117)):
            self.commit(seq, self.manager.sequence_info(seq)
                                .num_scheduled, [sampled])
        # Decode steps, one foreign call per phase (batches): every sequence
        # holds at most 2 blocks between steps.
        for token in range(200, 210):
            self.manager.schedule_batch(seqs, [1] * len(seqs))
            step = self.buffers.build(seqs, num_rows=4, num_padded_tokens=8)
            self.model.check_step(step, [(seq, 1) for seq in seqs])
            self.assertEqual(step.info.num_tokens, 3)
            self.manager.commit_batch(seqs, [1] * len(seqs),
                                      [[token]] * len(seqs))
            for seq in seqs:
                self.model.committed(seq, 1, [token])
            for seq in seqs:
                self.assertLessEqual(
                    self.manager.sequence_info(seq).num_blocks, 2)
        # A batch with one bad entry changes nothing.
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.schedule_batch(seqs + [seqs[0]], [1] * 4)
        self.assertIn("appears twice", caught.exception.message)
        self.assertEqual(self.manager.sequence_info(seqs[0]).state, "idle")
        stats = self.manager.stats()
        self.assertLessEqual(stats.num_held_blocks, 6)
        self.assertEqual(stats.num_free_blocks + stats.num_held_blocks, 63)
        for seq in seqs:
            self.manager.finish(seq)
        self.assertEqual(self.manager.stats().num_held_blocks, 0)

    def test_speculative_decoding(self):
        seq = self.add([1, 2, 3, 4, 5])
        self.run_step([(seq, 5)])
        self.commit(seq, 5, [6])
        # 1 real token + 2 drafts; the verifier accepts one draft.
        self.run_step([(seq, 3)])
        self.commit(seq, 2, [41, 42])  # accepted draft, bonus token
        info = self.manager.sequence_info(seq)
        self.assertEqual((info.num_computed, info.num_tokens), (7, 8))
        # Rejecting 3 > lookahead 2 is refused and changes nothing.
        self.manager.schedule(seq, 4)
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.commit(seq, 0)  # refused: no model update
        self.assertEqual(caught.exception.code, rt.OUT_OF_RANGE)
        self.assertIn("lookahead (2)", caught.exception.message)
        self.assertEqual(self.manager.sequence_info(seq).state, "scheduled")
        self.commit(seq, 2, [43, 44])

    def test_prefix_hit_and_fork(self):
        prompt = list(range(50, 58))
        first = self.add(prompt)
        self.run_step([(first, 8)])
        self.commit(first, 8, [58])
        hit = self.manager.longest_cached_prefix(prompt + [58, 59], 9)
        self.assertEqual(hit, 8)
        second = self.add(prompt + [58, 59], start=hit)
        self.assertEqual(self.manager.sequence_info(second).num_blocks, 1)
        self.run_step([(second, 2)])
        self.commit(second, 2, [60])
        # Fork mid-block: the first writer gets a page copy.
        child = self.fork(second)
        step = self.run_step([(second, 1), (child, 1)])
        self.assertEqual(len(step.block_copies), 2)
        for src, dst in step.block_copies:
            self.assertNotEqual(src, dst)
        self.commit(second, 1, [61])
        self.commit(child, 1, [62])

    def test_preempt_and_resume_at_own_prefix(self):
        seq = self.add(list(range(13)))
        self.run_step([(seq, 13)])
        self.commit(seq, 13, [13])
        for token in range(14, 20):
            self.run_step([(seq, 1)])
            self.commit(seq, 1, [token])
        self.manager.preempt(seq)
        self.assertEqual(self.manager.sequence_info(seq).num_blocks, 0)
        tokens = list(range(20))  # the engine keeps the token ids
        hit = self.manager.longest_cached_prefix(tokens, 100)
        self.assertEqual(hit % W, 0)
        self.assertGreater(hit, 0)
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.resume(seq, tokens[:-1], hit)
        self.assertEqual(caught.exception.code, rt.INVALID_ARGUMENT)
        self.manager.resume(seq, tokens, hit)
        self.manager.preempt(seq)
        # Without the token ids: a hit among the hashes still kept.
        kept = self.manager.sequence_longest_cached_prefix(seq, 100)
        self.assertEqual(kept, hit)
        self.manager.resume(seq, start=kept)
        info = self.manager.sequence_info(seq)
        self.assertEqual((info.state, info.num_computed), ("idle", hit))
        self.run_step([(seq, info.num_tokens - hit)])

    def test_async_scheduling(self):
        # Step n+1 is scheduled before step n's sampled token is known; the
        # token arrives before the build. Wrong orders change nothing.
        prompt = list(range(1, 8))
        seq = self.add(prompt)
        self.run_step([(seq, len(prompt))])
        self.commit(seq, len(prompt))  # no sampled token yet
        for token in range(50, 60):
            self.manager.schedule_ahead(seq, 1)
            with self.assertRaises(rt.InklingError) as caught:
                self.buffers.build([seq])
            self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)
            self.assertIn("build step", caught.exception.message)
            with self.assertRaises(rt.InklingError) as caught:
                self.manager.commit(seq, 1)
            self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)
            self.assertIn("commit", caught.exception.message)
            self.manager.append_tokens(seq, [token])
            self.model.tokens[seq].append(token)
            step = self.buffers.build([seq])
            self.model.check_step(step, [(seq, 1)])
            self.assertEqual(step.token_seq[:1], [0])
            self.commit(seq, 1)
        info = self.manager.sequence_info(seq)
        self.assertEqual(info.num_computed, len(prompt) + 10)
        # A plain schedule still needs the token.
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.schedule(seq, 1)
        self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)

    def test_errors_carry_code_and_message(self):
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.schedule(987654321, 1)
        self.assertEqual(caught.exception.code, rt.NOT_FOUND)
        self.assertIn("987654321", caught.exception.message)
        seq = self.add([1, 2, 3])
        self.manager.schedule(seq, 3)
        with self.assertRaises(rt.InklingError) as caught:
            self.buffers.build([seq, seq])
        self.assertEqual(caught.exception.code, rt.INVALID_ARGUMENT)
        with self.assertRaises(rt.InklingError) as caught:
            self.buffers.build([seq], num_padded_tokens=65)
        self.assertEqual(caught.exception.code, rt.OUT_OF_RANGE)
        with self.assertRaises(rt.InklingError) as caught:
            rt.Manager(layout_config(), num_blocks=1)
        self.assertIn("num_blocks (1)", caught.exception.message)


class LayoutPagesAndRanksTest(unittest.TestCase):
    def test_layout(self):
        layout = rt.derive_layout(layout_config(tp=2))
        self.assertEqual(layout["head_size"], 2048)
        self.assertEqual(layout["heads_per_rank"], 4)
        self.assertEqual(layout["streams"]["attn"], (256, 512))
        with self.assertRaises(rt.InklingError) as caught:
            rt.derive_layout(rt.LayoutConfig(8, 128, 4096, 4, 3))
        self.assertEqual(caught.exception.code, rt.INVALID_ARGUMENT)

    def test_page_unification(self):
        sconv = rt.sconv_cache_spec("sconv", layout_config())
        attention = rt.attention_cache_spec("attn", 16, 8, 128)
        page, specs = rt.unify_page_sizes([sconv, attention])
        self.assertEqual(page, 131072)
        self.assertEqual(specs[1]["adjustment"], "scaled block size")
        self.assertEqual(specs[1]["block_size"], 32)
        big = rt.attention_cache_spec("big", 64, 8, 128)
        page, specs = rt.unify_page_sizes([sconv, big])
        self.assertEqual(specs[0]["adjustment"], "padded")
        self.assertEqual(specs[0]["block_size"], W)
        self.assertEqual(specs[0]["block_stride_bytes"], page)
        odd = rt.attention_cache_spec("odd", 3, 8, 128)
        with self.assertRaises(rt.InklingError) as caught:
            rt.unify_page_sizes([rt.sconv_cache_spec("sc", layout_config(8)),
                                 odd])
        self.assertIn("'odd'", caught.exception.message)
        self.assertIn("'sc'", caught.exception.message)

    def test_rank_tiling(self):
        config = layout_config(tp=4)
        ranks = rt.rank_layouts(config)
        self.assertEqual([(r.head_begin, r.head_end) for r in ranks],
                         [(0, 2), (2, 4), (4, 6), (6, 8)])
        rt.check_rank_tiling(config, ranks)
        ranks[3].head_begin, ranks[3].head_end = 5, 7
        ranks[3].hidden_begin, ranks[3].hidden_end = 5 * 512, 7 * 512
        with self.assertRaises(rt.InklingError) as caught:
            rt.check_rank_tiling(config, ranks)
        self.assertIn("overlap", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
