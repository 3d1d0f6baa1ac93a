"""Inputs and expected outputs for replay.mlir (stdlib only, no numpy).

  npy_replay.py gen DIR      writes the inputs of the small layer's k conv
                             and k insert, their expected outputs, and some
                             malformed files
  npy_replay.py cmp A B      exits 1 with the first difference of two .npy
                             files (same dtype and shape, then same data)

Values are small integers, so the conv's f32 arithmetic is exact and the
expected outputs are plain integer sums.
"""
import os
import random
import struct
import sys

H, HD, D, N, W = 2, 8, 32, 4, 4  # kv_heads 2, head_dim 8, D 32, kernel 4


def bf16(value):
    return struct.unpack(">H", struct.pack(">f", float(value))[:2])[0]


def write(path, descr, shape, values):
    fmt = {"<u2": "H", "<i4": "i", "<i8": "q", "<u4": "I", "<u8": "Q"}[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join("%d" % s for s in shape) if len(shape) != 1
        else "%d," % shape[0])
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<H", data[8:10])[0]
    return data[10:10 + n].decode("latin1").strip(), data[10 + n:]


def gen(out, n=4):
    """n: the block size N (inkling-run --block-size), independent of W."""
    global N
    N = n
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    # Two sequences: 3 tokens at positions 5..7 (history 2..4; position 5 not
    # stored), 2 tokens at positions 0..1. Row 0 maps logical block j to
    # 2 * cols - j, row 1 to j + 1 (cols columns cover positions 0..7).
    cols = 7 // N + 1
    blocks = max(8, 2 * cols + 2)
    cache = [rng.randint(-3, 3) for _ in range(blocks * H * N * D)]
    qsl, nc = [0, 3, 5], [5, 0]
    bt = [2 * cols - j for j in range(cols)] + [j + 1 for j in range(cols)]
    slot = lambda b, p: bt[b * cols + p // N] * N + p % N
    slots = [-1, slot(0, 6), slot(0, 7), slot(1, 0), slot(1, 1)]
    seqs = [(0, 5, 3), (1, 0, 2)]  # (row, num_computed, tokens)
    T = 5
    x = [[[rng.randint(-3, 3) for c in range(HD)] for h in range(H)]
         for t in range(T)]
    w = [[rng.randint(-2, 2) for j in range(W)] for ch in range(H * HD)]

    def cache_at(block, h, row, d):
        return cache[((block * H + h) * N + row) * D + d]

    y = [[[0] * HD for h in range(H)] for t in range(T)]
    for b, computed, count in seqs:
        for i in range(count):
            t, p = qsl[b] + i, computed + i
            for h in range(H):
                for c in range(HD):
                    acc = 0
                    for j in range(W):
                        q = p - (W - 1) + j
                        if q < 0:
                            tap = 0
                        elif q >= computed:
                            tap = x[qsl[b] + q - computed][h][c]
                        else:
                            tap = cache_at(bt[b * cols + q // N], h, q % N, c)
                        acc += w[h * HD + c][j] * tap
                    y[t][h][c] = x[t][h][c] + acc  # residual
    new_cache = list(cache)
    for t in range(T):
        if slots[t] < 0:
            continue
        block, row = divmod(slots[t], N)
        for h in range(H):
            for c in range(HD):
                new_cache[((block * H + h) * N + row) * D + c] = x[t][h][c]

    flat = lambda a: [v for r in a for hv in r for v in hv]
    write(os.path.join(out, "cache.npy"), "<u2", [blocks, H, N, D],
          [bf16(v) for v in cache])
    write(os.path.join(out, "qsl.npy"), "<i4", [3], qsl)
    write(os.path.join(out, "nc.npy"), "<i4", [2], nc)
    write(os.path.join(out, "bt.npy"), "<i4", [2, cols], bt)
    write(os.path.join(out, "slots.npy"), "<i8", [5], slots)
    write(os.path.join(out, "x.npy"), "<u2", [T, H, HD],
          [bf16(v) for v in flat(x)])
    write(os.path.join(out, "w.npy"), "<u2", [H * HD, W],
          [bf16(v) for r in w for v in r])
    write(os.path.join(out, "expected_out.npy"), "<u2", [T, H, HD],
          [bf16(v) for v in flat(y)])
    write(os.path.join(out, "expected_cache.npy"), "<u2", [blocks, H, N, D],
          [bf16(v) for v in new_cache])
    # Bad inputs.
    write(os.path.join(out, "bad_slots.npy"), "<i8", [5],
          [-1, 99 * N, slot(0, 7), slot(1, 0), slot(1, 1)])
    # x transposed: the element count of (5, 2, 8), the shape (5, 8, 2).
    write(os.path.join(out, "x_transposed.npy"), "<u2", [T, HD, H],
          [bf16(v) for v in flat(x)])
    # Token 2 stores into token 1's slot: a race on a GPU.
    write(os.path.join(out, "slots_repeated.npy"), "<i8", [5],
          [-1, slot(0, 6), slot(0, 6), slot(1, 0), slot(1, 1)])
    # Token 1 (position 6) stores into the row of position 4, a history row
    # the convs read, not its own slot.
    write(os.path.join(out, "slots_not_own.npy"), "<i8", [5],
          [-1, slot(0, 4), slot(0, 7), slot(1, 0), slot(1, 1)])
    # Unsigned metadata: 0xFFFFFFFF is 4294967295, not -1.
    write(os.path.join(out, "bt_u4.npy"), "<u4", [2, cols],
          [0xFFFFFFFF] + bt[1:])
    write(os.path.join(out, "slots_u8.npy"), "<u8", [5],
          [2 ** 64 - 1, slot(0, 6), slot(0, 7), slot(1, 0), slot(1, 1)])
    # A header that names 'descr' twice.
    header = ("{'descr': '<i4', 'descr': '<i8', 'fortran_order': False, "
              "'shape': (3,), }")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(out, "dup_key.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1") + struct.pack("<3i", 0, 3, 5))
    os.makedirs(os.path.join(out, "a_directory.npy"), exist_ok=True)
    with open(os.path.join(out, "not_npy.npy"), "wb") as f:
        f.write(b"PK\x03\x04 this is a zip file")
    with open(os.path.join(out, "x.npy"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.npy"), "wb") as f:
        f.write(data[:-6])
    # Padding (graph capture): 3 rows past qsl[B] whose slots address a
    # live history row (position 2 of sequence 0, block 3): the conv's
    # output for them is x, the insert stores nothing for them.
    P = 3
    xp = x + [[[rng.randint(-3, 3) for c in range(HD)] for h in range(H)]
              for t in range(P)]
    write(os.path.join(out, "x_pad.npy"), "<u2", [T + P, H, HD],
          [bf16(v) for v in flat(xp)])
    write(os.path.join(out, "slots_pad.npy"), "<i8", [T + P],
          slots + [3 * N + 2] * P)
    write(os.path.join(out, "expected_pad_out.npy"), "<u2", [T + P, H, HD],
          [bf16(v) for v in flat(y + xp[T:])])


def cmp(a, b):
    ha, da = read(a)
    hb, db = read(b)
    if ha != hb:
        print("headers differ: %s vs %s" % (ha, hb))
        return 1
    if da != db:
        for i in range(0, len(da), 2):
            if da[i:i + 2] != db[i:i + 2]:
                print("element %d differs: 0x%04x vs 0x%04x" % (
                    i // 2, struct.unpack("<H", da[i:i + 2])[0],
                    struct.unpack("<H", db[i:i + 2])[0]))
                return 1
    print("same: %s" % os.path.basename(a))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], *(int(a) for a in sys.argv[3:4]))
    else:
        sys.exit(cmp(sys.argv[2], sys.argv[3]))
