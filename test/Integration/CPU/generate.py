#!/usr/bin/env python3
"""Writes the CPU execution tests of this folder (run it from anywhere).

Each test is a small forward step: a bound cache (poisoned with 99 wherever
nothing is stored, the page padding included), history rows for the
positions the convs read, step metadata, a few sconv ops, and a main that
prints the outputs and the whole cache buffer (one line per block, padding
included). The CHECK lines come from a plain Python model of docs/Design.md section 4
(values are small integers and halves, exact in bf16, except for silu, whose
inputs are chosen so that libm's expf and this model round to the same bf16).

    python3 test/Integration/CPU/generate.py
"""

import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
POISON = 99.0


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def bf16(v):
    bits = struct.unpack("I", struct.pack("f", f32(v)))[0]
    if math.isnan(v):
        return v
    bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.unpack("f", struct.pack("I", (bits >> 16) << 16 & 0xFFFFFFFF))[0]


def fmt(v):
    if v == int(v) and abs(v) < 1e6:
        return str(int(v)) if v != 0 or math.copysign(1, v) > 0 else "-0"
    return "%g" % v


class Layout:
    def __init__(self, kv_heads, head_dim, hidden, kernel, tp=1):
        self.kv, self.hd, self.hidden, self.W, self.tp = kv_heads, head_dim, hidden, kernel, tp
        self.H = kv_heads // tp
        self.hph = hidden // kv_heads
        self.raw = 2 * head_dim + 2 * self.hph
        self.D = 1
        while self.D < self.raw:
            self.D *= 2
        self.N = kernel
        hd, hph = head_dim, self.hph
        self.ranges = {"k": (0, hd), "v": (hd, hd), "attn": (2 * hd, hph),
                       "mlp": (2 * hd + hph, hph)}

    def attr(self):
        return ("#sconv.layout<kv_heads = %d, head_dim = %d, hidden = %d, "
                "kernel = %d, tp = %d>" % (self.kv, self.hd, self.hidden, self.W, self.tp))


def dense(shape, values, elem):
    def rec(dims, flat):
        if not dims:
            if elem != "bf16":
                return str(int(flat[0]))
            v = flat[0]
            return "%d.0" % v if v == int(v) else repr(v)
        n = len(flat) // dims[0]
        return "[" + ", ".join(rec(dims[1:], flat[i * n:(i + 1) * n]) for i in range(dims[0])) + "]"
    return "dense<%s>" % rec(list(shape), values)


def mtype(shape, elem):
    return "memref<%s%s>" % ("".join("%dx" % d for d in shape), elem)


def rows(shape, flat):
    """The innermost rows as printMemref prints them (whitespace collapsed)."""
    n = shape[-1]
    return ["[" + ", ".join(fmt(v) for v in flat[i:i + n]) + "]" for i in range(0, len(flat), n)]


