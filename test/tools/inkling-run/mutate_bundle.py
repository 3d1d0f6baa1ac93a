#!/usr/bin/env python3
"""Edits a kernel bundle written by `inkling-run --kernels-dir` the way a bug
in a GPU lowering stage would, for the tests that prove the executing fake
CUDA driver catches it (gpu-execute.mlir):

  grid-swap    every kernel's grid x and y exchanged (a wrong mapping);
  arg-swap     in the first launch, the host arguments of two kernel
               arguments of the same type exchanged (descriptors packed in
               the wrong order: a parameter slot shifted);
  tokens-arg   the first kernel's tokens_arg names another rank-1 argument
               (a grid rule that drops tokens);
  drop-guard   the first conditional branch of every insert kernel's host
               form made unconditional (a guard lost in the lowering).
  scratch-alias every launch's scratch buffers of one type bound to the
               first of them (a recorder that numbers one buffer for two
               allocations).

usage: mutate_bundle.py MUTATION DIR
"""
import json
import re
import sys
from pathlib import Path


def main():
    mutation, directory = sys.argv[1], Path(sys.argv[2])
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    kernels = manifest["kernels"]
    if mutation == "grid-swap":
        for kernel in kernels:
            grid = kernel["grid"]
            grid[0], grid[1] = grid[1], grid[0]
    elif mutation == "arg-swap":
        launch = manifest["hosts"][0]["launches"][0]
        kernel = next(k for k in kernels if k["name"] == launch["kernel"])
        args, host = kernel["args"], launch["host_args"]
        pair = next((i, j) for i in range(len(args))
                    for j in range(i + 1, len(args))
                    if args[i]["type"] == args[j]["type"] and host[i] != host[j])
        host[pair[0]], host[pair[1]] = host[pair[1]], host[pair[0]]
        print(f"swapped kernel arguments {pair} of {kernel['name']}")
    elif mutation == "tokens-arg":
        kernel = kernels[0]
        other = next(i for i, a in enumerate(kernel["args"])
                     if a["rank"] == 1 and a["element"] == "i32"
                     and i != kernel["tokens_arg"])
        kernel["tokens_arg"] = other
    elif mutation == "drop-guard":
        edited = 0
        for kernel in kernels:
            if "insert" not in kernel["name"]:
                continue
            form = directory / kernel["host_form"]
            text, n = re.subn(r"br i1 %\w+, label (%\w+), label %\w+",
                              r"br label \1", form.read_text(), count=1)
            edited += n
            form.write_text(text)
        if not edited:
            sys.exit("drop-guard: no insert kernel with a guard")
    elif mutation == "scratch-alias":
        host = manifest["hosts"][0]
        first = {}
        for index, buffer in enumerate(host.get("scratch", [])):
            first.setdefault(buffer["type"], index)
        aliased = 0
        for launch in host["launches"]:
            for i, bound in enumerate(launch["host_args"]):
                if bound < 0:
                    buffer = host["scratch"][-1 - bound]
                    target = -1 - first[buffer["type"]]
                    aliased += target != bound
                    launch["host_args"][i] = target
        if not aliased:
            sys.exit("scratch-alias: no two scratch buffers of one type")
    else:
        sys.exit(f"unknown mutation {mutation}")
    path.write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
