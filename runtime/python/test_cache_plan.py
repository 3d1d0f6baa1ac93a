"""unittest for the cache plan through the ctypes module: a mixed model
(sconv at the real layout, attention at block sizes 16 and 64) against
hand-computed views, and numpy views of one allocation per plan tensor
(skipped without numpy; ctest also runs it with Debian's python3, which has
it)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inkling_runtime as rt  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the interpreter
    if os.environ.get("INKLING_REQUIRE_NUMPY"):
        raise
    np = None
try:
    import torch
except ImportError:  # pragma: no cover - depends on the interpreter
    if os.environ.get("INKLING_REQUIRE_TORCH"):
        raise
    torch = None

MIB = 1 << 20


def mixed_registry():
    # Sconv page 8 * 4 * 2048 * 2 = 131072 at N = 4; attention at block 16
    # (65536) and 64 (262144, the largest): sconv N -> 8, attention 16 -> 64.
    registry = rt.CacheRegistry()
    config = rt.LayoutConfig(8, 128, 4096, kernel=4)
    registry.add_sconv("layers.0.sconv", config)
    registry.add_attention("layers.0.attn", 16, 8, 128)
    registry.add_sconv("layers.1.sconv", config)
    registry.add_attention("layers.1.attn", 64, 8, 128)
    return registry


class CachePlanTest(unittest.TestCase):
    def test_per_layer(self):
        plan = mixed_registry().plan(64 * MIB + 7)
        self.assertEqual(plan.layout, "per-layer")
        self.assertEqual(plan.page_bytes, 262144)
        self.assertEqual(plan.bytes_per_block, 4 * 262144)
        self.assertEqual(plan.num_blocks, 64)
        self.assertEqual(plan.tensor_bytes, [64 * 262144] * 4)
        self.assertEqual(plan.shared_by[2], ["layers.1.sconv"])
        s = plan.layer("layers.1.sconv")
        self.assertEqual((s.kind, s.tensor, s.byte_offset, s.block_size),
                         ("sconv", 2, 0, 8))
        self.assertEqual(s.adjustment, "scaled block size")
        self.assertEqual(s.shape, (64, 8, 8, 2048))
        self.assertEqual(s.strides, (131072, 16384, 2048, 1))
        a = plan.layer("layers.0.attn")
        self.assertEqual((a.kind, a.scale, a.block_size), ("attention", 4, 64))
        self.assertEqual(a.shape, (64, 2, 64, 8, 128))
        self.assertEqual(a.strides, (131072, 65536, 1024, 128, 1))

    def test_cross_layer(self):
        plan = mixed_registry().plan(64 * MIB, cross_layer=True)
        self.assertEqual(plan.layout, "cross-layer")
        self.assertEqual(plan.tensor_bytes, [64 * MIB])
        self.assertEqual(plan.shared_by, [["layers.0.sconv", "layers.0.attn",
                                           "layers.1.sconv", "layers.1.attn"]])
        self.assertEqual([v.byte_offset for v in plan.layers],
                         [0, 262144, 524288, 786432])
        self.assertEqual({v.strides[0] for v in plan.layers}, {524288})

    def test_bad_input_names_the_value(self):
        registry = mixed_registry()
        config = rt.LayoutConfig(8, 128, 4096, kernel=4)
        with self.assertRaises(rt.InklingError) as e:
            registry.add_sconv("layers.0.attn", config)
        self.assertEqual(e.exception.code, rt.INVALID_ARGUMENT)
        self.assertIn("duplicate layer name 'layers.0.attn'", str(e.exception))
        with self.assertRaises(rt.InklingError) as e:
            registry.add_attention("", 16, 8, 128)
        self.assertIn("empty", str(e.exception))
        with self.assertRaises(rt.InklingError) as e:
            registry.plan(2 * MIB - 1)
        self.assertIn("2097151 bytes is below one block per layer plus the "
                      "null block", str(e.exception))
        odd = rt.CacheRegistry()
        odd.add_sconv("sconv", config)
        odd.add_attention("attn3", 16, 3, 128)
        with self.assertRaises(rt.InklingError) as e:
            odd.plan(64 * MIB)
        self.assertIn("'attn3'", str(e.exception))
        self.assertIn("cannot be padded", str(e.exception))
        # State unchanged: the registry still plans, then freezes.
        self.assertEqual(registry.plan(2 * MIB).num_blocks, 2)
        with self.assertRaises(rt.InklingError) as e:
            registry.add_attention("layers.2.attn", 16, 8, 128)
        self.assertEqual(e.exception.code, rt.FAILED_PRECONDITION)
        self.assertIn("'layers.2.attn'", str(e.exception))

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_numpy_views_are_the_plan(self):
        for cross in (False, True):
            plan = mixed_registry().plan(8 * MIB, cross_layer=cross)
            buffers = plan.allocate_numpy()
            views = plan.numpy_views(buffers)
            # Every layer fills its whole view with its own value: no view
            # overlaps another, and each reads back only its own value.
            for i, v in enumerate(plan.layers):
                view = views[v.name]
                self.assertEqual(view.shape, v.shape)
                self.assertEqual(view.dtype, np.uint16)
                self.assertTrue(np.shares_memory(view, buffers[v.tensor]))
                view[...] = i + 1
            for i, v in enumerate(plan.layers):
                self.assertTrue((views[v.name] == i + 1).all(), v.name)
            # Block 3, head 1, token 5, column 7 of layers.1.sconv at its
            # hand-computed byte in its tensor.
            s = plan.layer("layers.1.sconv")
            views[s.name][3, 1, 5, 7] = 0xBEEF
            byte = s.byte_offset + 2 * (3 * s.strides[0] + 1 * 8 * 2048 +
                                        5 * 2048 + 7)
            raw = buffers[s.tensor][byte:byte + 2].view(np.uint16)[0]
            self.assertEqual(raw, 0xBEEF)
            # Every byte of every tensor is some layer's (pages are full).
            self.assertTrue(all((b.view(np.uint16) != 0).all()
                                for b in buffers))
        with self.assertRaises(ValueError):
            plan.numpy_views(buffers[:0])

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_views(self):
        plan = mixed_registry().plan(8 * MIB, cross_layer=True)
        tensors = [torch.zeros(n, dtype=torch.uint8)
                   for n in plan.tensor_bytes]
        views = plan.torch_views(tensors)
        views["layers.1.attn"][1, 0, 0, 0, 0] = 7
        byte = 3 * 262144 + 2 * plan.layer("layers.1.attn").strides[0]
        self.assertEqual(int(tensors[0][byte]), 7)


if __name__ == "__main__":
    unittest.main()
