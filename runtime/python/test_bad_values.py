"""unittest: values the C API cannot take end in InklingError before ctypes
sees them, and handles outliving their owner are refused (issue 28, items
3, 4, 6 and 8; docs/bad-inputs.md, "Python bindings: values and handles").

Run like test_inkling_runtime.py (INKLING_RUNTIME_LIB set)."""

import ctypes
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inkling_runtime as rt  # noqa: E402


def small_config(**kw):
    return rt.LayoutConfig(kv_heads=2, head_dim=8, hidden=16, kernel=4, **kw)


class IntegerRangeTest(unittest.TestCase):
    """ctypes wraps an int64 modulo 2^64: schedule(seq, 2**64 + 3) once
    scheduled 3 tokens. Every integer is checked first."""

    def setUp(self):
        self.manager = rt.Manager(small_config(), 64)
        self.seq = self.manager.add_sequence(np.arange(8, dtype=np.int32))

    def tearDown(self):
        self.manager.close()

    def assertRefused(self, call, *words):
        with self.assertRaises(rt.TokenError) as caught:
            call()
        error = caught.exception
        self.assertIsInstance(error, rt.InklingError)
        self.assertIsInstance(error, ValueError)
        self.assertEqual(error.code, rt.INVALID_ARGUMENT)
        for word in words:
            self.assertIn(word, str(error))
        self.assertNotIn("-9223372036854775808", str(error))
        return error

    def test_counts_that_wrap_are_refused_and_change_nothing(self):
        m, seq = self.manager, self.seq
        self.assertRefused(lambda: m.schedule(seq, 2**64 + 3),
                           "num_tokens (18446744073709551619) does not fit "
                           "int64, the C API's type ([-2^63, 2^63 - 1])")
        self.assertEqual(m.sequence_info(seq).num_scheduled, 0)
        self.assertRefused(lambda: m.schedule_ahead(seq, 2**64 + 1),
                           "num_tokens")
        self.assertRefused(lambda: m.schedule(2**63, 1),
                           "sequence (9223372036854775808)")
        m.schedule(seq, 8)
        self.assertRefused(lambda: m.commit(seq, 2**64 + 8), "accepted")
        self.assertEqual(m.sequence_info(seq).num_scheduled, 8)
        m.commit(seq, 8)
        self.assertRefused(lambda: m.preempt(-2**63 - 1), "sequence")
        self.assertRefused(lambda: m.finish(2**70), "sequence")
        self.assertRefused(lambda: m.fork(2**64), "parent")
        self.assertRefused(lambda: m.sequence_info(2**64), "sequence")
        self.assertRefused(lambda: m.resume(seq, start=2**64), "start")

    def test_other_integers(self):
        m = self.manager
        tokens = np.arange(8, dtype=np.int32)
        self.assertRefused(
            lambda: m.set_prefix_policy("snapshots", 2**64 + 8),
            "snapshot_every (18446744073709551624)")
        self.assertRefused(lambda: m.add_sequence(tokens, start=2**64),
                           "start (18446744073709551616)")
        self.assertRefused(lambda: m.add_sequence([1, 2], start=1.5),
                           "start = 1.5: expected an integer")
        # A cache point of 2^63 is named as the positive number it is.
        self.assertRefused(lambda: m.add_sequence(tokens,
                                                  cache_points=[2**63]),
                           "9223372036854775808")
        self.assertRefused(lambda: m.longest_cached_prefix(tokens, 2**64),
                           "max_length")
        self.assertRefused(lambda: m.admission(2**64), "num_tokens")
        self.assertRefused(lambda: m.admission(8, watermark_blocks=2**63),
                           "watermark_blocks")
        self.assertRefused(
            lambda: m.sequence_longest_cached_prefix(self.seq, 2**64),
            "max_length")
        self.assertRefused(lambda: rt.Manager(small_config(), 2**64 + 64),
                           "num_blocks (18446744073709551680)")
        self.assertRefused(lambda: rt.Manager(small_config(), 64,
                                              lookahead=2**64),
                           "lookahead")
        self.assertRefused(lambda: rt.Manager(small_config(), 64,
                                              prefix_seed=-1),
                           "prefix_seed (-1) does not fit uint64")
        self.assertRefused(lambda: rt.Manager("layout", 64), "LayoutConfig")
        self.assertRefused(lambda: small_config(block_size=2**64 + 4),
                           "block_size")
        self.assertRefused(
            lambda: rt.LayoutConfig(2**64 + 2, 8, 16, kernel=4), "kv_heads")
        self.assertRefused(lambda: small_config(element_type=None),
                           "element_type = None: expected a str")

    def test_build_counts_on_both_paths(self):
        m = self.manager
        buffers = m.step_buffers(max_rows=4, num_cols=16, max_tokens=64)
        m.schedule(self.seq, 8)
        for ids in (np.array([self.seq], np.int64), [self.seq]):
            self.assertRefused(lambda: buffers.build(ids, num_rows=2**64),
                               "num_rows (18446744073709551616)")
            self.assertRefused(
                lambda: buffers.build(ids, num_padded_tokens=2**64 + 9),
                "num_padded_tokens")
            self.assertRefused(lambda: buffers.build(ids, num_rows="2"),
                               "num_rows = '2'")
        self.assertEqual(buffers.build([self.seq]).info.num_tokens, 8)
        with self.assertRaises(rt.InklingError):
            m.step_buffers(max_rows=True, num_cols=16, max_tokens=64)
        # A table the runtime would refuse is refused before allocating it.
        with self.assertRaises(rt.InklingError) as caught:
            m.step_buffers(max_rows=1 << 30, num_cols=1 << 30, max_tokens=8)
        self.assertIn("block table of 1073741824 x 1073741824 entries is "
                      "too large", str(caught.exception))


