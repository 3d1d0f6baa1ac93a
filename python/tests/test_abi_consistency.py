"""One layer ABI, one validator: the same bad metadata fed to every path
that calls a layer ends in the same error naming the same value.

Paths: the C/Python call (inkling.Layer), `inkling-run --replay` (the
arrays as .npy files) and `inkling-run`'s serving (the value written into
the runtime's step by the hidden --corrupt-metadata option). Each case is
one entry of CASES: the argument, the entry, the value, and the message
the ABI's validator (include/inkling/ExecutionEngine/LayerAbi.h) gives.
Needs INKLING_RUN_TOOL (the inkling-run binary; set by ctest).
"""

import os
import subprocess
import tempfile
import unittest

import numpy as np

import inkling

EXAMPLES = os.environ.get("INKLING_EXAMPLES_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
SMALL_LAYER = os.path.join(EXAMPLES, "small_layer.mlir")
TOOL = os.environ.get("INKLING_RUN_TOOL")

# small_layer.mlir: H 2, w 8 (k, v) and 16 (attn, mlp), D 32, N 4, W 4; a
# 512-byte page. 8 blocks; two sequences: 3 tokens at positions 5..7 (row 0,
# history 2..4 in blocks 3 and 2), 2 tokens at positions 0..1 (row 1).
NUM_BLOCKS, PAGE = 8, 512
QSL = np.array([0, 3, 5], np.int32)
NC = np.array([5, 0], np.int32)
BT = np.array([[3, 2], [4, 5]], np.int32)
SLOTS = np.array([2 * 4 + 1, 2 * 4 + 2, 2 * 4 + 3, 4 * 4, 4 * 4 + 1],
                 np.int64)
T = 5

# (argument, index, value, the validator's message). The serving column:
# None where the case needs this step's values (not the runtime's), else
# the start of the message (a block count follows that depends on the
# plan).
CASES = [
    ("query_start_loc", 0, 1,
     "argument 1 (query_start_loc)[0] = 1, expected 0",
     "argument 1 (query_start_loc)[0] = 1, expected 0"),
    ("query_start_loc", 2, 9,
     "argument 1 (query_start_loc)[2] = 9: must be in [3, 5] "
     "(non-decreasing, at most T)", None),
    ("num_computed", 1, -1,
     "argument 2 (num_computed)[1] = -1 is negative", None),
    ("num_computed", 0, -3,
     "argument 2 (num_computed)[0] = -3 is negative",
     "argument 2 (num_computed)[0] = -3 is negative"),
    ("num_computed", 0, 100,
     "argument 3 (block_table): row 0 has 2 columns, but position 97 of its "
     "history is in logical block 24", None),
    ("block_table", 1, 8,
     "argument 3 (block_table)[0][1] = 8: not a block of the cache "
     "(8 blocks)", None),
    ("slot_mapping", 1, 99,
     "argument 4 (slot_mapping)[1] = 99: not -1 or a slot of the cache "
     "(8 blocks of 4)", None),
    ("slot_mapping", 0, -5,
     "argument 4 (slot_mapping)[0] = -5: not -1 or a slot of the cache "
     "(8 blocks of 4)",
     "argument 4 (slot_mapping)[0] = -5: not -1 or a slot of the cache ("),
    ("slot_mapping", 2, 9,
     "argument 4 (slot_mapping): slot 9 appears for tokens 0 and 2 (each "
     "token stores its own row)", None),
]


# small_layer_epilogues.mlir at the same step: its attention slot mapping
# (argument 16) addresses KV caches of 4 blocks of 8 (replay: op 0, the K
# conv with its k_norm and KV write). The serving column as above (the
# block count of the attention pool follows).
EPILOGUE_LAYER = os.path.join(EXAMPLES, "small_layer_epilogues.mlir")
KV_BLOCKS, KV_BLOCK_SIZE = 4, 8
ATTN_SLOTS = np.array([8 + 5, 8 + 6, 8 + 7, 24, 25], np.int64)
EPILOGUE_CASES = [
    ("attn_slot_mapping", 1, 32,
     "argument 16 (attn_slot_mapping)[1] = 32: not -1 or a slot of the KV "
     "caches (4 blocks of 8)", None),
    ("attn_slot_mapping", 0, -5,
     "argument 16 (attn_slot_mapping)[0] = -5: not -1 or a slot of the KV "
     "caches (4 blocks of 8)",
     "argument 16 (attn_slot_mapping)[0] = -5: not -1 or a slot of the KV "
     "caches ("),
    ("attn_slot_mapping", 4, 13,
     "argument 16 (attn_slot_mapping): slot 13 appears for tokens 0 and 4 "
     "(each token stores its own row)", None),
]


def metadata(name, index, value):
    arrays = {"query_start_loc": QSL.copy(), "num_computed": NC.copy(),
              "block_table": BT.copy(), "slot_mapping": SLOTS.copy()}
    if name == "attn_slot_mapping":
        arrays[name] = ATTN_SLOTS.copy()
    arrays[name].reshape(-1)[index] = value
    return arrays


@unittest.skipUnless(TOOL, "INKLING_RUN_TOOL (inkling-run) is not set")
class AbiConsistencyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.layer = inkling.Layer.from_file(SMALL_LAYER)
        cls.rng = np.random.default_rng(5)
        cls.dir = tempfile.TemporaryDirectory()
        # Finite bf16 values: small integers.
        cls.cache = (cls.rng.integers(-3, 4, NUM_BLOCKS * PAGE // 2)
                     .astype(np.float32).view(np.uint32) >> 16) \
            .astype(np.uint16)
        cls.arrays = {}
        for arg in cls.layer.args:
            if arg.role in ("input", "output"):
                cls.arrays[arg.name] = np.zeros((T,) + arg.shape[1:],
                                                np.uint16)
            elif arg.role in ("weights", "bias"):
                cls.arrays[arg.name] = np.zeros(arg.shape, np.uint16)
        np.save(os.path.join(cls.dir.name, "cache.npy"), cls.cache)
        np.save(os.path.join(cls.dir.name, "x.npy"), cls.arrays["input_k"])
        np.save(os.path.join(cls.dir.name, "weights.npy"),
                cls.arrays["weights_k"])

    @classmethod
    def tearDownClass(cls):
        cls.layer.close()
        cls.dir.cleanup()

    def python_call(self, meta):
        args = dict(self.arrays, cache=self.cache.copy().view(np.uint8),
                    **meta)
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**args)
        self.assertEqual(caught.exception.code, inkling.INVALID_ARGUMENT)
        return caught.exception.message

    @staticmethod
    def tool_env():
        # inkling-run carries its own sanitizer runtime: not the one the
        # sanitizer build preloads into python.
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        return env

    def replay(self, meta, case, model=SMALL_LAYER, extra=()):
        inputs = ["cache", "x", "weights"] + list(extra)
        for name, array in meta.items():
            path = os.path.join(self.dir.name, "%s_%d.npy" % (name, case))
            np.save(path, array)
            inputs.append("%s=%s" % (name, path))
        inputs = [i if "=" in i else
                  "%s=%s" % (i, os.path.join(self.dir.name, i + ".npy"))
                  for i in inputs]
        run = subprocess.run(
            [TOOL, model, "--replay=0", "--inputs=" + ",".join(inputs),
             "--outputs=" + os.path.join(self.dir.name, "out%d" % case)],
            capture_output=True, text=True, env=self.tool_env())
        self.assertEqual(run.returncode, 1, run.stderr)
        return run.stderr

    def serve(self, name, index, value, model=SMALL_LAYER):
        run = subprocess.run(
            [TOOL, model, "--steps=4", "--no-progress",
             "--corrupt-metadata=2:%s[%d]=%d" % (name, index, value)],
            capture_output=True, text=True, env=self.tool_env())
        self.assertEqual(run.returncode, 1, run.stderr)
        return run.stderr

    def test_every_path_names_the_same_value(self):
        # The data is valid as it is: every path accepts it.
        valid = dict(self.arrays, cache=self.cache.copy().view(np.uint8),
                     **metadata("num_computed", 0, 5))
        self.layer(**valid)
        for case, (name, index, value, message, serving) in enumerate(CASES):
            with self.subTest(name=name, index=index, value=value):
                meta = metadata(name, index, value)
                self.assertEqual(self.python_call(meta), message)
                self.assertIn("inkling-run: " + message + "\n",
                              self.replay(meta, case))
                if serving is not None:
                    self.assertIn(
                        "inkling-run: step 2: the layer on cpu (JIT): " +
                        serving, self.serve(name, index, value))


@unittest.skipUnless(TOOL, "INKLING_RUN_TOOL (inkling-run) is not set")
class EpilogueAbiConsistencyTest(AbiConsistencyTest):
    """The attention slot mapping of an epilogue layer: one message from
    the Python call, --replay and serving."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.epilogue_layer = inkling.Layer.from_file(EPILOGUE_LAYER)
        cls.epilogue_arrays = {}
        for arg in cls.epilogue_layer.args:
            if arg.role in ("input", "output", "residual", "sum", "normed"):
                cls.epilogue_arrays[arg.name] = np.zeros(
                    (T,) + arg.shape[1:], np.uint16)
            elif arg.role in ("weights", "norm_weight"):
                cls.epilogue_arrays[arg.name] = np.zeros(arg.shape, np.uint16)
            elif arg.role == "kv_cache":
                cls.epilogue_arrays[arg.name] = np.zeros(
                    (KV_BLOCKS,) + arg.shape[1:], np.uint16)
        for name in ("norm_weight", "kv_cache"):
            np.save(os.path.join(cls.dir.name, name + ".npy"),
                    cls.epilogue_arrays[name + "_k"])

    @classmethod
    def tearDownClass(cls):
        cls.epilogue_layer.close()
        super().tearDownClass()

    def test_every_path_names_the_same_value(self):
        valid = dict(self.epilogue_arrays,
                     cache=self.cache.copy().view(np.uint8),
                     **metadata("attn_slot_mapping", 0, ATTN_SLOTS[0]))
        self.epilogue_layer(**valid)
        for case, (name, index, value, message, serving) in enumerate(
                EPILOGUE_CASES):
            with self.subTest(name=name, index=index, value=value):
                meta = metadata(name, index, value)
                args = dict(self.epilogue_arrays,
                            cache=self.cache.copy().view(np.uint8), **meta)
                with self.assertRaises(inkling.InklingError) as caught:
                    self.epilogue_layer(**args)
                self.assertEqual(caught.exception.code,
                                 inkling.INVALID_ARGUMENT)
                self.assertEqual(caught.exception.message, message)
                self.assertIn("inkling-run: " + message + "\n",
                              self.replay(meta, 100 + case, EPILOGUE_LAYER,
                                          ("norm_weight", "kv_cache")))
                if serving is not None:
                    self.assertIn(
                        "inkling-run: step 2: the layer on cpu (JIT): " +
                        serving, self.serve(name, index, value,
                                            EPILOGUE_LAYER))


if __name__ == "__main__":
    unittest.main()
