"""The Python front door against the C API on one serving trace (issue 30).

Simulates a serving engine (arrivals, chunked prefill of at most --budget
tokens a step, decode, finish) over --requests requests, 70% of them
starting with one of three system prompts (named as cache points) and some
resubmitted identical prompts, driving the runtime through the Python
package and recording every runtime call. Then replays the recorded calls,
timed call by call:

  * python, batch: the package's batch API with numpy arrays (views of the
    recorded trace: ids, counts, offsets int64, tokens int32; no copies);
  * python, lists: the same calls with Python lists (what an engine that
    keeps lists pays: the marshalling);
  * C: InklingRuntimeReplay, the same calls through libinkling_runtime.so
    from C.

and prints the bookkeeping time per sequence-step (a sequence scheduled in
a step) of each and the ratio python / C. Only runtime calls are timed, not
the engine's own work.

    INKLING_RUNTIME_LIB=build/runtime/libinkling_runtime.so \\
      python3 runtime/bench/replay_trace.py \\
        --replayer build/runtime/InklingRuntimeReplay [--block-size 16]

The trace file (--trace; little-endian): 16 int64 header words (magic
"INKRACE1", token count, op word count, kernel, block size, blocks,
lookahead, max rows, columns, max tokens, max copies, policy index, S,
largest lookup batch, 0, 0), the int32 token table (prompts, then the
commits' tokens), the int64 operations:

  1 lookup   n, offsets[n+1] (into the token table), max_lengths[n], hits[n]
  2 add      from, to, start, p, points[p], id
  3 schedule n, ids[n], counts[n]
  4 build    n, ids[n], num_rows, num_padded_tokens
  5 commit   n, ids[n], accepted[n], offsets[n+1] (into the token table)
  6 finish   id
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import inkling_runtime as rt  # noqa: E402

LOOKUP, ADD, SCHEDULE, BUILD, COMMIT, FINISH = range(1, 7)
POLICIES = ("window", "snapshots", "every-block")
MAGIC = int.from_bytes(b"INKRACE1", "little")


class Recorder:
    """The engine's runtime calls, made and recorded."""

    def __init__(self, manager, buffers):
        self.m, self.buffers = manager, buffers
        self.tokens = []  # the token table, flat
        self.ops = []
        self.max_lookup = 1

    def intern(self, tokens):
        start = len(self.tokens)
        self.tokens.extend(tokens)
        return start, len(self.tokens)

    def lookup(self, spans, limits):
        offsets = [spans[0][0]] if spans else [0]
        # Consecutive spans of the table: offsets are their bounds.
        for (start, end), nxt in zip(spans, spans[1:] + [None]):
            assert nxt is None or nxt[0] == end
            offsets.append(end)
        hits = [self.m.longest_cached_prefix(self.tokens[s:e], limit)
                for (s, e), limit in zip(spans, limits)]
        self.ops += [LOOKUP, len(spans)] + offsets + list(limits) + hits
        self.max_lookup = max(self.max_lookup, len(spans))
        return hits

    def add(self, span, start, points):
        seq = self.m.add_sequence(self.tokens[span[0]:span[1]], start,
                                  cache_points=points)
        self.ops += [ADD, span[0], span[1], start, len(points)] + \
            list(points) + [seq]
        return seq

    def step(self, ids, counts, appended, rows, padded):
        self.m.schedule_batch(ids, counts)
        self.buffers.build(ids, rows, padded)
        offsets = [len(self.tokens)]
        for tokens in appended:
            offsets.append(self.intern(tokens)[1])
        self.m.commit_batch(ids, counts, appended)
        n = len(ids)
        self.ops += [SCHEDULE, n] + ids + counts
        self.ops += [BUILD, n] + ids + [rows, padded]
        self.ops += [COMMIT, n] + ids + counts + offsets

    def finish(self, seq):
        self.m.finish(seq)
        self.ops += [FINISH, seq]