class WrongTypesTest(unittest.TestCase):
    """A str as extra keys and None as the policy raised TypeError and
    AttributeError: every error of the module is an InklingError."""

    def test_manager_arguments(self):
        with rt.Manager(small_config(), 64) as m:
            for call, words in (
                    (lambda: m.add_sequence([1, 2, 3], extra_keys="salt"),
                     "extra_keys = 'salt': expected bytes (a str must be "
                     "encoded first)"),
                    (lambda: m.longest_cached_prefix([1, 2], 2,
                                                     extra_keys="salt"),
                     "extra_keys"),
                    (lambda: m.set_prefix_policy(None),
                     "prefix policy = None: expected a str"),
                    (lambda: m.set_prefix_policy(b"window"),
                     "prefix policy")):
                with self.assertRaises(rt.InklingError) as caught:
                    call()
                self.assertIn(words, str(caught.exception))
            # bytes-likes are keys.
            seq = m.add_sequence([1, 2, 3], extra_keys=bytearray(b"salt"))
            self.assertGreaterEqual(seq, 0)

    def test_cache_plan_arguments(self):
        with rt.CacheRegistry() as registry:
            for call in (lambda: registry.add_sconv(None, small_config()),
                         lambda: registry.add_sconv("a", "not a config"),
                         lambda: registry.add_sconv("a", small_config(),
                                                    page_bytes=2**64),
                         lambda: registry.add_attention("b", 2**64, 8, 128),
                         lambda: registry.plan(2**63)):
                with self.assertRaises(rt.InklingError):
                    call()
            registry.add_sconv("a", small_config())
            plan = registry.plan(1 << 20)
            with self.assertRaises(rt.InklingError) as caught:
                plan.layer("missing")
            self.assertIsInstance(caught.exception, KeyError)
            self.assertEqual(caught.exception.code, rt.NOT_FOUND)
            with self.assertRaises(rt.InklingError):
                plan.numpy_views([np.zeros(3, np.int32)])
        with self.assertRaises(rt.InklingError) as caught:
            registry.plan(1 << 20)
        self.assertEqual(caught.exception.code, rt.FAILED_PRECONDITION)
        for call in (lambda: rt.sconv_cache_spec(3, small_config()),
                     lambda: rt.unify_page_sizes(["spec"]),
                     lambda: rt.rank_layouts("config"),
                     lambda: rt.check_rank_tiling(small_config(), [1]),
                     lambda: rt.derive_layout(None),
                     lambda: rt.attention_cache_spec("a", 2**64, 8, 128)):
            with self.assertRaises(rt.InklingError):
                call()
        # A tp the layout refuses is the runtime's error, not a huge array.
        with self.assertRaises(rt.InklingError) as caught:
            rt.rank_layouts(small_config(tp=2**40))
        self.assertIn("tp", caught.exception.message)


class StatusNamesTest(unittest.TestCase):
    def test_names_are_the_c_table(self):
        lib = rt.load()
        for code in range(rt.OK, rt.INTERNAL + 1):
            self.assertEqual(rt.status_name(code),
                             lib.inkling_status_name(code).decode())
        self.assertEqual(str(rt.InklingError(rt.NOT_FOUND, "x")),
                         "not found: x")


