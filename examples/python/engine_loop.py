"""What a serving engine does each step, in Python, checked against an
independent numpy reference of the convolution (sconv_reference.py).

    PYTHONPATH=<prefix>/lib/python3/dist-packages \
        python3 examples/python/engine_loop.py examples/small_layer.mlir
    ... engine_loop.py --device=cuda   # the GPU kernels (bench/gpu/run.sh)

Each step: schedule the running sequences (continuous batching: prompts
are prefilled in chunks while others decode), build the step's metadata
(numpy views of the runtime's buffers, no copies), copy the pages the step
asks for, run the compiled layer on the step's inputs, commit the sampled
tokens. The layer's outputs and cache are compared with the reference's.
"""

import argparse
import os
import sys

import numpy as np

import inkling

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sconv_reference as ref  # noqa: E402

# examples/small_layer.mlir: kv_heads 2, head_dim 8, hidden 16, kernel 4.
CONFIG = dict(kv_heads=2, head_dim=8, hidden=16, kernel=4)
NUM_BLOCKS, MAX_ROWS, NUM_COLS, MAX_TOKENS = 64, 4, 16, 32
CHUNK = 7  # prefill chunk: prompts longer than this take several steps


class GpuCalls:
    """Runs a GPU layer on host arrays: each call uploads every argument,
    launches, and downloads the outputs and the cache (device memory through
    the layer's driver; an engine would hand over torch CUDA tensors)."""

    def __init__(self, layer, cuda):
        self.layer, self.cuda = layer, cuda

    def __call__(self, **args):
        device = {name: self.cuda.to_device(value)
                  for name, value in args.items()}
        self.layer(**device)
        for name, value in args.items():
            if name == "cache" or name.startswith("output_"):
                value[...] = device[name].numpy()
        for array in device.values():
            array.close()