def record(args, manager, buffers):
    """Runs the simulated engine; returns the Recorder and trace facts."""
    rng = random.Random(args.seed)
    vocab = 32000
    system = [[rng.randrange(vocab) for _ in range(n)] for n in (501, 350, 620)]
    requests, prompts = [], []
    for r in range(args.requests):
        if prompts and rng.random() < 0.05:  # an identical prompt again
            prompt, points = rng.choice(prompts)
        elif rng.random() < 0.7:
            head = rng.choice(system)
            prompt = head + [rng.randrange(vocab)
                             for _ in range(rng.randint(20, 900))]
            points = [len(head)]
        else:
            prompt = [rng.randrange(vocab)
                      for _ in range(rng.randint(50, 1500))]
            points = []
        prompts.append((prompt, points))
        requests.append({"prompt": prompt, "points": points,
                         "out": rng.randint(8, 256), "arrive": r // 2})
    rec = Recorder(manager, buffers)
    waiting, running, step, done = [], [], 0, 0
    next_request = 0
    hit_tokens = prompt_tokens = seq_steps = 0
    while done < len(requests):
        while next_request < len(requests) and \
                requests[next_request]["arrive"] <= step:
            waiting.append(requests[next_request])
            next_request += 1
        # Admit: one lookup batch for the step's admissions.
        admit = waiting[:max(0, args.max_running - len(running))]
        waiting = waiting[len(admit):]
        if admit:
            spans = [rec.intern(r["prompt"]) for r in admit]
            hits = rec.lookup(spans, [len(r["prompt"]) - 1 for r in admit])
            for r, span, hit in zip(admit, spans, hits):
                r["seq"] = rec.add(span, hit, r["points"])
                r["computed"], r["generated"] = hit, 0
                hit_tokens += hit
                prompt_tokens += len(r["prompt"])
                running.append(r)
        budget, ids, counts, appended = args.budget, [], [], []
        for r in running:  # decode first, then prefill chunks
            if r["computed"] >= len(r["prompt"]) and budget > 0:
                ids.append(r["seq"]), counts.append(1)
                appended.append([rng.randrange(vocab)])
                budget -= 1
        for r in running:
            left = len(r["prompt"]) - r["computed"]
            if left > 0 and budget > 0:
                n = min(left, budget)
                ids.append(r["seq"]), counts.append(n)
                appended.append([rng.randrange(vocab)] if n == left else [])
                budget -= n
        if ids:
            tokens = sum(counts)
            rec.step(ids, counts, appended, len(ids),
                     (tokens + 63) // 64 * 64)
            seq_steps += len(ids)
            by_seq = dict(zip(ids, counts))
            still = []
            for r in running:
                n = by_seq.get(r["seq"], 0)
                if r["computed"] >= len(r["prompt"]):
                    r["generated"] += n
                r["computed"] += n
                if r["computed"] >= len(r["prompt"]) and \
                        r["generated"] >= r["out"]:
                    rec.finish(r["seq"])
                    done += 1
                else:
                    still.append(r)
            running = still
        step += 1
    return rec, {"steps": step, "seq_steps": seq_steps,
                 "hit_tokens": hit_tokens, "prompt_tokens": prompt_tokens}


def write_trace(path, args, rec):
    header = np.zeros(16, np.int64)
    header[:14] = [MAGIC, len(rec.tokens), len(rec.ops), args.kernel,
                   args.block_size, args.blocks, 0, args.max_running,
                   args.cols, args.budget + 64, 16,
                   POLICIES.index(args.policy), 8, rec.max_lookup]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(rec.tokens, np.int32).tobytes())
        f.write(np.asarray(rec.ops, np.int64).tobytes())


def make_manager(args):
    manager = rt.Manager(rt.LayoutConfig(8, 128, 4096, kernel=args.kernel,
                                         block_size=args.block_size),
                         num_blocks=args.blocks)
    manager.set_prefix_policy(args.policy, 8)
    buffers = manager.step_buffers(max_rows=args.max_running,
                                   num_cols=args.cols,
                                   max_tokens=args.budget + 64,
                                   max_copies=16)
    return manager, buffers


def replay_python(args, tokens, ops, as_lists):
    """Replays the trace through the package; returns (ns, calls)."""
    manager, buffers = make_manager(args)
    m = manager
    clock = time.perf_counter_ns
    total = calls = w = 0
    hits_out = np.zeros(max(1, len(ops)), np.int64)

    def arg(values):
        return values.tolist() if as_lists else values

    while w < len(ops):
        op = int(ops[w])
        if op == LOOKUP:
            n = int(ops[w + 1])
            offsets = ops[w + 2:w + 3 + n]
            limits = ops[w + 3 + n:w + 3 + 2 * n]
            expected = ops[w + 3 + 2 * n:w + 3 + 3 * n]
            if as_lists:  # the per-prompt calls an engine makes with lists
                prompts = [tokens[offsets[i]:offsets[i + 1]].tolist()
                           for i in range(n)]
                limit_list = limits.tolist()
                start = clock()
                hits = [m.longest_cached_prefix(p, limit)
                        for p, limit in zip(prompts, limit_list)]
                total += clock() - start
            else:
                start = clock()
                hits = m.longest_cached_prefix_batch(tokens, offsets, limits,
                                                     hits_out)[:n]
                total += clock() - start
            assert list(hits) == expected.tolist(), "lookup differs"
            w += 3 + 3 * n
        elif op == ADD:
            frm, to, begin, p = (int(x) for x in ops[w + 1:w + 5])
            prompt, points = arg(tokens[frm:to]), arg(ops[w + 5:w + 5 + p])
            start = clock()
            seq = m.add_sequence(prompt, begin, cache_points=points)
            total += clock() - start
            assert seq == ops[w + 5 + p], "add gave another id"
            w += 6 + p
        elif op == SCHEDULE:
            n = int(ops[w + 1])
            ids, counts = arg(ops[w + 2:w + 2 + n]), \
                arg(ops[w + 2 + n:w + 2 + 2 * n])
            start = clock()
            m.schedule_batch(ids, counts)
            total += clock() - start
            w += 2 + 2 * n
        elif op == BUILD:
            n = int(ops[w + 1])
            ids = arg(ops[w + 2:w + 2 + n])
            rows, padded = int(ops[w + 2 + n]), int(ops[w + 3 + n])
            start = clock()
            buffers.build(ids, rows, padded)
            total += clock() - start
            w += 4 + n
        elif op == COMMIT:
            n = int(ops[w + 1])
            ids = ops[w + 2:w + 2 + n]
            accepted = ops[w + 2 + n:w + 2 + 2 * n]
            offsets = ops[w + 2 + 2 * n:w + 3 + 3 * n]
            if as_lists:
                ids_l, acc_l = ids.tolist(), accepted.tolist()
                lists = [tokens[offsets[i]:offsets[i + 1]].tolist()
                         for i in range(n)]
                start = clock()
                m.commit_batch(ids_l, acc_l, lists)
                total += clock() - start
            else:
                start = clock()
                m.commit_batch(ids, accepted, tokens, token_offsets=offsets)
                total += clock() - start
            w += 3 + 3 * n
        elif op == FINISH:
            seq = int(ops[w + 1])
            start = clock()
            m.finish(seq)
            total += clock() - start
            w += 2
        else:
            raise ValueError("bad op %d at %d" % (op, w))
        calls += 1
    manager.close()
    return total, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=667)
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--max-running", type=int, default=128)
    parser.add_argument("--kernel", type=int, default=4)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--policy", default="snapshots", choices=POLICIES)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--replayer", required=True,
                        help="the InklingRuntimeReplay executable")
    parser.add_argument("--trace", help="where to write the trace")
    parser.add_argument("--rounds", type=int, default=3,
                        help="replays of each side; the best is reported")
    args = parser.parse_args()

    manager, buffers = make_manager(args)
    rec, facts = record(args, manager, buffers)
    manager.close()
    path = args.trace or os.path.join(tempfile.mkdtemp(), "trace.bin")
    write_trace(path, args, rec)
    tokens = np.asarray(rec.tokens, np.int32)
    ops = np.asarray(rec.ops, np.int64)

    results = {"python, batch (numpy)": [], "python, lists": [], "C": []}
    for _ in range(args.rounds):
        results["python, batch (numpy)"].append(
            replay_python(args, tokens, ops, False)[0])
        results["python, lists"].append(
            replay_python(args, tokens, ops, True)[0])
        out = subprocess.run([args.replayer, path], check=True,
                             capture_output=True, text=True).stdout.split()
        results["C"].append(int(out[out.index("ns") + 1]))
        assert int(out[out.index("seq_steps") + 1]) == facts["seq_steps"]
    steps = facts["seq_steps"]
    print("trace: %d requests, %d steps, %d sequence-steps, N = %d, %s; "
          "prefix hits %d of %d prompt tokens"
          % (args.requests, facts["steps"], steps, args.block_size,
             args.policy, facts["hit_tokens"], facts["prompt_tokens"]))
    c = min(results["C"])
    for name, times in results.items():
        best = min(times)
        print("  %-22s %8.3f us per sequence-step (best of %d; all: %s)  "
              "%.2fx C" % (name, best / steps / 1e3, len(times),
                           " ".join("%.3f" % (t / steps / 1e3)
                                    for t in times), best / c))
    ratio = min(results["python, batch (numpy)"]) / c
    print("python batch / C = %.2f (target <= 2)" % ratio)
    return 0 if ratio <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
