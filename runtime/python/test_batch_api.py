"""unittest for the batch API at C speed (issue 30): numpy arrays, torch CPU
tensors and buffers through the batch calls, on the compiled fast path
(_inkling_runtime_fast.so next to the library) and on the ctypes path
(INKLING_RUNTIME_NO_FAST=1; ctest runs this file both ways), against the
same calls with lists.

    INKLING_RUNTIME_LIB=build/runtime/libinkling_runtime.so \\
        python3 -m unittest discover -s runtime/python -p test_batch_api.py
"""

import array
import os
import sys
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

N = 4  # block size = kernel


def make_manager(**kwargs):
    manager = rt.Manager(rt.LayoutConfig(8, 128, 4096, kernel=4),
                         num_blocks=256, **kwargs)
    buffers = manager.step_buffers(max_rows=8, num_cols=64, max_tokens=256)
    return manager, buffers


def prompt(length, first=1):
    return list(range(first, first + length))


class FastPathTest(unittest.TestCase):
    def test_fast_path_is_there_when_built(self):
        manager, _ = make_manager()
        self.addCleanup(manager.close)
        if os.environ.get("INKLING_RUNTIME_NO_FAST"):
            self.assertIsNone(manager._fast)
        elif os.environ.get("INKLING_REQUIRE_FAST"):  # ctest: it was built
            self.assertIsNotNone(manager._fast)


class BatchCallsTest(unittest.TestCase):
    """The same engine steps with lists and with arrays give the same state
    and step metadata (catches an argument passed in the wrong place, a
    size taken from the wrong array, a strided array read as contiguous)."""

    def run_engine(self, as_arrays, strided=False):
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        prompts = [prompt(23), prompt(9, 100), prompt(40, 200)]
        seqs = []
        for p in prompts:
            tokens = np.asarray(p, np.int32) if as_arrays else p
            seqs.append(manager.add_sequence(tokens, 0))
        lengths = [len(p) for p in prompts]
        steps = []

        def ids_of(values):
            if not as_arrays:
                return list(values)
            if strided:  # every other entry of a larger array: a copy
                wide = np.zeros(2 * len(values), np.int64)
                wide[::2] = values
                return wide[::2]
            return np.asarray(values, np.int64)

        chunks = [[8, 9, 16], [8, 1, 16], [7, 1, 8], [1, 1, 1]]
        sampled = 500
        for chunk in chunks:
            manager.schedule_batch(ids_of(seqs), ids_of(chunk))
            step = buffers.build(ids_of(seqs))
            steps.append((step.info, step.query_start_loc.tolist(),
                          step.block_table.copy(),
                          step.slot_mapping[:step.info.num_tokens].tolist()))
            appended = []
            for i, n in enumerate(chunk):
                info = manager.sequence_info(seqs[i])
                done = info.num_computed + n >= max(lengths[i],
                                                    info.num_tokens)
                appended.append([sampled + i] if done else [])
            if as_arrays:
                offsets = np.cumsum([0] + [len(a) for a in appended])
                flat = np.asarray([t for a in appended for t in a] or [0],
                                  np.int32)
                manager.commit_batch(ids_of(seqs), ids_of(chunk), flat,
                                     token_offsets=offsets.astype(np.int64))
            else:
                manager.commit_batch(seqs, chunk, appended)
            sampled += 10
        manager.check_invariants()
        infos = [manager.sequence_info(s) for s in seqs]
        return steps, infos

    def assert_same(self, a, b):
        (steps_a, infos_a), (steps_b, infos_b) = a, b
        self.assertEqual(infos_a, infos_b)
        for x, y in zip(steps_a, steps_b):
            self.assertEqual(x[0], y[0])
            self.assertEqual(x[1], y[1])
            np.testing.assert_array_equal(x[2], y[2])
            self.assertEqual(x[3], y[3])

    def test_arrays_equal_lists(self):
        self.assert_same(self.run_engine(False), self.run_engine(True))

    def test_strided_arrays_are_read_as_arrays(self):
        self.assert_same(self.run_engine(False),
                         self.run_engine(True, strided=True))

    def test_lookup_batch_equals_single_lookups(self):
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        shared = prompt(32)
        seq = manager.add_sequence(shared)
        manager.schedule_batch([seq], [32])
        buffers.build([seq])
        manager.commit_batch([seq], [32], [[7]])
        queries = [shared + [900], shared[:17], prompt(12, 50), [], shared]
        limits = [32, 17, 12, 0, 31]
        flat = np.asarray([t for q in queries for t in q], np.int32)
        offsets = np.cumsum([0] + [len(q) for q in queries]).astype(np.int64)
        single = [manager.longest_cached_prefix(q, m)
                  for q, m in zip(queries, limits)]
        self.assertGreater(max(single), 0)
        hits = manager.longest_cached_prefix_batch(
            flat, offsets, np.asarray(limits, np.int64))
        self.assertEqual(hits[:len(queries)].tolist(), single)
        # Lists too, and an `out` array reused.
        out = np.full(8, -5, np.int64)
        result = manager.longest_cached_prefix_batch(
            flat.tolist(), offsets.tolist(), limits, out)
        self.assertIs(result, out)
        self.assertEqual(out[:5].tolist(), single)
        self.assertEqual(out[5:].tolist(), [-5] * 3)

    def test_buffers_and_read_only_arrays(self):
        manager, _ = make_manager()
        self.addCleanup(manager.close)
        tokens = np.arange(1, 11, dtype=np.int32)
        tokens.setflags(write=False)
        a = manager.add_sequence(tokens)
        b = manager.add_sequence(array.array("i", range(1, 11)))
        c = manager.add_sequence(memoryview(array.array("q", range(1, 11))))
        for seq in (a, b, c):
            self.assertEqual(manager.sequence_info(seq).num_tokens, 10)

    def test_add_with_cache_points_and_keys_on_arrays(self):
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        manager.set_prefix_policy("snapshots", 1 << 10)
        tokens = np.asarray(prompt(100), np.int32)
        seq = manager.add_sequence(tokens, 0,
                                   cache_points=np.asarray([41], np.int64),
                                   extra_keys=b"salt")
        manager.schedule_batch([seq], [100])
        buffers.build([seq])
        manager.commit_batch([seq], [100], [[1]])
        # The cache point's boundary 40, under the same keys only.
        self.assertEqual(manager.longest_cached_prefix(tokens, 44,
                                                       extra_keys=b"salt"),
                         40)
        self.assertEqual(manager.longest_cached_prefix(tokens, 44), 0)


