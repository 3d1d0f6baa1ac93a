"""unittest for inkling.Layer: compiled layers on numpy arrays (and torch
tensors when torch is installed), against the numpy reference, and every
bad argument. Run by ctest (python/CMakeLists.txt) with PYTHONPATH set to
the build tree's package, or by hand:

    PYTHONPATH=build/python python3 -m unittest discover -s python/tests
"""

import json
import os
import subprocess
import sys
import threading
import unittest

import numpy as np

import inkling

EXAMPLES = os.environ.get("INKLING_EXAMPLES_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "python"))
import sconv_reference as ref  # noqa: E402

SMALL_LAYER = os.path.join(EXAMPLES, "small_layer.mlir")
CONFIG = dict(kv_heads=2, head_dim=8, hidden=16, kernel=4)
NUM_BLOCKS = 32

try:
    import torch
except ImportError:  # pragma: no cover - depends on the interpreter
    if os.environ.get("INKLING_REQUIRE_TORCH"):  # ctest: python3-torch
        raise
    torch = None


def read(path):
    with open(path) as f:
        return f.read()


class Fixture:
    """A manager with one built step and the layer's arrays for it."""

    def __init__(self, layer, rng, prompts=((5,), (9,)), T=16,
                 config=None):
        self.config = config or CONFIG
        self.manager = inkling.Manager(inkling.LayoutConfig(**self.config),
                                       NUM_BLOCKS)
        self.buffers = self.manager.step_buffers(4, 8, max(32, T))
        page = layer.layout["page_bytes"]
        self.page = page
        self.cache = inkling.aligned_empty(NUM_BLOCKS * page, np.uint8)
        # History from an earlier step: random bytes in every block.
        self.cache[:] = rng.integers(0, 256, self.cache.shape, np.uint8)
        # Keep the values finite bf16: clear each element's exponent MSB.
        self.cache.view(np.uint16)[:] &= 0xBFFF
        seqs = []
        for (length,) in prompts:
            seq = self.manager.add_sequence(list(range(1, length + 1)))
            # A first chunk, committed: the second chunk reads history.
            self.manager.schedule(seq, length - 2)
            self.buffers.build([seq])
            self.manager.commit(seq, length - 2)
            seqs.append(seq)
        self.manager.schedule_batch(seqs, [2] * len(seqs))
        self.step = self.buffers.build(seqs, num_rows=4, num_padded_tokens=T)
        self.args = {"cache": self.cache,
                     "query_start_loc": self.step.query_start_loc,
                     "num_computed": self.step.num_computed,
                     "block_table": self.step.block_table,
                     "slot_mapping": self.step.slot_mapping}
        self.inputs = {}
        for arg in layer.args:
            if arg.role in ("weights", "bias"):
                self.args[arg.name] = ref.random_bf16(rng, arg.shape, 0.5)
            elif arg.role == "input":
                self.inputs[arg.stream] = ref.random_bf16(
                    rng, (T,) + arg.shape[1:])
                self.args[arg.name] = self.inputs[arg.stream]
            elif arg.role == "output":
                self.args[arg.name] = np.zeros((T,) + arg.shape[1:],
                                               np.uint16)

    def close(self):
        self.manager.close()

    def check(self, test, layer):
        """Compares the outputs and the cache with the reference."""
        expected_cache = self.expected_cache
        convs = [ref.Conv(s, self.args["weights_" + s],
                          self.args.get("bias_" + s), residual=(s != "mlp"),
                          silu=(s == "mlp")) for s in ref.Layout.STREAMS]
        expected = ref.step(ref.Layout(**self.config), expected_cache,
                            self.page // 2, self.inputs, convs,
                            self.step.query_start_loc, self.step.num_computed,
                            self.step.block_table, self.step.slot_mapping)
        real = int(self.step.query_start_loc[-1])
        test.assertGreater(real, 0)
        for stream in ref.Layout.STREAMS:
            got = np.asarray(self.args["output_" + stream])[:real]
            want = expected[stream].reshape(
                (expected[stream].shape[0],) + got.shape[1:])[:real]
            if stream == "mlp":
                np.testing.assert_allclose(ref.bf16_to_f32(got),
                                           ref.bf16_to_f32(want), rtol=1 / 64,
                                           atol=1e-3, err_msg=stream)
            else:
                np.testing.assert_array_equal(got, want, err_msg=stream)
        np.testing.assert_array_equal(self.cache.view(np.uint16),
                                      expected_cache)

    def snapshot(self):
        self.expected_cache = self.cache.view(np.uint16).copy()

    @classmethod
    def run_once(cls, test, layer, rng, **options):
        """One call of `layer` on a fresh fixture, checked against the
        reference."""
        f = cls(layer, rng, **options)
        f.snapshot()
        layer(**f.args)
        f.check(test, layer)
        f.close()


def layer_ir(kv_heads, head_dim, hidden, kernel, page_bytes, token_seq=False):
    """small_layer.mlir's function at another layout and block stride (and
    with the step's token_seq operand)."""
    layout = ("#sconv.layout<kv_heads = %d, head_dim = %d, hidden = %d, "
              "kernel = %d, tp = 1>" % (kv_heads, head_dim, hidden, kernel))
    H, hph, W = kv_heads, hidden // kv_heads, kernel
    D = 1 << (2 * head_dim + 2 * hph - 1).bit_length()
    cache = "memref<?x%dx%dx%dxbf16, strided<[%d, %d, %d, 1]>>" % (
        H, W, D, page_bytes // 2, W * D, D)
    kv = "memref<?x%dx%dxbf16>" % (H, head_dim)
    hc = "memref<?x%dxbf16>" % (H * hph)
    wkv = "memref<%dx%dxbf16>" % (H * head_dim, W)
    wh = "memref<%dx%dxbf16>" % (H * hph, W)
    bias = "memref<%dxbf16>" % (H * hph)
    lines = [
        "func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>, "
        "%nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,"
        + (" %seq: memref<?xi32>," if token_seq else ""),
        " %%k: %s, %%v: %s, %%attn: %s, %%mlp: %s," % (kv, kv, hc, hc),
        " %%wk: %s, %%wv: %s, %%wattn: %s, %%wmlp: %s, %%bmlp: %s,"
        % (wkv, wkv, wh, wh, bias),
        " %%yk: %s, %%yv: %s, %%yattn: %s, %%ymlp: %s) {" % (kv, kv, hc, hc),
        "  %%cache = sconv.bind %%buffer layout %s page_bytes %d "
        ": memref<?xi8> -> %s" % (layout, page_bytes, cache),
        "  %step = sconv.step query_start_loc %qsl num_computed %nc "
        "block_table %bt slot_mapping %slots"
        + (" token_seq(%seq : memref<?xi32>)" if token_seq else "") +
        " : memref<?xi32>, memref<?xi32>,"
        " memref<?x?xi32>, memref<?xi64>"]
    for s, x, w, t, wt in (("k", "k", "wk", kv, wkv), ("v", "v", "wv", kv, wkv),
                           ("attn", "attn", "wattn", hc, wh)):
        lines.append("  sconv.conv %%%s, %%%s history %%cache[%s] layout %s "
                     "step %%step into %%y%s : %s, %s, %s -> %s"
                     % (x, w, s, layout, s, t, wt, cache, t))
    lines.append("  sconv.conv %%mlp, %%wmlp bias %%bmlp history %%cache[mlp]"
                 " layout %s step %%step into %%ymlp activation silu "
                 "{residual = false} : %s, %s, %s, %s -> %s"
                 % (layout, hc, wh, cache, bias, hc))
    for s, t in (("k", kv), ("v", kv), ("attn", hc), ("mlp", hc)):
        lines.append("  sconv.insert %%%s into %%cache[%s] layout %s step "
                     "%%step : %s, %s" % (s, s, layout, t, cache))
    lines.append("  return\n}")
    return "\n".join(lines)


class LayerCallCase(unittest.TestCase):
    """The small layer on the CPU, a fresh Fixture per test, and assertBad:
    what the CPU layer tests (here and test_layer_buffers.py) share."""

    @classmethod
    def setUpClass(cls):
        cls.layer = inkling.Layer(read(SMALL_LAYER), name="small_layer.mlir")

    @classmethod
    def tearDownClass(cls):
        cls.layer.close()

    def setUp(self):
        self.rng = np.random.default_rng(1234)
        self.f = Fixture(self.layer, self.rng)
        self.f.snapshot()

    def tearDown(self):
        self.f.close()

    def assertBad(self, message, *args, code=inkling.INVALID_ARGUMENT,
                  **kwargs):
        """The call raises `code` with `message` in it, and writes
        nothing."""
        outputs = {n: np.array(v) for n, v in self.f.args.items()
                   if n.startswith("output_") or n == "cache"}
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(*args, **kwargs)
        self.assertEqual(caught.exception.code, code, str(caught.exception))
        self.assertIn(message, str(caught.exception))
        for name, before in outputs.items():
            np.testing.assert_array_equal(self.f.args[name], before, name)
        return caught.exception

    def call_with(self, **changes):
        args = dict(self.f.args)
        args.update(changes)
        return args


class LayerCpuTest(LayerCallCase):

    def test_signature(self):
        self.assertEqual(self.layer.function, "small_layer")
        self.assertEqual(self.layer.arg_names[:5], [
            "cache", "query_start_loc", "num_computed", "block_table",
            "slot_mapping"])
        spec = self.layer.args[self.layer.arg_names.index("input_k")]
        self.assertEqual((spec.dtype, spec.shape), (np.uint16, (None, 2, 8)))
        self.assertEqual(self.layer.layout["page_bytes"], 512)
        self.assertEqual(self.layer.layout["streams"]["attn"], (16, 8))

    def test_matches_reference_on_random_data(self):
        self.layer(**self.f.args)
        self.f.check(self, self.layer)

    def test_positional_arguments(self):
        self.layer(*[self.f.args[n] for n in self.layer.arg_names])
        self.f.check(self, self.layer)

    def test_from_file_and_other_fusions(self):
        for fusion in ("none", "packed-inserts"):
            with inkling.Layer.from_file(SMALL_LAYER, fusion=fusion,
                                         checked=True) as layer:
                Fixture.run_once(self, layer, np.random.default_rng(7))

    def test_thread_counts_give_the_same_bits(self):
        # A layer of 2 threads forks a nest from 64 outer iterations: a
        # decode step's (run of 4 tokens, head) pairs, so 128 padded tokens
        # x 2 heads reach it (the default fixture's 16 do not). Each count runs in a fresh process, where the fork is
        # observed: libomp starts its worker at the first parallel region,
        # so the process gains a thread; 1 thread gains none. The outputs
        # and the cache are the reference's and the same bits either way.
        script = (
            "import json, os, sys, unittest\n"
            "import numpy as np\n"
            "sys.path.insert(0, %r)\n"
            "import inkling, test_layer as t\n"
            "threads = int(sys.argv[1])\n"
            "with inkling.Layer.from_file(t.SMALL_LAYER, threads=threads)"
            " as layer:\n"
            "    f = t.Fixture(layer, np.random.default_rng(11), T=128)\n"
            "    f.snapshot()\n"
            "    before = len(os.listdir('/proc/self/task'))\n"
            "    layer(**f.args)\n"
            "    after = len(os.listdir('/proc/self/task'))\n"
            "    f.check(unittest.TestCase(), layer)\n"
            "    bits = {n: np.asarray(v).tobytes().hex() for n, v in"
            " f.args.items() if n.startswith('output_') or n == 'cache'}\n"
            "    f.close()\n"
            "print(json.dumps({'threads': after - before, 'bits': bits}))\n"
            % os.path.dirname(os.path.abspath(__file__)))
        results = {}
        for threads in (1, 2):
            run = subprocess.run([sys.executable, "-c", script, str(threads)],
                                 capture_output=True, text=True,
                                 env=dict(os.environ, OMP_NUM_THREADS="2"))
            self.assertEqual(run.returncode, 0, run.stderr)
            results[threads] = json.loads(run.stdout.splitlines()[-1])
        self.assertEqual(results[1]["threads"], 0, "1 thread forked")
        self.assertGreater(results[2]["threads"], 0,
                           "2 threads did not fork: below 64 iterations?")
        self.assertEqual(results[1]["bits"], results[2]["bits"])

    def test_token_seq_operand(self):
        # The step builder's token_seq: the reference's results, and padding
        # rows (t >= qsl[B]) give y = x. A real token's wrong entry is
        # refused, named, before any kernel runs.
        config = dict(kv_heads=2, head_dim=8, hidden=16, kernel=4)
        with inkling.Layer(layer_ir(page_bytes=512, token_seq=True, **config),
                           name="token_seq.mlir") as layer:
            self.assertIn("token_seq", layer.arg_names)
            f = Fixture(layer, np.random.default_rng(5), config=config)
            f.args["token_seq"] = f.step.token_seq
            f.snapshot()
            layer(**f.args)
            f.check(self, layer)
            real = int(f.step.query_start_loc[-1])
            self.assertLess(real, 16)
            for stream in ref.Layout.STREAMS:
                np.testing.assert_array_equal(
                    np.asarray(f.args["output_" + stream])[real:],
                    np.asarray(f.inputs[stream])[real:], stream)
            bad = f.step.token_seq.copy()
            bad[0] = 1
            args = dict(f.args)
            args["token_seq"] = bad
            with self.assertRaises(inkling.InklingError) as caught:
                layer(**args)
            self.assertEqual(caught.exception.code, inkling.INVALID_ARGUMENT)
            self.assertIn("(token_seq)[0] = 1: token 0 is in sequence 0",
                          str(caught.exception))
            f.close()

    def test_other_layout_and_padded_page_from_text(self):
        # kernel 3 (N = 3), H = 4, D = 64; pages padded from 1536 to 2048
        # bytes (a unified page): every access goes through the stride.
        config = dict(kv_heads=4, head_dim=16, hidden=64, kernel=3)
        with inkling.Layer(layer_ir(page_bytes=2048, **config),
                           name="generated.mlir") as layer:
            self.assertEqual(layer.layout["page_bytes"], 2048)
            for seed in range(3):
                Fixture.run_once(self, layer, np.random.default_rng(seed),
                                 prompts=((4,), (11,), (3,)), config=config)

    def test_rank2_and_rank3_views_are_accepted_as_declared(self):
        # input_attn is declared [T, 16]; a [T, 2, 8] array is a rank error.
        x = self.f.args["input_attn"]
        self.assertBad("argument 7 (input_attn): rank 3, expected 2",
                       **self.call_with(input_attn=x.reshape(-1, 2, 8)))

    def test_torch_cpu_tensors(self):
        if torch is None:
            self.skipTest("torch is not installed (optional)")
        args = {}
        for name, value in self.f.args.items():
            if value.dtype == np.uint16:  # bf16 bits; torch lacks uint16 ops
                value = value.view(np.int16)
            tensor = torch.from_numpy(value)
            spec = self.layer.args[self.layer.arg_names.index(name)]
            if spec.element == "bf16":
                tensor = tensor.view(torch.bfloat16)
            args[name] = tensor
        self.layer(**args)
        self.f.check(self, self.layer)
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**dict(args, input_k=args["input_k"].float()))
        self.assertIn("input_k): dtype torch.float32, expected "
                      "torch.bfloat16", str(caught.exception))

    # Bad arguments: each an InklingError naming the argument ---------------

    def test_wrong_dtype(self):
        self.assertBad("argument 5 (input_k): dtype float32, expected uint16",
                       **self.call_with(input_k=np.zeros((16, 2, 8),
                                                         np.float32)))
        self.assertBad("argument 3 (block_table): dtype int64, expected "
                       "int32", **self.call_with(
                           block_table=self.f.step.block_table.astype(
                               np.int64)))
        self.assertBad("argument 4 (slot_mapping): dtype int32",
                       **self.call_with(
                           slot_mapping=self.f.step.slot_mapping.astype(
                               np.int32)))

    def test_wrong_shape(self):
        self.assertBad("argument 5 (input_k): shape [16, 2, 7], expected "
                       "[?, 2, 8]",
                       **self.call_with(input_k=np.zeros((16, 2, 7),
                                                         np.uint16)))
        self.assertBad("argument 9 (weights_k): shape [16, 3], expected "
                       "[16, 4]",
                       **self.call_with(weights_k=np.zeros((16, 3),
                                                           np.uint16)))
        self.assertBad("argument 14 (output_k): 8 tokens, but argument 5 "
                       "(input_k) has 16",
                       **self.call_with(output_k=np.zeros((8, 2, 8),
                                                          np.uint16)))
        self.assertBad("argument 2 (num_computed): 3 entries, but argument 1"
                       " (query_start_loc) has B + 1 = 5",
                       **self.call_with(num_computed=self.f.step.num_computed
                                        [:3].copy()))

    def test_non_contiguous(self):
        wide = np.zeros((16, 32), np.uint16)
        self.assertBad("argument 7 (input_attn): strides [32, 1], expected "
                       "[16, 1]", **self.call_with(input_attn=wide[:, :16]))
        self.assertBad("argument 9 (weights_k): strides [1, 16], expected "
                       "[4, 1]", **self.call_with(
                           weights_k=np.zeros((4, 16), np.uint16).T))
        self.assertBad("argument 0 (cache): not contiguous",
                       **self.call_with(cache=self.f.cache[::2]))

    def test_buffer_too_small(self):
        self.assertBad("argument 0 (cache): 256 bytes, less than one page "
                       "(512 bytes)", **self.call_with(
                           cache=inkling.aligned_empty(256, np.uint8)))
        self.assertBad("argument 4 (slot_mapping): 8 entries, fewer than the "
                       "16 tokens", **self.call_with(
                           slot_mapping=self.f.step.slot_mapping[:8]))
        # A cache too small for the blocks the step reads and writes.
        small = inkling.aligned_empty(2 * 512, np.uint8)
        self.assertBad("of the cache (2 blocks", **self.call_with(cache=small))

    def test_misaligned(self):
        raw = inkling.aligned_empty(16 * 16 + 8, np.uint16)
        shifted = raw[1:1 + 16 * 16].reshape(16, 16)
        error = self.assertBad("argument 7 (input_attn): data at 0x",
                               **self.call_with(input_attn=shifted))
        self.assertIn("is not 16-byte aligned", str(error))

    def test_bad_metadata_values(self):
        qsl = self.f.step.query_start_loc.copy()
        qsl[1:] = 17
        self.assertBad("argument 1 (query_start_loc)[1] = 17: must be in "
                       "[0, 16]", **self.call_with(query_start_loc=qsl))
        slots = self.f.step.slot_mapping.copy()
        slots[0] = NUM_BLOCKS * 4
        self.assertBad("argument 4 (slot_mapping)[0] = 128: not -1 or a slot",
                       **self.call_with(slot_mapping=slots))
        slots[0] = -2
        self.assertBad("argument 4 (slot_mapping)[0] = -2",
                       **self.call_with(slot_mapping=slots))
        table = self.f.step.block_table.copy()
        table[:, :] = NUM_BLOCKS
        self.assertBad("argument 3 (block_table)[0][0] = 32: not a block",
                       **self.call_with(block_table=table))
        computed = self.f.step.num_computed.copy()
        computed[0] = -1
        self.assertBad("argument 2 (num_computed)[0] = -1 is negative",
                       **self.call_with(num_computed=computed))
        computed[0] = 1000  # history beyond the table's 8 columns
        self.assertBad("argument 3 (block_table): row 0 has 8 columns",
                       **self.call_with(num_computed=computed))

    def test_read_only_output(self):
        out = self.f.args["output_v"].copy()
        out.flags.writeable = False
        self.assertBad("argument 15 (output_v): a read-only array",
                       **self.call_with(output_v=out))

    def test_not_an_array(self):
        self.assertBad("argument 3 (block_table): a list; expected a numpy "
                       "array or a torch tensor",
                       **self.call_with(block_table=[[0] * 8] * 4))

    def test_missing_unknown_and_extra_arguments(self):
        args = dict(self.f.args)
        del args["bias_mlp"]
        self.assertBad("missing argument(s) bias_mlp", **args)
        self.assertBad("bogus: not an argument of @small_layer",
                       **self.call_with(bogus=self.f.cache))
        values = [self.f.args[n] for n in self.layer.arg_names]
        self.assertBad("takes 18 arguments, got 19", *values, values[0])
        self.assertBad("cache: given by position and by name", values[0],
                       cache=values[0])
        self.assertBad("stream: 'x': expected a CUstream", stream="x",
                       **self.f.args)
        self.assertBad("stream: -1: expected a CUstream", stream=-1,
                       **self.f.args)

    def test_bad_ir(self):
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer("func.func @f( {", name="broken.mlir")
        self.assertIn("broken.mlir:1:", str(caught.exception))
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer.from_file("/nonexistent/layer.mlir")
        self.assertIn("/nonexistent/layer.mlir: cannot read the file",
                      str(caught.exception))
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer(read(SMALL_LAYER), fusion="bogus")
        self.assertIn("--fusion=bogus", str(caught.exception))
        # The thread range (0 to 1024) before libomp sees a count it cannot
        # create, or ctypes truncates one to 32 bits.
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer(12)
        self.assertIn("ir: a int; expected the IR as str or bytes",
                      str(caught.exception))
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer(read(SMALL_LAYER), fusion=3)
        self.assertIn("fusion: 3: expected a str", str(caught.exception))
        for threads in (-2, 1025, 100000, 2**32 + 1, 1.5, True):
            with self.assertRaises(inkling.InklingError) as caught:
                inkling.Layer(read(SMALL_LAYER), threads=threads)
            self.assertIn("threads: %r: expected an int from 0" % threads,
                          str(caught.exception))
        with self.assertRaises(inkling.InklingError) as caught:
            inkling.Layer(read(SMALL_LAYER), device="tpu")
        self.assertIn("device: 'tpu'", str(caught.exception))

    def test_closed_layer(self):
        layer = inkling.Layer.from_file(SMALL_LAYER)
        layer.close()
        layer.close()
        with self.assertRaises(inkling.InklingError) as caught:
            layer(**self.f.args)
        self.assertEqual(caught.exception.code, inkling.FAILED_PRECONDITION)
        self.assertIn("the layer is closed", str(caught.exception))

    def test_closed_manager(self):
        # The step's views stay readable; the manager refuses new steps.
        self.f.manager.close()
        self.layer(**self.f.args)
        self.f.check(self, self.layer)
        with self.assertRaises(inkling.InklingError) as caught:
            self.f.buffers.build([])
        self.assertEqual(caught.exception.code, inkling.FAILED_PRECONDITION)

    def test_numpy_array_on_a_cpu_layer_given_device_memory(self):
        class Device:
            __cuda_array_interface__ = {"shape": (16, 2, 8), "typestr": "<u2",
                                        "data": (4096, False), "version": 3}
        self.assertBad("argument 5 (input_k): device memory",
                       **self.call_with(input_k=Device()))

    def test_threads_share_a_layer(self):
        fixtures = [Fixture(self.layer, np.random.default_rng(seed))
                    for seed in range(4)]
        for f in fixtures:
            f.snapshot()
        errors = []

        def run(f):
            try:
                for _ in range(5):
                    f.cache.view(np.uint16)[:] = f.expected_cache
                    self.layer(**f.args)
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=run, args=(f,)) for f in fixtures]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])
        for f in fixtures:
            f.check(self, self.layer)
            f.close()


