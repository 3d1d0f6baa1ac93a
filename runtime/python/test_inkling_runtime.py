"""unittest for the ctypes module: a serving engine's steps, end to end.

Run from ctest with INKLING_RUNTIME_LIB set to libinkling_runtime.so, or by
hand:  INKLING_RUNTIME_LIB=build/libinkling_runtime.so \
           python3 -m unittest discover -s runtime/python
"""

import os
import sys
import threading
import unittest

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - depends on the interpreter
    if os.environ.get("INKLING_REQUIRE_TORCH"):  # ctest: python3-torch
        raise
    torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inkling_runtime as rt  # noqa: E402

W = 4  # kernel = block size N = sliding window


def layout_config(tp=1, block_size=0):
    # The Inkling reference sizes: D = 2048, page = H * N * 2048 * 2 bytes
    # (N = W = 4 unless block_size says otherwise).
    return rt.LayoutConfig(kv_heads=8, head_dim=128, hidden=4096, kernel=W,
                           tp=tp, block_size=block_size)


def expected_slots(table_row, computed, count, lookahead):
    """docs/Design.md section 3 restated: slot = block * N + p % N for the stored
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
        # The model predicts the window policy's slots (no snapshots).
        self.manager.set_prefix_policy("window")
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
        # The metadata a kernel reads, consistent as docs/Design.md section 3 says
        # (slots through the same table; the model above checks the table).
        offset = 0
        for row, (seq, count) in enumerate(plan):
            self.assertEqual(step.query_start_loc[row], offset)
            computed = step.num_computed[row]
            self.assertEqual(
                step.slot_mapping[offset:offset + count].tolist(),
                expected_slots(step.block_table[row], computed, count, 2))
            self.assertEqual(step.token_seq[offset:offset + count].tolist(),
                             [row] * count)
            # History the conv reads comes through the block table.
            for q in range(max(0, computed - (W - 1)), computed):
                self.assertNotEqual(step.block_table[row][q // W], 0)
            offset += count
        self.assertEqual(step.info.num_tokens, offset)
        self.assertTrue(all(s == -1 for s in step.slot_mapping[offset:]))
        self.assertTrue(all(s == 0 for s in step.token_seq[offset:]))
        for row in range(len(plan), step.info.num_rows):
            self.assertEqual(step.block_table[row].tolist(), [0] * 32)
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
        self.assertEqual(step.slot_mapping[13:25].tolist(), [-1] * 12)
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

    def test_cache_points_snapshots_and_extra_keys(self):
        # One 30-token chunk: its final window holds no block boundary's
        # history, but the cache point (13) makes prefill snapshot 12.
        self.manager.set_prefix_policy("snapshots", 8)
        prompt = list(range(100, 130))
        seq = self.manager.add_sequence(prompt, cache_points=[13],
                                        extra_keys=b"salt")
        self.manager.schedule(seq, 30)
        slots = self.buffers.build([seq]).slot_mapping[:30]
        # The history of 12 ([9, 12)) is stored, in one block, besides the
        # window [27, 30).
        self.assertTrue(all(s >= 0 for s in slots[9:12] + slots[27:30]))
        self.assertEqual(len({s // W for s in slots[9:12]}), 1)
        self.manager.commit(seq, 30, [7])
        other = prompt[:13] + [1, 2, 3, 4]
        lcp = self.manager.longest_cached_prefix
        self.assertEqual(lcp(other, 16, extra_keys=b"salt"), 12)
        # Other keys (or none) start another chain: no shared block.
        self.assertEqual(lcp(other, 16), 0)
        self.assertEqual(lcp(other, 16, extra_keys=b"pepper"), 0)
        # The window policy stores no snapshot.
        self.manager.set_prefix_policy("window")
        plain = self.add(list(range(200, 230)))
        self.run_step([(plain, 30)])
        self.commit(plain, 30, [7])
        self.assertEqual(lcp(list(range(200, 213)), 13), 0)
        # Bad input names the value and changes nothing.
        stats = self.manager.stats()
        for bad in ([14, 13], [5, 5], [0], [31]):
            with self.assertRaises(rt.InklingError) as caught:
                self.manager.add_sequence(prompt, cache_points=bad)
            self.assertIn("(%d)" % bad[-1], caught.exception.message)
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.add_sequence(prompt, extra_keys=bytes(4097))
        self.assertIn("4097", caught.exception.message)
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.set_prefix_policy("lru")
        self.assertEqual(caught.exception.code, rt.INVALID_ARGUMENT)
        self.assertIn("lru", caught.exception.message)
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.set_prefix_policy("snapshots", 0)
        self.assertIn("(0 blocks)", caught.exception.message)
        self.assertEqual(self.manager.stats(), stats)

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
            self.assertEqual(step.token_seq[:1].tolist(), [0])
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
        # Token ids are int32: 2^31 is refused, not wrapped to -2^31.
        with self.assertRaises(ValueError) as caught:
            self.manager.add_sequence([1, 2**31])
        self.assertIn("token id 2147483648 does not fit int32",
                      str(caught.exception))
        with self.assertRaises(ValueError):
            self.manager.commit(seq, 3, [-2**31 - 1])


class LayoutPagesAndRanksTest(unittest.TestCase):
    def test_layout_block_size(self):
        self.assertEqual(rt.derive_layout(layout_config())["block_size"], W)
        layout = rt.derive_layout(layout_config(block_size=32))
        self.assertEqual(layout["block_size"], 32)
        self.assertEqual(layout["sliding_window"], W)
        self.assertEqual(layout["page_bytes"], 8 * 32 * 2048 * 2)
        with self.assertRaises(rt.InklingError) as caught:
            rt.derive_layout(layout_config(block_size=-1))
        self.assertIn("block_size", caught.exception.message)

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
        # A larger attention page that is a multiple of the conv page
        # scales the conv block size (vLLM's plan): 256 KiB -> N = 8.
        big = rt.attention_cache_spec("big", 64, 8, 128)
        page, specs = rt.unify_page_sizes([sconv, big])
        self.assertEqual(page, 262144)
        self.assertEqual(specs[0]["adjustment"], "scaled block size")
        self.assertEqual(specs[0]["block_size"], 2 * W)
        self.assertEqual(specs[0]["block_stride_bytes"], page)
        # The engine derives the conv layout at the unifier's block size.
        scaled = rt.derive_layout(layout_config(block_size=specs[0]["block_size"]))
        self.assertEqual(scaled["block_size"], 2 * W)
        self.assertEqual(scaled["page_bytes"], page)
        rt.Manager(layout_config(block_size=2 * W), num_blocks=8)
        # Not a multiple: padded through the block stride, N stays.
        uneven = rt.attention_cache_spec("uneven", 48, 8, 128)
        page, specs = rt.unify_page_sizes([sconv, uneven])
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


class ZeroCopyStepBuffersTest(unittest.TestCase):
    """The step buffers are numpy arrays the runtime writes in place."""

    def setUp(self):
        self.manager = rt.Manager(layout_config(), num_blocks=64)
        self.buffers = self.manager.step_buffers(
            max_rows=4, num_cols=16, max_tokens=32, max_copies=4)

    def tearDown(self):
        self.manager.close()

    def test_dtypes_shapes_and_pointers(self):
        b = self.buffers
        expected = {"query_start_loc": (np.int32, (5,)),
                    "num_computed": (np.int32, (4,)),
                    "block_table": (np.int32, (4, 16)),
                    "slot_mapping": (np.int64, (32,)),
                    "block_copies": (np.int32, (4, 2))}
        pointers = b.data_pointers()
        for name, (dtype, shape) in expected.items():
            array = getattr(b, name)
            self.assertEqual(array.dtype, dtype, name)
            self.assertEqual(array.shape, shape, name)
            self.assertTrue(array.flags.c_contiguous, name)
            # The array's data is the memory the runtime was given.
            self.assertEqual(array.ctypes.data, pointers[name], name)
            self.assertEqual(array.ctypes.data % rt.BUFFER_ALIGNMENT, 0, name)

    def test_views_see_the_next_build(self):
        seq = self.manager.add_sequence(list(range(1, 7)))
        self.manager.schedule(seq, 6)
        step = self.buffers.build([seq], num_rows=2, num_padded_tokens=8)
        # Step fields are views of the buffers, not copies.
        for name in ("query_start_loc", "num_computed", "block_table",
                     "slot_mapping"):
            view = getattr(step, name)
            self.assertTrue(np.shares_memory(view, getattr(self.buffers,
                                                           name)), name)
            self.assertEqual(view.ctypes.data,
                             self.buffers.data_pointers()[name], name)
        self.assertEqual(step.query_start_loc.tolist(), [0, 6, 6])
        self.assertEqual(step.block_table.shape, (2, 16))
        held = self.buffers.query_start_loc  # an engine's reference
        self.manager.commit(seq, 6, [7])
        self.manager.schedule(seq, 1)
        self.buffers.build([seq])
        # The same array object shows the new step: nothing to re-fetch.
        self.assertEqual(held[:2].tolist(), [0, 1])
        self.assertEqual(self.buffers.num_computed[0], 6)

    @unittest.skipIf(torch is None, "torch is not installed (optional)")
    def test_torch_from_numpy_shares_memory(self):
        tensors = {name: torch.from_numpy(getattr(self.buffers, name))
                   for name in ("query_start_loc", "num_computed",
                                "block_table", "slot_mapping",
                                "block_copies", "token_seq")}
        self.assertEqual(tensors["slot_mapping"].dtype, torch.int64)
        self.assertEqual(tensors["block_table"].dtype, torch.int32)
        self.assertEqual(tuple(tensors["block_table"].shape), (4, 16))
        for name, tensor in tensors.items():
            self.assertEqual(tensor.data_ptr(),
                             self.buffers.data_pointers()[name], name)
        # The tensors made once see every later build: no copy anywhere.
        seq = self.manager.add_sequence(list(range(1, 7)))
        self.manager.schedule(seq, 6)
        step = self.buffers.build([seq])
        self.assertEqual(tensors["query_start_loc"][:2].tolist(), [0, 6])
        self.assertEqual(tensors["slot_mapping"][:6].tolist(),
                         step.slot_mapping[:6].tolist())
        self.assertEqual(tensors["block_table"][0].tolist(),
                         step.block_table[0].tolist())
        self.manager.commit(seq, 6, [7])
        self.manager.schedule(seq, 1)
        self.buffers.build([seq])
        self.assertEqual(tensors["query_start_loc"][:2].tolist(), [0, 1])
        self.assertEqual(int(tensors["num_computed"][0]), 6)

    def test_views_outlive_the_manager(self):
        table = self.buffers.block_table
        self.manager.close()
        self.assertEqual(table.shape, (4, 16))
        table.sum()  # still numpy's memory: readable
        with self.assertRaises(rt.InklingError) as caught:
            self.buffers.build([])
        self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)
        self.assertIn("closed", caught.exception.message)

    def test_bad_buffer_sizes(self):
        with self.assertRaises(rt.InklingError) as caught:
            self.manager.step_buffers(max_rows=-1, num_cols=4, max_tokens=4)
        self.assertIn("max_rows = -1", caught.exception.message)


class ClosedManagerTest(unittest.TestCase):
    def test_every_call_after_close_is_refused(self):
        manager = rt.Manager(layout_config(), num_blocks=16)
        seq = manager.add_sequence([1, 2, 3])
        manager.close()
        manager.close()  # idempotent
        calls = [lambda: manager.add_sequence([1]),
                 lambda: manager.schedule(seq, 1),
                 lambda: manager.commit(seq, 0),
                 lambda: manager.schedule_batch([seq], [1]),
                 lambda: manager.sequence_info(seq),
                 lambda: manager.stats(),
                 lambda: manager.finish(seq),
                 lambda: manager.step_buffers(1, 1, 1)]
        for call in calls:
            with self.assertRaises(rt.InklingError) as caught:
                call()
            self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)
            self.assertIn("the manager is closed", str(caught.exception))


class SharedBetweenThreadsTest(unittest.TestCase):
    """One manager shared by several threads (issue 13 item 7): calls are
    serialized by the manager's lock; a close racing with calls ends them
    with a clear error, never a crash or a double free."""

    def test_threads_drive_one_manager(self):
        manager = rt.Manager(layout_config(), num_blocks=256)
        buffers = manager.step_buffers(max_rows=4, num_cols=32,
                                       max_tokens=64)
        errors = []

        def engine(index):
            try:
                for round_ in range(30):
                    seq = manager.add_sequence([index, round_, 1, 2, 3])
                    manager.schedule(seq, 5)
                    step = buffers.build([seq])
                    self.assertEqual(step.info.num_tokens, 5)
                    manager.commit(seq, 5, [9])
                    manager.finish(seq)
                    manager.check_invariants()
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=engine, args=(i,))
                   for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])
        self.assertEqual(manager.stats().num_sequences, 0)
        manager.close()

    def test_close_races_with_calls(self):
        for _ in range(20):
            manager = rt.Manager(layout_config(), num_blocks=64)
            buffers = manager.step_buffers(max_rows=2, num_cols=16,
                                           max_tokens=16)
            unexpected = []
            start = threading.Barrier(5)

            def caller():
                start.wait()
                try:
                    for _ in range(200):
                        seq = manager.add_sequence([1, 2])
                        manager.schedule(seq, 2)
                        buffers.build([seq])
                        manager.commit(seq, 2, [3])
                        manager.finish(seq)
                except rt.InklingError as error:
                    if error.code != rt.FAILED_PRECONDITION:
                        unexpected.append(error)
                except Exception as error:  # noqa: BLE001
                    unexpected.append(error)

            def closer():
                start.wait()
                manager.close()

            threads = [threading.Thread(target=caller) for _ in range(3)]
            threads += [threading.Thread(target=closer) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(unexpected, [])
            self.assertTrue(manager.closed)


if __name__ == "__main__":
    unittest.main()