class BatchErrorsTest(unittest.TestCase):
    """Every refusal is an InklingError naming the value; nothing changes."""

    def setUp(self):
        self.manager, self.buffers = make_manager()
        self.seq = self.manager.add_sequence(prompt(8))

    def tearDown(self):
        self.manager.close()

    def refuses(self, text, call, *args, **kwargs):
        with self.assertRaises(rt.InklingError) as caught:
            call(*args, **kwargs)
        self.assertIn(text, str(caught.exception))
        self.assertEqual(caught.exception.code, rt.INVALID_ARGUMENT)
        self.assertEqual(self.manager.sequence_info(self.seq).state, "idle")
        return caught.exception

    def test_sizes_and_ranges(self):
        m, seq = self.manager, self.seq
        ids = np.asarray([seq], np.int64)
        self.refuses("1 ids but 2 token counts", m.schedule_batch, ids,
                     np.asarray([1, 2], np.int64))
        self.refuses("token offsets end at 5, past the 1 tokens",
                     m.commit_batch, ids, np.asarray([0], np.int64),
                     np.zeros(1, np.int32),
                     token_offsets=np.asarray([0, 5], np.int64))
        self.refuses("lookup batch: 1 max lengths need 2 token offsets",
                     m.longest_cached_prefix_batch, np.zeros(4, np.int32),
                     np.asarray([0], np.int64), np.asarray([4], np.int64))
        # The runtime's own validation, through the fast path too.
        self.refuses("max length (-1) of lookup entry 0",
                     m.longest_cached_prefix_batch, np.zeros(4, np.int32),
                     np.asarray([0, 4], np.int64),
                     np.asarray([-1], np.int64))
        self.refuses("token offsets [3, 1) of lookup entry 0",
                     m.longest_cached_prefix_batch, np.zeros(4, np.int32),
                     np.asarray([3, 1], np.int64), np.asarray([4], np.int64))

    def test_token_ids_that_do_not_fit(self):
        error = self.refuses("token id 2147483648 does not fit int32",
                             self.manager.add_sequence,
                             np.asarray([1, 2**31], np.int64))
        self.assertIsInstance(error, ValueError)  # as before the batch API
        self.refuses("token ids of dtype float64", self.manager.add_sequence,
                     np.asarray([1.5]))
        self.refuses("expected a sequence, got a scalar",
                     self.manager.add_sequence, np.int32(3))


