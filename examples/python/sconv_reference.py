"""An independent numpy reference of one step of a layer's sconv ops.

Written from the spec (docs/Design.md sections 2-4), not from the project's code:
the cache is [num_blocks, H, N, D] bf16 with blocks `block_stride` elements
apart; stream s occupies [o_s, o_s + w_s) of D. bf16 values are uint16 bit
patterns. Used by engine_loop.py and the Python tests.
"""

import numpy as np


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16) \
        .view(np.float32)


def f32_to_bf16(values):
    """Round to nearest even (the inputs here are finite)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).astype(np.uint16)


def random_bf16(rng, shape, scale=1.0):
    return f32_to_bf16(rng.uniform(-scale, scale, size=shape)
                       .astype(np.float32))


class Layout:
    """docs/Design.md section 2 for tp = 1 and block size N = kernel."""

    STREAMS = ("k", "v", "attn", "mlp")

    def __init__(self, kv_heads, head_dim, hidden, kernel, block_size=None):
        self.heads = kv_heads
        self.hidden_per_head = hidden // kv_heads
        raw = 2 * head_dim + 2 * self.hidden_per_head
        self.head_size = 1 << (raw - 1).bit_length()
        self.kernel = kernel
        self.block_size = block_size or kernel
        hph = self.hidden_per_head
        self.ranges = {"k": (0, head_dim), "v": (head_dim, head_dim),
                       "attn": (2 * head_dim, hph),
                       "mlp": (2 * head_dim + hph, hph)}
        self.page_elements = self.heads * self.block_size * self.head_size


class Conv:
    """One conv of the layer: stream, weights [H*w, W], optional bias,
    residual, activation."""

    def __init__(self, stream, weights, bias=None, residual=True,
                 silu=False):
        self.stream, self.weights, self.bias = stream, weights, bias
        self.residual, self.silu = residual, silu


def step(layout, cache, block_stride, inputs, convs, query_start_loc,
         num_computed, block_table, slot_mapping):
    """Runs one step: every conv reads the cache as it was before the step,
    then every input is inserted (docs/Design.md section 4: inside a step the
    order does not matter). `cache` (uint16, flat, modified in place) has
    blocks `block_stride` elements apart; inputs are {stream: [T, H, w]}.
    Returns {stream: y [T, H, w]} for the streams of `convs`."""
    H, N, D, W = layout.heads, layout.block_size, layout.head_size, \
        layout.kernel
    B = len(num_computed)
    qsl = [int(v) for v in query_start_loc]
    outputs = {}

    def history(block, h, q, offset, width):
        start = block * block_stride + h * N * D + (q % N) * D + offset
        return bf16_to_f32(cache[start:start + width])

    for conv in convs:
        offset, width = layout.ranges[conv.stream]
        x = inputs[conv.stream]
        T = x.shape[0]
        xf = bf16_to_f32(x).reshape(T, H, width)
        wf = bf16_to_f32(conv.weights).reshape(H, width, W) \
            .astype(np.float64)
        bias = np.zeros((H, width), np.float32) if conv.bias is None else \
            bf16_to_f32(conv.bias).reshape(H, width)
        y = x.reshape(T, H, width).copy()  # padding tokens: y = x
        for b in range(B):
            for t in range(qsl[b], qsl[b + 1]):
                p = int(num_computed[b]) + (t - qsl[b])
                acc = bias.copy()
                for j in range(W):
                    q = p - (W - 1) + j
                    if q < 0:
                        tap = np.zeros((H, width), np.float32)
                    elif q >= num_computed[b]:
                        tap = xf[qsl[b] + q - int(num_computed[b])]
                    else:
                        block = int(block_table[b][q // N])
                        tap = np.stack([history(block, h, q, offset, width)
                                        for h in range(H)])
                    # fma in f32: the product of two bf16 values is exact in
                    # f64, so is the sum here; one rounding to f32.
                    acc = (wf[:, :, j] * tap.astype(np.float64) +
                           acc.astype(np.float64)).astype(np.float32)
                if conv.silu:
                    acc = acc / (np.float32(1) + np.exp(-acc))
                if conv.residual:
                    acc = acc + xf[t]
                y[t] = f32_to_bf16(acc)
        outputs[conv.stream] = y
    for stream, x in inputs.items():
        offset, width = layout.ranges[stream]
        rows = x.reshape(x.shape[0], H, width)
        for t in range(qsl[B]):
            slot = int(slot_mapping[t])
            if slot < 0:
                continue
            for h in range(H):
                start = (slot // N) * block_stride + h * N * D + \
                    (slot % N) * D + offset
                cache[start:start + width] = rows[t, h]
    return outputs