FAKE_CUDA = os.environ.get("INKLING_FAKE_CUDA_LIBRARY")


@unittest.skipUnless(FAKE_CUDA, "INKLING_FAKE_CUDA_LIBRARY is not set (ctest "
                     "sets it to the runtime's fake CUDA driver)")
class LayerFakeGpuTest(unittest.TestCase):
    """The GPU path through the runtime's launcher on the fake driver: the
    kernels are compiled to PTX, loaded and launched on device memory; the
    fake driver checks every pointer but runs no kernel, so outputs are not
    compared here (the device script does that on a real GPU)."""

    @classmethod
    def setUpClass(cls):
        cls.cuda = inkling.Cuda(FAKE_CUDA)
        cls.layer = inkling.Layer(read(SMALL_LAYER), device="cuda",
                                  cuda=cls.cuda)

    @classmethod
    def tearDownClass(cls):
        cls.layer.close()
        cls.cuda.close()

    def setUp(self):
        self.f = Fixture(self.layer, np.random.default_rng(5))
        self.device = {name: self.cuda.to_device(value)
                       for name, value in self.f.args.items()}

    def tearDown(self):
        for array in self.device.values():
            array.close()
        self.f.close()

    def test_launches_on_device_memory(self):
        self.assertEqual(self.cuda.chip, "sm_90")
        self.layer(**self.device)
        self.layer(**self.device, stream=None)
        # Inputs are untouched by the launch.
        np.testing.assert_array_equal(self.device["input_k"].numpy(),
                                      self.f.args["input_k"])

    def test_gpu_outputs_match_the_reference(self):
        # The fake driver executes the kernels (their host form, with
        # memcheck): outputs and cache, read back, equal the numpy
        # reference as on the CPU.
        self.f.snapshot()
        self.layer(**self.device)
        for name, array in self.device.items():
            if name == "cache":
                self.f.cache[:] = array.numpy()
            elif name.startswith("output_"):
                self.f.args[name] = array.numpy()
        self.f.check(self, self.layer)

    def test_host_arrays_are_refused(self):
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**dict(self.device,
                              block_table=self.f.step.block_table))
        self.assertIn("argument 3 (block_table): a host numpy array; this "
                      "layer runs on the GPU", str(caught.exception))

    def test_shapes_and_dtypes_are_checked(self):
        wrong = self.cuda.empty((16, 2, 8), np.float32)
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**dict(self.device, input_k=wrong))
        self.assertIn("argument 5 (input_k): typestr <f4, expected <u2",
                      str(caught.exception))
        short = self.cuda.empty((8, 2, 8), np.uint16)
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**dict(self.device, output_k=short))
        self.assertIn("argument 14 (output_k): 8 tokens",
                      str(caught.exception))

    def test_a_pointer_outside_device_memory_fails_the_launch(self):
        class Bogus:
            __cuda_array_interface__ = {"shape": (16, 2, 8), "typestr": "<u2",
                                        "data": (1 << 44, False),
                                        "version": 3}
        with self.assertRaises(inkling.InklingError) as caught:
            self.layer(**dict(self.device, input_k=Bogus()))
        self.assertNotEqual(caught.exception.code, inkling.OK)

    def test_closing_the_driver_closes_its_layers_and_arrays(self):
        cuda = inkling.Cuda(FAKE_CUDA)
        layer = inkling.Layer(read(SMALL_LAYER), device="cuda", cuda=cuda)
        array = cuda.to_device(self.f.args["input_k"])
        cuda.close()
        self.assertEqual(array.address, 0)
        with self.assertRaises(inkling.InklingError) as caught:
            layer(**self.device)
        self.assertEqual(caught.exception.code, inkling.FAILED_PRECONDITION)
        with self.assertRaises(inkling.InklingError) as caught:
            cuda.empty((4,), np.uint8)
        self.assertIn("the CUDA driver is closed", str(caught.exception))

    def test_checked_gpu_layer(self):
        with inkling.Layer(read(SMALL_LAYER), device="cuda", cuda=self.cuda,
                           checked=True) as layer:
            # Valid metadata: the checked kernels report nothing and compute
            # what the reference does.
            self.f.snapshot()
            layer(**self.device)
            for name, array in self.device.items():
                if name == "cache":
                    self.f.cache[:] = array.numpy()
                elif name.startswith("output_"):
                    self.f.args[name] = array.numpy()
            self.f.check(self, layer)
            # A slot that is not its token's own: the kernels' status words
            # come back from the device and name it.
            slots = self.f.step.slot_mapping.copy()
            slots[0] += 1
            bad = self.cuda.to_device(slots)
            try:
                with self.assertRaises(inkling.InklingError) as caught:
                    layer(**dict(self.device, slot_mapping=bad))
                self.assertIn("not its own slot", str(caught.exception))
            finally:
                bad.close()