@unittest.skipIf(torch is None, "torch is not installed (optional)")
class TorchTensorsTest(unittest.TestCase):
    """torch CPU tensors as token ids and ids: shared, not copied."""

    def test_cpu_tensors_are_shared(self):
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        tokens = torch.arange(1, 33, dtype=torch.int32)
        # The address handed to the runtime is the tensor's own.
        self.assertEqual(rt._pointer(tokens, rt._INT32, "tokens")[1],
                         tokens.data_ptr())
        seq = manager.add_sequence(tokens)
        ids = torch.tensor([seq], dtype=torch.int64)
        manager.schedule_batch(ids, torch.tensor([32]))
        step = buffers.build(ids)
        self.assertEqual(step.info.num_tokens, 32)
        manager.commit_batch(ids, torch.tensor([32]),
                             torch.tensor([5], dtype=torch.int32),
                             token_offsets=torch.tensor([0, 1]))
        self.assertEqual(manager.sequence_info(seq).num_computed, 32)
        hits = manager.longest_cached_prefix_batch(
            tokens, torch.tensor([0, 32]), torch.tensor([32]))
        self.assertEqual(hits[0], manager.longest_cached_prefix(tokens, 32))
        # int64 tensors are converted (checked to fit).
        other = manager.add_sequence(torch.arange(1, 9))
        self.assertEqual(manager.sequence_info(other).num_tokens, 8)


class AdmissionTest(unittest.TestCase):
    def test_admission_counts_and_errors(self):
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        first = manager.admission(100, 0, 0)
        self.assertTrue(first.admit)
        self.assertEqual(first.reserved_blocks, 0)
        self.assertEqual(first.free_blocks, 255)
        seq = manager.add_sequence(prompt(20))
        manager.schedule_batch([seq], [20])
        buffers.build([seq])
        manager.commit_batch([seq], [20], [[1]])
        after = manager.admission(100, 0, 0)
        self.assertEqual(after.free_blocks, 255 - 1)  # block 4 holds [17, 20)
        self.assertEqual(after.reserved_blocks, 1)  # its next decode block
        self.assertFalse(manager.admission(100, 0, 254).admit)
        with self.assertRaises(rt.InklingError) as caught:
            manager.admission(8, 8, 0)
        self.assertIn("start position (8)", caught.exception.message)


class EagleRuleTest(unittest.TestCase):
    def test_use_eagle_drops_the_last_matched_block(self):
        # Window policy, W = N = 4: prompts of 8, 16, 12 and 24 tokens cache
        # blocks 1, 3, 2 and 5 of one prefix (SequenceParityTest restated).
        manager, buffers = make_manager()
        self.addCleanup(manager.close)
        manager.set_prefix_policy("window")
        prefix = prompt(28)
        for length in (8, 16, 12, 24):
            seq = manager.add_sequence(prefix[:length])
            manager.schedule_batch([seq], [length])
            buffers.build([seq])
            manager.commit_batch([seq], [length], [[0]])
            manager.finish(seq)
        self.assertEqual(manager.longest_cached_prefix(prefix, 28), 24)
        manager.set_use_eagle(True)
        self.assertEqual(manager.longest_cached_prefix(prefix, 28), 12)
        eagle, _ = make_manager(use_eagle=True)
        self.addCleanup(eagle.close)
        self.assertEqual(eagle.longest_cached_prefix(prefix, 28), 0)


if __name__ == "__main__":
    unittest.main()