class StaleHandleTest(unittest.TestCase):
    """Step buffers made for a destroyed manager, used with a manager
    created at the same address: a clear status, never a write (the C
    check compares the managers' ids, not their addresses)."""

    def test_buffers_of_a_destroyed_manager(self):
        lib = rt.load()
        spec_buffers = rt.Manager(small_config(), 64)  # arrays and spec
        storage = spec_buffers.step_buffers(4, 64, 64)
        spec = rt._manager._StepBufferSpec(
            *(storage._storage[name].ctypes.data_as(ctypes.POINTER(ctype))
              for name, ctype in (("query_start_loc", ctypes.c_int32),
                                  ("num_computed", ctypes.c_int32),
                                  ("block_table", ctypes.c_int32),
                                  ("slot_mapping", ctypes.c_int64),
                                  ("block_copies", ctypes.c_int32))),
            4, 64, 64, 4,
            storage._storage["token_seq"].ctypes.data_as(
                ctypes.POINTER(ctypes.c_int32)))

        def create(kernel, block_size):
            config = rt._native._ManagerConfig(
                rt.LayoutConfig(2, 8, 16, kernel=kernel,
                                block_size=block_size), 256, 0, 1, 0)
            handle = ctypes.c_void_p()
            error = ctypes.create_string_buffer(256)
            self.assertEqual(lib.inkling_manager_create(
                ctypes.byref(config), ctypes.byref(handle), error, 256),
                rt.OK, error.value)
            return handle

        first = create(2, 16)
        buffers = ctypes.c_void_p()
        self.assertEqual(lib.inkling_step_buffers_create(
            first, ctypes.byref(spec), ctypes.byref(buffers)), rt.OK)
        address = first.value
        lib.inkling_manager_destroy(first)
        # Long windows (W = 8, N = 1) at the old address when the allocator
        # gives it back.
        others, second = [], None
        for _ in range(64):
            handle = create(8, 1)
            if handle.value == address:
                second = handle
                break
            others.append(handle)
        if second is None:
            second = others.pop()
        for handle in others:
            lib.inkling_manager_destroy(handle)
        seq = ctypes.c_int64()
        tokens = np.arange(40, dtype=np.int32)
        self.assertEqual(lib.inkling_add_sequence(
            second, tokens.ctypes.data, 40, 0, ctypes.byref(seq)), rt.OK)
        self.assertEqual(lib.inkling_schedule(second, seq.value, 40), rt.OK)
        ids = np.array([seq.value], np.int64)
        status = lib.inkling_build_step(second, buffers, ids.ctypes.data, 1,
                                        0, 0, None)
        self.assertEqual(status, rt.INVALID_ARGUMENT)
        self.assertIn(b"created for another manager",
                      lib.inkling_manager_last_error(second))
        lib.inkling_step_buffers_destroy(buffers)
        lib.inkling_manager_destroy(second)
        spec_buffers.close()

    def test_closed_manager_buffers(self):
        manager = rt.Manager(small_config(), 64)
        buffers = manager.step_buffers(4, 16, 64)
        manager.close()
        with rt.Manager(small_config(), 64) as other:
            other.add_sequence([1, 2, 3])
            for ids in ([0], np.array([0], np.int64)):
                with self.assertRaises(rt.InklingError) as caught:
                    buffers.build(ids)
                self.assertEqual(caught.exception.code,
                                 rt.FAILED_PRECONDITION)


class CrossLayerAlignmentTest(unittest.TestCase):
    """Pages that are not a multiple of 16 bytes (N = 1, 3 at D = 4): the
    cross-layer plan pads them, so every layer's view starts 16-byte
    aligned (the kernels' base alignment)."""

    def test_views_start_aligned(self):
        for block_size, page, padded in ((1, 8, 16), (3, 24, 32)):
            config = rt.LayoutConfig(1, 1, 1, kernel=2, block_size=block_size)
            with rt.CacheRegistry() as registry:
                for name in ("l0", "l1", "l2"):
                    registry.add_sconv(name, config)
                plan = registry.plan(3 * padded * 10, cross_layer=True)
            self.assertEqual(plan.page_bytes, padded)
            self.assertEqual([v.byte_offset for v in plan.layers],
                             [0, padded, 2 * padded])
            self.assertEqual({v.page_bytes for v in plan.layers}, {page})
            self.assertEqual({v.adjustment for v in plan.layers}, {"padded"})
            buffers = [rt.aligned_empty(plan.tensor_bytes[0], np.uint8)]
            for name, view in plan.numpy_views(buffers).items():
                self.assertEqual(view.ctypes.data % 16, 0, name)


if __name__ == "__main__":
    unittest.main()