@unittest.skipUnless(torch is not None and torch.cuda.is_available(),
                     "needs torch with a CUDA device (bench/gpu/run.sh runs "
                     "this file on a GPU machine)")
class LayerTorchCudaTest(unittest.TestCase):
    """torch CUDA tensors through the runtime's launcher on torch's current
    stream, against the reference."""

    def test_matches_reference(self):
        layer = inkling.Layer(read(SMALL_LAYER), device="cuda")
        f = Fixture(layer, np.random.default_rng(11))
        f.snapshot()
        tensors = {}
        for name, value in f.args.items():
            value = np.ascontiguousarray(value)
            if value.dtype == np.uint16:  # bf16 bits; torch lacks uint16 ops
                value = value.view(np.int16)
            tensor = torch.from_numpy(value).cuda()
            spec = layer.args[layer.arg_names.index(name)]
            if spec.element == "bf16":
                tensor = tensor.view(torch.bfloat16)
            tensors[name] = tensor
        stream = torch.cuda.current_stream()
        layer(**tensors, stream=stream)
        stream.synchronize()
        for name, tensor in tensors.items():
            if name == "cache" or name.startswith("output_"):
                host = tensor.cpu()
                if host.dtype == torch.bfloat16:
                    host = host.view(torch.int16)
                f.args[name][...] = host.numpy().view(f.args[name].dtype)
        f.check(self, layer)
        f.close()
        layer.close()


if __name__ == "__main__":
    unittest.main()