class Case:
    def __init__(self, name, summary, layout, seqs, ops, page_bytes=None,
                 num_blocks=8, flat_streams=(), tables=None, slots=None,
                 pad=0, token_seq=False):
        self.name, self.summary, self.L, self.seqs, self.ops = name, summary, layout, seqs, ops
        L = layout
        page = L.H * L.N * L.D * 2
        self.page_bytes = page_bytes or page
        self.S = self.page_bytes // 2
        self.nb = num_blocks
        self.flat_streams = flat_streams
        self.qsl = [0]
        for nc, n in seqs:
            self.qsl.append(self.qsl[-1] + n)
        self.T = self.qsl[-1]
        # Block tables: distinct physical blocks, block 0 unused (null).
        if tables is None:
            M = max((nc + n + L.N - 1) // L.N for nc, n in seqs)
            nxt = 1
            tables = []
            for nc, n in seqs:
                row = []
                for j in range(M):
                    if j * L.N < nc + n:
                        row.append(nxt)
                        nxt += 1
                    else:
                        row.append(0)
                tables.append(row)
            assert nxt <= self.nb, name
        self.bt = tables
        # Slots: only the last W-1 positions of each sequence are stored
        # (earlier tokens of a long chunk get -1), as the runtime does.
        if slots is None:
            slots = []
            for b, (nc, n) in enumerate(seqs):
                end = nc + n
                for i in range(n):
                    p = nc + i
                    if p >= end - (L.W - 1):
                        slots.append(self.bt[b][p // L.N] * L.N + p % L.N)
                    else:
                        slots.append(-1)
        # Padding tokens [real, T): their slots address a live history row
        # and their token_seq entries no sequence; nothing may read or write
        # through them, and a conv's output for them is x.
        self.real = self.T
        self.T += pad
        self.token_seq = None
        if token_seq:
            self.token_seq = [b for b, (nc, n) in enumerate(seqs) for _ in range(n)]
            self.token_seq += [1000] * pad
        if pad:
            live = [self.bt[b][(nc - 1) // L.N] * L.N + (nc - 1) % L.N
                    for b, (nc, n) in enumerate(seqs) if nc > 0]
            slots = slots + [live[0] if live else -1] * pad
        self.slots = slots

    # -- data ------------------------------------------------------------
    def x(self, stream):
        L = self.L
        w = L.ranges[stream][1]
        s = "kvam".index(stream[0])
        return [float(((t * 7 + h * 3 + c * 5 + s) % 9) - 4)
                for t in range(self.T) for h in range(L.H) for c in range(w)]

    def weights(self, stream):
        L = self.L
        w = L.ranges[stream][1]
        vals = [1.0, -1.0, 2.0, 0.5, -0.5]
        return [vals[(ch + 2 * j) % 5] for ch in range(L.H * w) for j in range(L.W)]

    def bias(self, stream):
        w = self.L.ranges[stream][1]
        return [((ch % 5) - 2) * 0.5 for ch in range(self.L.H * w)]

    def initial_cache(self):
        L = self.L
        cache = [POISON] * (self.nb * self.S)
        for b, (nc, n) in enumerate(self.seqs):
            for q in range(max(0, nc - (L.W - 1)), nc):
                blk = self.bt[b][q // L.N]
                for h in range(L.H):
                    for c in range(L.raw):
                        cache[blk * self.S + h * L.N * L.D + (q % L.N) * L.D + c] = \
                            float(((q * 5 + h * 3 + c) % 7) - 3)
        return cache

    # -- the model of docs/Design.md section 4 ---------------------------------------
    def run(self):
        L = self.L
        cache = self.initial_cache()
        outs = []
        for op in self.ops:
            kind, stream = op[0], op[1]
            off, w = L.ranges[stream]
            x = self.x(stream)
            X = lambda t, h, c: x[(t * L.H + h) * w + c]
            if kind == "insert":
                for t in range(self.real):
                    slot = self.slots[t]
                    if slot < 0:
                        continue
                    for h in range(L.H):
                        for c in range(w):
                            cache[(slot // L.N) * self.S + h * L.N * L.D +
                                  (slot % L.N) * L.D + off + c] = X(t, h, c)
                continue
            opts = op[2]
            wts = self.weights(stream)
            bias = self.bias(stream) if opts.get("bias") else None
            y = []
            for t in range(self.T):
                if t >= self.real:  # padding: y = x
                    y.extend(X(t, h, c) for h in range(L.H) for c in range(w))
                    continue
                b = max(i for i in range(len(self.seqs)) if self.qsl[i] <= t)
                nc = self.seqs[b][0]
                p = nc + t - self.qsl[b]
                for h in range(L.H):
                    for c in range(w):
                        ch = h * w + c
                        acc = bias[ch] if bias else 0.0
                        for j in range(L.W):
                            q = p - (L.W - 1) + j
                            if q < 0:
                                tap = 0.0
                            elif q >= nc:
                                tap = X(self.qsl[b] + q - nc, h, c)
                            else:
                                blk = self.bt[b][q // L.N]
                                tap = cache[blk * self.S + h * L.N * L.D + (q % L.N) * L.D + off + c]
                            acc = f32(wts[ch * L.W + j] * tap + acc)
                        if opts.get("act") == "silu":
                            acc = f32(acc * f32(1.0 / f32(1.0 + f32(math.exp(-acc)))))
                        if opts.get("residual", True):
                            acc = f32(acc + X(t, h, c))
                        y.append(bf16(acc))
            outs.append((stream, y))
        return outs, cache

    # -- MLIR ----------------------------------------------------------------
    def stream_shape(self, stream):
        w = self.L.ranges[stream][1]
        if stream in self.flat_streams:
            return [self.T, self.L.H * w]
        return [self.T, self.L.H, w]

    def emit(self):
        L = self.L
        outs, final_cache = self.run()
        g = []  # globals
        body = []
        streams = sorted({op[1] for op in self.ops}, key="k v attn mlp".split().index)
        cache_type = "memref<%dx%dx%dx%dxbf16, strided<[%d, %d, %d, 1]>>" % (
            self.nb, L.H, L.N, L.D, self.S, L.N * L.D, L.D)
        nbytes = self.nb * self.page_bytes
        g.append('memref.global "private" constant @init : %s = %s' % (
            mtype([self.nb, self.S], "bf16"), dense([self.nb, self.S], self.initial_cache(), "bf16")))
        g.append('memref.global "private" constant @qsl : %s = %s' % (
            mtype([len(self.qsl)], "i32"), dense([len(self.qsl)], self.qsl, "i32")))
        g.append('memref.global "private" constant @nc : %s = %s' % (
            mtype([len(self.seqs)], "i32"), dense([len(self.seqs)], [s[0] for s in self.seqs], "i32")))
        M = len(self.bt[0])
        g.append('memref.global "private" constant @bt : %s = %s' % (
            mtype([len(self.bt), M], "i32"), dense([len(self.bt), M], sum(self.bt, []), "i32")))
        g.append('memref.global "private" constant @slots : %s = %s' % (
            mtype([self.T], "i64"), dense([self.T], self.slots, "i64")))
        if self.token_seq:
            g.append('memref.global "private" constant @token_seq : %s = %s' % (
                mtype([self.T], "i32"), dense([self.T], self.token_seq, "i32")))
        for s in streams:
            shp = self.stream_shape(s)
            g.append('memref.global "private" constant @x_%s : %s = %s' % (
                s, mtype(shp, "bf16"), dense(shp, self.x(s), "bf16")))
            w = L.ranges[s][1]
            g.append('memref.global "private" constant @w_%s : %s = %s' % (
                s, mtype([L.H * w, L.W], "bf16"), dense([L.H * w, L.W], self.weights(s), "bf16")))
            g.append('memref.global "private" constant @b_%s : %s = %s' % (
                s, mtype([L.H * w], "bf16"), dense([L.H * w], self.bias(s), "bf16")))
        body.append("%c0 = arith.constant 0 : index")
        body.append("%%buffer = memref.alloc() {alignment = 16 : i64} : memref<%dxi8>" % nbytes)
        body.append("%%raw = memref.view %%buffer[%%c0][] : memref<%dxi8> to %s" % (
            nbytes, mtype([self.nb, self.S], "bf16")))
        body.append("%%init = memref.get_global @init : %s" % mtype([self.nb, self.S], "bf16"))
        body.append("memref.copy %%init, %%raw : %s to %s" % (
            mtype([self.nb, self.S], "bf16"), mtype([self.nb, self.S], "bf16")))
        body.append("%%cache = sconv.bind %%buffer layout #l page_bytes %d : memref<%dxi8> -> !cache" % (
            self.page_bytes, nbytes))
        for name, elem, shp in (("qsl", "i32", [len(self.qsl)]), ("nc", "i32", [len(self.seqs)]),
                                ("bt", "i32", [len(self.bt), M]), ("slots", "i64", [self.T])):
            body.append("%%%s = memref.get_global @%s : %s" % (name, name, mtype(shp, elem)))
        seq = ""
        if self.token_seq:
            body.append("%%token_seq = memref.get_global @token_seq : %s" % mtype([self.T], "i32"))
            seq = " token_seq(%%token_seq : %s)" % mtype([self.T], "i32")
        body.append("%%step = sconv.step query_start_loc %%qsl num_computed %%nc block_table %%bt "
                    "slot_mapping %%slots%s : %s, %s, %s, %s" % (seq,
                        mtype([len(self.qsl)], "i32"), mtype([len(self.seqs)], "i32"),
                        mtype([len(self.bt), M], "i32"), mtype([self.T], "i64")))
        for s in streams:
            shp = self.stream_shape(s)
            w = L.ranges[s][1]
            body.append("%%x_%s = memref.get_global @x_%s : %s" % (s, s, mtype(shp, "bf16")))
            body.append("%%w_%s = memref.get_global @w_%s : %s" % (s, s, mtype([L.H * w, L.W], "bf16")))
            body.append("%%b_%s = memref.get_global @b_%s : %s" % (s, s, mtype([L.H * w], "bf16")))
        for i, op in enumerate(self.ops):
            s = op[1]
            shp = mtype(self.stream_shape(s), "bf16")
            w = L.ranges[s][1]
            if op[0] == "insert":
                body.append("sconv.insert %%x_%s into %%cache[%s] layout #l step %%step : %s, !cache" % (
                    s, s, shp))
                continue
            opts = op[2]
            body.append("%%y%d = memref.alloc() : %s" % (i, shp))
            bias = " bias %%b_%s" % s if opts.get("bias") else ""
            bias_t = ", %s" % mtype([L.H * w], "bf16") if opts.get("bias") else ""
            act = " activation silu" if opts.get("act") == "silu" else ""
            attrs = " {residual = false}" if not opts.get("residual", True) else ""
            body.append("sconv.conv %%x_%s, %%w_%s%s history %%cache[%s] layout #l step %%step into %%y%d%s%s"
                        " : %s, %s, !cache%s -> %s" % (
                            s, s, bias, s, i, act, attrs, shp, mtype([L.H * w, L.W], "bf16"), bias_t, shp))
        checks = []
        conv_index = 0
        for i, op in enumerate(self.ops):
            if op[0] != "conv":
                continue
            s = op[1]
            shp = self.stream_shape(s)
            body.append('vector.print str "== conv %d %s\\n"' % (i, s))
            body.append("%%u%d = memref.cast %%y%d : %s to memref<*xbf16>" % (i, i, mtype(shp, "bf16")))
            body.append("call @printMemrefBF16(%%u%d) : (memref<*xbf16>) -> ()" % i)
            checks.append("// CHECK-LABEL: == conv %d %s" % (i, s))
            checks.append("// CHECK: sizes = [%s]" % ", ".join(str(d) for d in shp))
            for r in rows(shp, outs[conv_index][1]):
                checks.append("// CHECK-NEXT: " + r)
            conv_index += 1
        if not any(op[0] == "insert" for op in self.ops):
            body.append("memref.dealloc %buffer : " + mtype([nbytes], "i8"))
            return self.write(g, body, checks, streams, cache_type)
        body.append('vector.print str "== cache\\n"')
        body.append("%%ucache = memref.cast %%raw : %s to memref<*xbf16>" % mtype([self.nb, self.S], "bf16"))
        body.append("call @printMemrefBF16(%ucache) : (memref<*xbf16>) -> ()")
        body.append("memref.dealloc %buffer : " + mtype([nbytes], "i8"))
        checks.append("// CHECK-LABEL: == cache")
        checks.append("// CHECK: sizes = [%d, %d]" % (self.nb, self.S))
        for r in rows([self.nb, self.S], final_cache):
            checks.append("// CHECK-NEXT: " + r)
        return self.write(g, body, checks, streams, cache_type)

    def write(self, g, body, checks, streams, cache_type):
        L = self.L

        out = []
        out.append("// GENERATED by generate.py in this folder: edit the generator, not this file.")
        out.append("// RUN: inkling-opt %s --inkling-lower-to-cpu | mlir-runner -e main -entry-point-result=void \\")
        out.append("// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s")
        out.append("")
        for line in self.summary.strip().splitlines():
            out.append("// " + line.strip())
        out.append("// Layout: H = %d, D = %d, N = %d, raw = %d; streams %s; page %d bytes (block stride %d"
                   " elements), %d blocks; 99 marks memory nothing may write." % (
                       L.H, L.D, L.N, L.raw,
                       ", ".join("%s [%d, %d)" % (s, L.ranges[s][0], L.ranges[s][0] + L.ranges[s][1])
                                 for s in streams),
                       self.page_bytes, self.S, self.nb))
        out.append("// Sequences (num_computed, tokens): %s; slots %s; block table %s." % (
            self.seqs, self.slots, self.bt))
        if self.T > self.real:
            out.append("// Padding tokens [%d, %d); token_seq %s." % (self.real, self.T, self.token_seq))
        out.append("")
        out.append("#l = " + L.attr())
        out.append("!cache = " + cache_type)
        out.append("")
        out.extend(g)
        out.append("")
        out.append("func.func private @printMemrefBF16(memref<*xbf16>) attributes {llvm.emit_c_interface}")
        out.append("")
        out.append("func.func @main() {")
        out.extend("  " + b for b in body)
        out.append("  return")
        out.append("}")
        out.append("")
        out.extend(checks)
        out.append("")
        with open(os.path.join(HERE, self.name + ".mlir"), "w") as f:
            f.write("\n".join(out))


TINY = Layout(kv_heads=2, head_dim=3, hidden=8, kernel=2)    # D = 16, raw 14
ODD = Layout(kv_heads=2, head_dim=3, hidden=10, kernel=3)    # widths 3, 5; D 16
WIDE = Layout(kv_heads=1, head_dim=8, hidden=10, kernel=4)   # widths 8, 10; D 64
WIDE2 = Layout(kv_heads=1, head_dim=8, hidden=10, kernel=2)  # the same, N = 2

CASES = [
    Case("insert", """
        sconv.insert of all four streams with slots -1 (not stored) and a page padded
        from 128 to 160 bytes: rows land through the block stride, the padding of
        every row [raw, D) and of every page keeps its 99.""",
         TINY, seqs=[(0, 3), (5, 2)], page_bytes=160, num_blocks=6,
         slots=[-1, 2 * 2 + 1, 1 * 2 + 0, -1, 5 * 2 + 1],
         tables=[[1, 2, 0], [3, 4, 5]],
         ops=[("insert", "k"), ("insert", "v"), ("insert", "attn"), ("insert", "mlp")],
         flat_streams=("attn",)),
    Case("insert_vector_tail", """
        sconv.insert with 8-channel vectors and scalar tails: k and v (8 wide, at
        offsets 0 and 8: aligned vectors), attn (10 wide at 16: one vector and a
        2-channel tail), mlp (10 wide at offset 26: an unaligned vector and a tail).""",
         WIDE2, seqs=[(2, 3)], num_blocks=4,
         ops=[("insert", "k"), ("insert", "v"), ("insert", "attn"), ("insert", "mlp")],
         flat_streams=("mlp",)),
    Case("conv_decode", """
        Decode: two sequences of one token each; every tap but the last reads the
        cache through the block table.""",
         WIDE, seqs=[(5, 1), (9, 1)], num_blocks=8,
         ops=[("conv", "k", {}), ("conv", "mlp", {})],
         flat_streams=("mlp",)),
    Case("conv_prefill", """
        Prefill from position 0: taps before position 0 read 0, the others the
        step's own tokens; then the tokens are inserted: only the last W-1 are
        stored (the others have slot -1).""",
         ODD, seqs=[(0, 5)], num_blocks=4,
         ops=[("conv", "k", {}), ("conv", "attn", {}), ("insert", "k"), ("insert", "attn")],
         flat_streams=("attn",)),
    Case("conv_chunked_prefill", """
        Chunked prefill: the second chunk of a prompt (positions 6..10) reads
        positions 4 and 5 from the cache (the previous chunk) and the rest from x.""",
         ODD, seqs=[(6, 5)], num_blocks=6,
         ops=[("conv", "v", {}), ("conv", "mlp", {})]),
    Case("conv_mixed_batch", """
        A mixed batch of three sequences with different num_computed: a prefill
        from 0 (3 tokens), a decode at position 7, and a chunk at positions 4..5.""",
         WIDE, seqs=[(0, 3), (7, 1), (4, 2)], num_blocks=10,
         ops=[("conv", "v", {}), ("conv", "attn", {})]),
    Case("conv_options", """
        Residual off, silu and bias (one at a time and together), on a decode and a
        chunk.""",
         ODD, seqs=[(4, 1), (2, 2)], num_blocks=6,
         ops=[("conv", "k", {"residual": False}), ("conv", "v", {"bias": True}),
              ("conv", "attn", {"act": "silu"}),
              ("conv", "mlp", {"act": "silu", "bias": True, "residual": False})]),
    Case("padded_token_seq", """
        The mixed batch padded with 3 tokens (graph capture), with token_seq: each
        token's sequence is loaded, not searched for. The padding tokens' slots
        address a live history row and their token_seq entries no sequence: the
        convs give y = x for them and the (fused) inserts store nothing.""",
         WIDE, seqs=[(0, 3), (7, 1), (4, 2)], num_blocks=10, pad=3, token_seq=True,
         ops=[("conv", "v", {}), ("insert", "v"),
              ("conv", "attn", {"bias": True, "act": "silu", "residual": False}),
              ("insert", "attn")],
         flat_streams=("attn",)),
    Case("padded", """
        Decode of two sequences padded with 2 tokens, without token_seq (the
        sequence by search over query_start_loc): the padding tokens read and
        write no cache, their outputs equal their inputs.""",
         WIDE, seqs=[(5, 1), (9, 1)], pad=2,
         ops=[("conv", "k", {"bias": True}), ("insert", "k")]),
]

for W in (1, 2, 3, 4, 8):
    CASES.append(Case("conv_kernel_%d" % W, """
        Kernel size %d: a chunk that starts at position 3 (history from the cache,
        the rest from x) next to a prefill from 0.""" % W,
        Layout(kv_heads=1, head_dim=8, hidden=3, kernel=W), seqs=[(3, 4), (0, 2)],
        num_blocks=1 + 2 * (7 // W + 1),
        ops=[("conv", "k", {}), ("conv", "attn", {})]))

if __name__ == "__main__":
    for case in CASES:
        case.emit()
