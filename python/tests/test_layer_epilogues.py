"""inkling.Layer and `inkling-run --replay` on a layer with epilogues
(examples/small_layer_epilogues.mlir, docs/Design.md section 8): the KV
write at the attention slots (k_norm on K), the residual add and the
hidden-row RMSNorm, with the MLP path reading the ATTN path's sum h1; and
the layer ABI's checks of the new arguments.

The data makes every expected value exact without a reference: zero conv
weights (a residual conv then gives y = x), rows of one value c (their
RMSNorm is sign(c) * weight in bf16), residuals chosen so that each sum row
is one value. The bit-exact check on random data is inkling-run's
(test/tools/inkling-run/epilogues.mlir, against
runtime/lib/EpilogueReference.cpp).
"""

import os
import subprocess
import tempfile
import unittest

import numpy as np

import inkling

EXAMPLES = os.environ.get("INKLING_EXAMPLES_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
LAYER = os.path.join(EXAMPLES, "small_layer_epilogues.mlir")
TOOL = os.environ.get("INKLING_RUN_TOOL")

try:
    import torch
except ImportError:  # pragma: no cover - depends on the interpreter
    if os.environ.get("INKLING_REQUIRE_TORCH"):
        raise
    torch = None

# H 2, w 8 (k, v) and 16-wide hidden rows (attn, mlp); N 4, a 512-byte
# page, 8 conv blocks; KV caches of 4 blocks of 8 tokens. Two sequences: 3
# tokens at positions 5..7 (attention block 1), 2 at positions 0..1
# (attention block 3).
NUM_BLOCKS, PAGE, KV_BLOCKS, BS, H = 8, 512, 4, 8, 2
QSL = np.array([0, 3, 5], np.int32)
NC = np.array([5, 0], np.int32)
BT = np.array([[3, 2], [4, 5]], np.int32)
SLOTS = np.array([2 * 4 + 1, 2 * 4 + 2, 2 * 4 + 3, 4 * 4, 4 * 4 + 1],
                 np.int64)
ATTN_SLOTS = np.array([8 + 5, 8 + 6, 8 + 7, 24, 25], np.int64)
T = 5
POISON = 0xFFFF


def bf16(values):
    return (np.asarray(values, np.float32).view(np.uint32) >> 16) \
        .astype(np.uint16)


def floats(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


def make_arrays(rng):
    """The call's arrays and what the layer must write."""
    c = rng.choice([-3.0, -2.0, 2.0, 3.0, 4.0], size=(T, H))
    hk = np.repeat(c[:, :, None], 8, axis=2)           # x_k rows of one value
    w_k = rng.integers(1, 5, 8).astype(np.float32)
    w_attn = rng.integers(1, 5, 16).astype(np.float32)
    w_mlp = rng.integers(1, 5, 16).astype(np.float32)
    x_attn = rng.integers(-4, 5, (T, 16)).astype(np.float32)
    h1 = rng.choice([-5.0, 6.0], size=(T, 1)) * np.ones((1, 16))
    h2 = rng.choice([-7.0, 8.0], size=(T, 1)) * np.ones((1, 16))
    arrays = {
        "cache": np.zeros(NUM_BLOCKS * PAGE, np.uint8),
        "query_start_loc": QSL.copy(), "num_computed": NC.copy(),
        "block_table": BT.copy(), "slot_mapping": SLOTS.copy(),
        "input_k": bf16(hk),
        "input_v": bf16(rng.integers(-8, 9, (T, H, 8))),
        "input_attn": bf16(x_attn),
        # h2 = h1 + y_mlp (y = x): one value per row.
        "input_mlp": bf16(h2 - h1),
        "norm_weight_k": bf16(w_k),
        "kv_cache_k": np.full((KV_BLOCKS, BS, H, 8), POISON, np.uint16),
        "kv_cache_v": np.full((KV_BLOCKS, BS, H, 8), POISON, np.uint16),
        "attn_slot_mapping": ATTN_SLOTS.copy(),
        "residual_attn": bf16(h1 - x_attn),
        "norm_weight_attn": bf16(w_attn), "norm_weight_mlp": bf16(w_mlp),
    }
    for name in ("k", "v", "attn", "mlp"):
        arrays["weights_" + name] = np.zeros((16, 4), np.uint16)
    for name in ("sum_attn", "normed_attn", "sum_mlp", "normed_mlp"):
        arrays[name] = np.zeros((T, 16), np.uint16)
    expected = {
        "k_rows": bf16(np.sign(hk) * w_k),
        "v_rows": arrays["input_v"],
        "sum_attn": bf16(h1), "normed_attn": bf16(np.sign(h1) * w_attn),
        "sum_mlp": bf16(h2), "normed_mlp": bf16(np.sign(h2) * w_mlp),
    }
    return arrays, expected


class EpilogueLayerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.layer = inkling.Layer.from_file(LAYER)

    @classmethod
    def tearDownClass(cls):
        cls.layer.close()

    def check_outputs(self, arrays, expected):
        for cache, rows in (("kv_cache_k", "k_rows"), ("kv_cache_v", "v_rows")):
            kv = np.asarray(arrays[cache]).reshape(KV_BLOCKS * BS, H, 8)
            np.testing.assert_array_equal(kv[ATTN_SLOTS], expected[rows],
                                          err_msg=cache)
            # Rows no slot addresses stay as they were.
            others = np.setdiff1d(np.arange(KV_BLOCKS * BS), ATTN_SLOTS)
            self.assertTrue((kv[others] == POISON).all(), cache)
        for name in ("sum_attn", "normed_attn", "sum_mlp", "normed_mlp"):
            np.testing.assert_array_equal(np.asarray(arrays[name]),
                                          expected[name], err_msg=name)

    def test_argument_roles(self):
        roles = {a.name: (a.role, a.stream) for a in self.layer.args}
        self.assertEqual(roles["kv_cache_k"], ("kv_cache", "k"))
        self.assertEqual(roles["attn_slot_mapping"][0], "attn_slot_mapping")
        self.assertEqual(roles["norm_weight_attn"], ("norm_weight", "attn"))
        self.assertEqual(roles["residual_attn"], ("residual", "attn"))
        # h1: the ATTN path's sum, which the MLP path reads: one argument.
        self.assertEqual(roles["sum_attn"], ("sum", "attn"))
        self.assertNotIn("residual_mlp", roles)

    def test_call_writes_the_kv_rows_sums_and_norms(self):
        arrays, expected = make_arrays(np.random.default_rng(1))
        self.layer(**arrays)
        self.check_outputs(arrays, expected)

    def test_slot_minus_one_stores_nothing(self):
        arrays, expected = make_arrays(np.random.default_rng(2))
        arrays["attn_slot_mapping"][3] = -1
        self.layer(**arrays)
        kv = arrays["kv_cache_v"].reshape(KV_BLOCKS * BS, H, 8)
        self.assertTrue((kv[24] == POISON).all())
        np.testing.assert_array_equal(kv[25], expected["v_rows"][4])

    @unittest.skipUnless(torch, "torch is not installed")
    def test_torch_tensors(self):
        arrays, expected = make_arrays(np.random.default_rng(3))
        tensors = {}
        for name, value in arrays.items():
            if value.dtype == np.uint16:
                tensor = torch.from_numpy(value.view(np.int16)) \
                    .view(torch.bfloat16)
            else:
                tensor = torch.from_numpy(value)
            tensors[name] = tensor
        self.layer(**tensors)
        for name, tensor in tensors.items():
            if tensor.dtype == torch.bfloat16:
                arrays[name] = tensor.view(torch.int16).numpy().view(np.uint16)
        self.check_outputs(arrays, expected)

    def bad(self, change, message):
        arrays, _ = make_arrays(np.random.default_rng(4))
        change(arrays)
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**arrays)
        self.assertEqual(caught.exception.code, inkling.INVALID_ARGUMENT)
        self.assertIn(message, caught.exception.message)

    def test_bad_arguments_are_named(self):
        def small_block(a):
            a["kv_cache_k"] = np.zeros((KV_BLOCKS, 4, H, 8), np.uint16)
        self.bad(small_block, "argument 14 (kv_cache_k): shape [4, 4, 2, 8], "
                 "expected [?, 8, 2, 8]")

        def fewer_blocks(a):
            a["kv_cache_v"] = np.zeros((2, BS, H, 8), np.uint16)
        self.bad(fewer_blocks, "argument 15 (kv_cache_v): 2 blocks, but "
                 "argument 14 (kv_cache_k) has 4")

        def out_of_range(a):
            a["attn_slot_mapping"][1] = KV_BLOCKS * BS
        self.bad(out_of_range, "argument 16 (attn_slot_mapping)[1] = 32: not "
                 "-1 or a slot of the KV caches (4 blocks of 8)")

        def twice(a):
            a["attn_slot_mapping"][4] = a["attn_slot_mapping"][0]
        self.bad(twice, "argument 16 (attn_slot_mapping): slot 13 appears "
                 "for tokens 0 and 4")

        def short(a):
            a["attn_slot_mapping"] = a["attn_slot_mapping"][:3]
        self.bad(short, "argument 16 (attn_slot_mapping): 3 entries, fewer "
                 "than the 5 tokens")

        def norm_width(a):
            a["norm_weight_attn"] = np.zeros(8, np.uint16)
        self.bad(norm_width, "argument 18 (norm_weight_attn): shape [8], "
                 "expected [16]")

        # Written buffers overlap nothing: the residual read in place of the
        # sum, one cache for K and V.
        def residual_is_sum(a):
            a["sum_attn"] = a["residual_attn"]
        self.bad(residual_is_sum, "argument 20 (sum_attn): overlaps argument 17 "
                 "(residual_attn)")

        def one_kv_cache(a):
            a["kv_cache_v"] = a["kv_cache_k"]
        self.bad(one_kv_cache, "argument 15 (kv_cache_v): overlaps argument "
                 "14 (kv_cache_k)")

    @unittest.skipUnless(TOOL, "INKLING_RUN_TOOL (inkling-run) is not set")
    def test_replay_matches_the_call(self):
        arrays, expected = make_arrays(np.random.default_rng(5))
        called = {k: v.copy() for k, v in arrays.items()}
        self.layer(**called)
        with tempfile.TemporaryDirectory() as tmp:
            def save(name, value):
                path = os.path.join(tmp, name + ".npy")
                np.save(path, value)
                return "%s=%s" % (name, path)
            meta = [save("cache", arrays["cache"]),
                    save("query_start_loc", QSL), save("num_computed", NC),
                    save("block_table", BT), save("slot_mapping", SLOTS)]
            # Op 0: the K conv with its k_norm and KV write.
            k = meta + [save("x", arrays["input_k"]),
                        save("weights", arrays["weights_k"]),
                        save("norm_weight", arrays["norm_weight_k"]),
                        save("kv_cache", arrays["kv_cache_k"]),
                        save("attn_slot_mapping", ATTN_SLOTS)]
            out = os.path.join(tmp, "k")
            run = subprocess.run(
                [TOOL, LAYER, "--replay=0", "--inputs=" + ",".join(k),
                 "--outputs=" + out], capture_output=True, text=True,
                env=tool_env())
            self.assertEqual(run.returncode, 0, run.stderr)
            np.testing.assert_array_equal(
                np.load(os.path.join(out, "kv_cache.npy")),
                called["kv_cache_k"])
            # Op 6: the MLP conv, whose residual is the ATTN path's h1.
            mlp = meta + [save("x", arrays["input_mlp"]),
                          save("weights", arrays["weights_mlp"]),
                          save("residual", called["sum_attn"]),
                          save("norm_weight", arrays["norm_weight_mlp"])]
            out = os.path.join(tmp, "mlp")
            run = subprocess.run(
                [TOOL, LAYER, "--replay=6", "--inputs=" + ",".join(mlp),
                 "--outputs=" + out], capture_output=True, text=True,
                env=tool_env())
            self.assertEqual(run.returncode, 0, run.stderr)
            for name in ("sum", "normed"):
                np.testing.assert_array_equal(
                    np.load(os.path.join(out, name + ".npy")),
                    expected[name + "_mlp"], err_msg=name)


FAKE_CUDA = os.environ.get("INKLING_FAKE_CUDA_LIBRARY")


@unittest.skipUnless(FAKE_CUDA, "INKLING_FAKE_CUDA_LIBRARY is not set (ctest "
                     "sets it to the runtime's fake CUDA driver)")
class EpilogueLayerFakeGpuTest(unittest.TestCase):
    """The layer's GPU kernels on the executing fake driver, fused (3
    kernels) and unfused (13: the conv outputs and the normed K in scratch
    buffers the launcher allocates on the device): the same KV rows, sums
    and norms as on the CPU."""

    @classmethod
    def setUpClass(cls):
        cls.cuda = inkling.Cuda(FAKE_CUDA)

    @classmethod
    def tearDownClass(cls):
        cls.cuda.close()

    def test_fused_and_unfused_kernels(self):
        for fusion in ("conv-insert", "none"):
            with self.subTest(fusion=fusion), \
                    inkling.Layer.from_file(LAYER, device="cuda",
                                            cuda=self.cuda,
                                            fusion=fusion) as layer:
                arrays, expected = make_arrays(np.random.default_rng(6))
                device = {name: self.cuda.to_device(value)
                          for name, value in arrays.items()}
                try:
                    layer(**device)
                    # Twice: the scratch buffers are kept between calls.
                    layer(**device)
                    # Unfused: y of the 4 convs and the normed K, T rows.
                    scratch = T * 2 * (3 * H * 8 + 2 * 16)
                    self.assertEqual(layer.scratch_bytes,
                                     scratch if fusion == "none" else 0)
                    layer.release_scratch()
                    self.assertEqual(layer.scratch_bytes, 0)
                    layer(**device)
                    for name, array in device.items():
                        arrays[name] = array.numpy()
                finally:
                    for array in device.values():
                        array.close()
                EpilogueLayerTest.check_outputs(self, arrays, expected)


def tool_env():
    # inkling-run carries its own sanitizer runtime.
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


if __name__ == "__main__":
    unittest.main()
