"""Random layouts through inkling-run --replay (stdlib only, no numpy).

  replay_property.py INKLING_RUN WORK_DIR [--seed S] [--layouts N]

For each random layout the dialect accepts (kernel 1..8, widths mostly not
multiples of 8, tp any divisor of kv_heads, an exact, padded or cross-layer
block stride; N = kernel, a generated field for when the layout takes its
own block size) it writes a one-stream model (conv then insert, random
stream, [T, H, w] or [T, H*w] form, random bias), a random mixed batch
(prefills, chunked prefills, decodes, speculative chunks; each stored token
at its own slot block_table[b][p / N] * N + p % N) and small-integer
tensors, replays the conv and the insert, and compares the outputs with an
independent computation here. Small integers keep the conv's f32
arithmetic exact, so the comparison is bit for bit.
"""
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npy_replay import bf16, write  # noqa: E402

STREAMS = ["k", "v", "attn", "mlp"]


def draw_layout(rng, fixed=None):
    def width():
        return 8 * rng.randint(1, 4) if rng.random() < 0.2 else rng.randint(
            1, 30)
    kv = rng.randint(1, 8)
    hd, hph = width(), width()
    kernel = rng.randint(1, 8)
    tp = rng.choice([d for d in range(1, kv + 1) if kv % d == 0])
    if fixed:
        kv, hd, hph, kernel, tp = fixed
    n = kernel  # the block size N; the layout attribute has no N yet
    raw = 2 * hd + 2 * hph
    d = 1
    while d < raw:
        d *= 2
    h = kv // tp
    page = h * n * d * 2
    kind = rng.randint(0, 2)
    if kind == 0:
        page_bytes = page
    elif kind == 1:
        page_bytes = page + 2 * rng.randint(1, 40)
    else:
        page_bytes = rng.randint(2, 4) * ((page + 15) // 16 * 16)
    ranges = {"k": (0, hd), "v": (hd, hd), "attn": (2 * hd, hph),
              "mlp": (2 * hd + hph, hph)}
    return dict(kv=kv, hd=hd, hidden=kv * hph, kernel=kernel, tp=tp, n=n,
                d=d, h=h, page_bytes=page_bytes, ranges=ranges)


def model(lay, stream, flat, bias):
    h, w = lay["h"], lay["ranges"][stream][1]
    kernel, n, d = lay["kernel"], lay["n"], lay["d"]
    attr = ("#sconv.layout<kv_heads = %d, head_dim = %d, hidden = %d, "
            "kernel = %d, tp = %d>" % (lay["kv"], lay["hd"], lay["hidden"],
                                       kernel, lay["tp"]))
    cache = "memref<?x%dx%dx%dxbf16, strided<[%d, %d, %d, 1]>>" % (
        h, n, d, lay["page_bytes"] // 2, n * d, d)
    x = ("memref<?x%dxbf16>" % (h * w)) if flat else (
        "memref<?x%dx%dxbf16>" % (h, w))
    wt = "memref<%dx%dxbf16>" % (h * w, kernel)
    bt = "memref<%dxbf16>" % (h * w)
    return "\n".join([
        "func.func @layer(%%buffer: memref<?xi8>, %%qsl: memref<?xi32>, "
        "%%nc: memref<?xi32>, %%bt: memref<?x?xi32>, %%slots: memref<?xi64>, "
        "%%x: %s, %%w: %s%s, %%y: %s) {" % (
            x, wt, (", %%b: %s" % bt) if bias else "", x),
        "  %%cache = sconv.bind %%buffer layout %s page_bytes %d "
        ": memref<?xi8> -> %s" % (attr, lay["page_bytes"], cache),
        "  %step = sconv.step query_start_loc %qsl num_computed %nc "
        "block_table %bt slot_mapping %slots : memref<?xi32>, memref<?xi32>, "
        "memref<?x?xi32>, memref<?xi64>",
        "  sconv.conv %%x, %%w%s history %%cache[%s] layout %s step %%step "
        "into %%y : %s, %s, %s%s -> %s" % (
            " bias %b" if bias else "", stream, attr, x, wt, cache,
            (", " + bt) if bias else "", x),
        "  sconv.insert %%x into %%cache[%s] layout %s step %%step : %s, %s"
        % (stream, attr, x, cache),
        "  return", "}", ""])


def draw_step(rng, lay):
    kernel, n = lay["kernel"], lay["n"]
    seqs = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.randint(0, 3)
        if kind == 0:
            seqs.append((0, rng.randint(2, 9)))
        elif kind == 1:
            seqs.append((rng.randint(1, 13), rng.randint(2, 9)))
        elif kind == 2:
            seqs.append((rng.randint(1, 13), 1))
        else:
            seqs.append((rng.randint(1, 13), rng.randint(1, 3)))
    m = max((nc + ln + n - 1) // n for nc, ln in seqs)
    needed = sum((nc + ln + n - 1) // n - max(0, nc - (kernel - 1)) // n
                 for nc, ln in seqs)
    blocks = needed + 3
    pool = list(range(1, blocks))
    rng.shuffle(pool)
    qsl, nc_list, bt, slots, history = [0], [], [], [], []
    for b, (nc, ln) in enumerate(seqs):
        first = max(0, nc - (kernel - 1)) // n
        row = [0] * m
        for j in range(first, (nc + ln + n - 1) // n):
            row[j] = pool.pop()
        bt.extend(row)
        history.extend((b, q) for q in range(max(0, nc - (kernel - 1)), nc))
        for i in range(ln):
            p = nc + i
            stored = p >= nc + ln - (kernel - 1) and rng.random() > 0.1
            slots.append(row[p // n] * n + p % n if stored else -1)
        nc_list.append(nc)
        qsl.append(qsl[-1] + ln)
    return dict(qsl=qsl, nc=nc_list, bt=bt, m=m, slots=slots, blocks=blocks,
                history=history)


def check_layout(index, rng, run, work):
    # Layout 0 is issue 13's (kv_heads 4, head_dim 24, hidden 72, kernel 3:
    # the weights of head h at element 54h), its attn conv: the replay that
    # died with SIGSEGV while 16-byte alignment was claimed there.
    lay = draw_layout(rng, (4, 24, 18, 3, 1) if index == 0 else None)
    stream = rng.choice(STREAMS)
    flat = rng.random() < 0.5
    bias = rng.random() < 0.5
    if index == 0:
        stream, flat, bias = "attn", True, False
    off, w = lay["ranges"][stream]
    h, n, d, kernel = lay["h"], lay["n"], lay["d"], lay["kernel"]
    stride = lay["page_bytes"] // 2
    name = "layout %d (kv_heads %d, head_dim %d, hidden %d, kernel %d, tp %d," \
        " N %d, page_bytes %d, stream %s%s%s)" % (
            index, lay["kv"], lay["hd"], lay["hidden"], kernel, lay["tp"], n,
            lay["page_bytes"], stream, ", flat" if flat else "",
            ", bias" if bias else "")
    dir_ = os.path.join(work, "l%d" % index)
    os.makedirs(dir_, exist_ok=True)
    with open(os.path.join(dir_, "model.mlir"), "w") as f:
        f.write(model(lay, stream, flat, bias))
    st = draw_step(rng, lay)
    T = st["qsl"][-1]
    # The cache: 99 everywhere (never read), small integers in history rows.
    cache = [99] * (st["blocks"] * stride)

    def at(block, hh, row, c):
        return block * stride + (hh * n + row) * d + c
    for b, q in st["history"]:
        block = st["bt"][b * st["m"] + q // n]
        for hh in range(h):
            for c in range(w):
                cache[at(block, hh, q % n, off + c)] = rng.randint(-3, 3)
    x = [[[rng.randint(-3, 3) for c in range(w)] for hh in range(h)]
         for t in range(T)]
    wts = [[rng.randint(-2, 2) for j in range(kernel)] for ch in range(h * w)]
    bvec = [rng.randint(-2, 2) for ch in range(h * w)]
    # Expected conv output and cache.
    y = [[[0] * w for hh in range(h)] for t in range(T)]
    for b in range(len(st["nc"])):
        nc = st["nc"][b]
        for t in range(st["qsl"][b], st["qsl"][b + 1]):
            p = nc + t - st["qsl"][b]
            for hh in range(h):
                for c in range(w):
                    ch = hh * w + c
                    acc = bvec[ch] if bias else 0
                    for j in range(kernel):
                        q = p - (kernel - 1) + j
                        if q < 0:
                            tap = 0
                        elif q >= nc:
                            tap = x[st["qsl"][b] + q - nc][hh][c]
                        else:
                            blk = st["bt"][b * st["m"] + q // n]
                            tap = cache[at(blk, hh, q % n, off + c)]
                        acc += wts[ch][j] * tap
                    y[t][hh][c] = x[t][hh][c] + acc
    new_cache = list(cache)
    for t in range(T):
        s = st["slots"][t]
        if s < 0:
            continue
        for hh in range(h):
            for c in range(w):
                new_cache[at(s // n, hh, s % n, off + c)] = x[t][hh][c]
    shape_x = [T, h * w] if flat else [T, h, w]
    flat_x = [v for r in x for hv in r for v in hv]
    files = {
        "cache": ("<u2", [len(cache)], [bf16(v) for v in cache]),
        "query_start_loc": ("<i4", [len(st["qsl"])], st["qsl"]),
        "num_computed": ("<i4", [len(st["nc"])], st["nc"]),
        "block_table": ("<i4", [len(st["nc"]), st["m"]], st["bt"]),
        "slot_mapping": ("<i8", [T], st["slots"]),
        "x": ("<u2", shape_x, [bf16(v) for v in flat_x]),
        "weights": ("<u2", [h * w, kernel], [bf16(v) for r in wts for v in r]),
        "bias": ("<u2", [h * w], [bf16(v) for v in bvec]),
    }
    for key, (descr, shape, values) in files.items():
        write(os.path.join(dir_, key + ".npy"), descr, shape, values)
    meta = ["cache", "query_start_loc", "num_computed", "block_table",
            "slot_mapping", "x"]
    ins = {0: meta + ["weights"] + (["bias"] if bias else []), 1: meta}
    expected = {
        0: ("out.npy", [bf16(v) for r in y for hv in r for v in hv]),
        1: ("cache.npy", [bf16(v) for v in new_cache])}
    failures = 0
    for op in (0, 1):
        out = os.path.join(dir_, "out%d" % op)
        args = [run, os.path.join(dir_, "model.mlir"), "--replay=%d" % op,
                "--inputs=" + ",".join("%s=%s" % (k, os.path.join(
                    dir_, k + ".npy")) for k in ins[op]),
                "--outputs=" + out]
        proc = subprocess.run(args, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            print("FAIL %s, op %d: exit %d: %s" % (
                name, op, proc.returncode, proc.stdout.decode().strip()))
            failures += 1
            continue
        fname, want = expected[op]
        with open(os.path.join(out, fname), "rb") as f:
            data = f.read()
        hlen = struct.unpack("<H", data[8:10])[0]
        got = list(struct.unpack("<%dH" % (len(want)), data[10 + hlen:]))
        if got != want:
            i = next(i for i in range(len(want)) if got[i] != want[i])
            print("FAIL %s, op %d: element %d is 0x%04x, expected 0x%04x" % (
                name, op, i, got[i], want[i]))
            failures += 1
    if not failures:
        print("ok %s" % name)
    return failures


def main():
    run, work = sys.argv[1], sys.argv[2]
    seed, count = 20261201, 8
    rest = sys.argv[3:]
    for i, arg in enumerate(rest):
        if arg == "--seed":
            seed = int(rest[i + 1])
        elif arg == "--layouts":
            count = int(rest[i + 1])
    rng = random.Random(seed)
    failures = sum(check_layout(i, rng, run, work) for i in range(count))
    print("%d of %d layouts failed" % (min(failures, count), count)
          if failures else "all %d layouts match" % count)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
