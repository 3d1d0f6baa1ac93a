"""Seeds for inkling-fuzz-replay (fuzz/ReplayInputsFuzzer.cpp).

  make_npy_corpus.py TEST_DIR OUT_DIR

Writes the inputs of test/tools/inkling-run/npy_replay.py (the small layer's
k conv and insert, valid and malformed) and packs them the way the target
reads them: one byte choosing the op, then each input file of the op (sorted
by name) as a 4-byte little-endian length and its bytes. Every op of the
small layer gets the valid inputs; ops 0 and 1 also each bad file in turn.
"""
import os
import struct
import subprocess
import sys
import tempfile

test_dir, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
gen = tempfile.mkdtemp(prefix="inkling-npy-corpus-")
script = os.path.join(test_dir, "tools", "inkling-run", "npy_replay.py")
subprocess.check_call([sys.executable, script, "gen", gen])
sys.path.insert(0, os.path.dirname(script))
import npy_replay  # noqa: E402

npy_replay.write(os.path.join(gen, "bias.npy"), "<u2", [16],
                 [npy_replay.bf16(v % 3) for v in range(16)])

files = {"block_table": "bt.npy", "cache": "cache.npy",
         "num_computed": "nc.npy", "query_start_loc": "qsl.npy",
         "slot_mapping": "slots.npy", "weights": "w.npy", "x": "x.npy",
         "bias": "bias.npy"}
conv = ["block_table", "cache", "num_computed", "query_start_loc",
        "slot_mapping", "weights", "x"]
insert = ["block_table", "cache", "num_computed", "query_start_loc",
          "slot_mapping", "x"]
ops = {0: conv, 1: insert, 2: conv, 3: insert, 4: conv, 5: insert,
       6: sorted(conv + ["bias"]), 7: insert}
bad = {"x": ["x_transposed.npy", "truncated.npy", "not_npy.npy"],
       "slot_mapping": ["bad_slots.npy", "slots_repeated.npy",
                        "slots_not_own.npy", "slots_u8.npy"],
       "block_table": ["bt_u4.npy"], "query_start_loc": ["dup_key.npy"]}


def pack(op, names, override):
    blob = bytes([op])
    for name in names:
        with open(os.path.join(gen, override.get(name, files[name])),
                  "rb") as f:
            data = f.read()
        blob += struct.pack("<I", len(data)) + data
    return blob


count = 0
for op, names in ops.items():
    seeds = [{}]
    if op in (0, 1):
        seeds += [{name: b} for name, bs in bad.items() if name in names
                  for b in bs]
    for override in seeds:
        with open(os.path.join(out_dir, "seed-%d-%d" % (op, count)),
                  "wb") as f:
            f.write(pack(op, names, override))
        count += 1
print("make_npy_corpus.py: %d seeds in %s" % (count, out_dir))