def main(ir_path, steps=40, seed=0, device="cpu", cuda_driver=None,
         check=True):
    rng = np.random.default_rng(seed)
    if device == "cuda":
        cuda = inkling.Cuda(cuda_driver)
        print("GPU layer on %s" % cuda.chip)
        layer = inkling.Layer.from_file(ir_path, device="cuda", cuda=cuda)
        call = GpuCalls(layer, cuda)
    else:
        layer = inkling.Layer.from_file(ir_path)
        call = layer
    layout = ref.Layout(**CONFIG)
    manager = inkling.Manager(inkling.LayoutConfig(**CONFIG), NUM_BLOCKS)
    buffers = manager.step_buffers(MAX_ROWS, NUM_COLS, MAX_TOKENS)

    # One cache for the layer (the engine's), one for the reference.
    page = layer.layout["page_bytes"]
    cache = inkling.aligned_empty(NUM_BLOCKS * page, np.uint8)
    cache.fill(0)
    expected_cache = cache.view(np.uint16).copy()

    # The layer's weights, and its convs as the reference sees them.
    weights = {}
    for arg in layer.args:
        if arg.role in ("weights", "bias"):
            weights[arg.name] = ref.random_bf16(rng, arg.shape, 0.5)
    convs = [ref.Conv(s, weights["weights_" + s], weights.get("bias_" + s),
                      residual=(s != "mlp"), silu=(s == "mlp"))
             for s in ref.Layout.STREAMS]

    prompts = {}  # sequence -> tokens not yet prefilled
    running = []
    copies = 0
    for step_index in range(steps):
        # Admit a new request every few steps; now and then fork a decoding
        # one (parallel sampling: the child shares its pages, and the first
        # write to a shared partial page asks for a page copy).
        if step_index % 3 == 0 and len(running) < MAX_ROWS:
            prompt = rng.integers(1, 1000, size=rng.integers(3, 15)).tolist()
            seq = manager.add_sequence(prompt)
            prompts[seq] = len(prompt)
            running.append(seq)
        elif step_index % 5 == 4 and len(running) < MAX_ROWS:
            decoding = [seq for seq in running if not prompts[seq] and
                        manager.sequence_info(seq).num_computed % 4]
            if decoding:
                child = manager.fork(decoding[0])
                prompts[child] = 0
                running.append(child)
        plan = [min(prompts[seq], CHUNK) if prompts[seq] else 1
                for seq in running]
        manager.schedule_batch(running, plan)
        T = 16 if sum(plan) <= 16 else MAX_TOKENS  # two captured shapes
        step = buffers.build(running, num_rows=MAX_ROWS,
                             num_padded_tokens=T)
        copies += len(step.block_copies)
        for src, dst in step.block_copies:  # whole pages
            cache[dst * page:(dst + 1) * page] = \
                cache[src * page:(src + 1) * page]
            expected_cache[dst * page // 2:(dst + 1) * page // 2] = \
                expected_cache[src * page // 2:(src + 1) * page // 2]

        inputs, outputs = {}, {}
        for arg in layer.args:
            if arg.role == "input":
                shape = (T,) + arg.shape[1:]
                inputs[arg.stream] = ref.random_bf16(rng, shape)
            elif arg.role == "output":
                outputs[arg.stream] = np.empty((T,) + arg.shape[1:],
                                               np.uint16)
        call(cache=cache, query_start_loc=step.query_start_loc,
              num_computed=step.num_computed, block_table=step.block_table,
              slot_mapping=step.slot_mapping,
              **{"input_" + s: x for s, x in inputs.items()},
              **{"output_" + s: y for s, y in outputs.items()}, **weights)

        expected = ref.step(layout, expected_cache, page // 2, inputs, convs,
                            step.query_start_loc, step.num_computed,
                            step.block_table, step.slot_mapping)
        # The step's tokens against the reference; padding rows
        # (t >= qsl[B]) give y = x (sconv.step).
        real = int(step.query_start_loc[-1])
        for stream, y in outputs.items():
            if not check:
                break
            want = expected[stream].reshape(y.shape)[:real]
            pad, y = y[real:], y[:real]
            if stream == "mlp":  # SiLU's exp: a documented tolerance
                close = np.allclose(ref.bf16_to_f32(y),
                                    ref.bf16_to_f32(want), rtol=1 / 64,
                                    atol=1e-3)
            else:
                close = np.array_equal(y, want)
            if not close:
                sys.exit("step %d: output %s differs from the reference"
                         % (step_index, stream))
            if not np.array_equal(pad, inputs[stream][real:]):
                sys.exit("step %d: a padding row of output %s is not its "
                         "input" % (step_index, stream))
        if check and not np.array_equal(cache.view(np.uint16),
                                        expected_cache):
            sys.exit("step %d: the cache differs from the reference"
                     % step_index)

        # Sample, commit; a finished request leaves the batch.
        accepted = []
        for seq, count in zip(running, plan):
            prompts[seq] = max(0, prompts[seq] - count)
            accepted.append([] if prompts[seq] else
                            [int(rng.integers(1, 1000))])
        manager.commit_batch(running, plan, accepted)
        for seq in list(running):
            if manager.sequence_info(seq).num_tokens > 24:
                manager.finish(seq)
                running.remove(seq)
        print("step %2d: %d sequences, %2d tokens (%d padded), %d copies"
              % (step_index, step.info.num_sequences, step.info.num_tokens,
                 T, step.info.num_copies))
    manager.check_invariants()
    manager.close()
    layer.close()
    if not copies and steps >= 5:
        sys.exit("no step copied a page: the fork path was not exercised")
    if not check:
        print("%d steps, %d page copies (not checked)" % (steps, copies))
        return
    print("%d steps, %d page copies: outputs and cache match the numpy "
          "reference" % (steps, copies))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ir", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..",
        "small_layer.mlir"))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--cuda-driver", default=None,
                        help="a CUDA driver library other than libcuda.so.1")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the comparison (a smoke run on the "
                        "tests' fake driver, which runs no kernel)")
    options = parser.parse_args()
    main(options.ir, steps=options.steps, device=options.device,
         cuda_driver=options.cuda_driver, check=not options.no_check)
