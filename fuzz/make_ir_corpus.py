#!/usr/bin/env python3
"""Writes the IR fuzzer's seed corpus: every lit test input under the given
folder, split at `// -----` like `-split-input-file`, one file per piece."""
import hashlib
import pathlib
import sys


def main() -> int:
    tests, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    corpus.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(tests.rglob("*.mlir")):
        for piece in path.read_text().split("// -----"):
            data = piece.encode()
            if not data.strip() or len(data) > 16384:
                continue
            name = hashlib.sha1(data).hexdigest()
            (corpus / name).write_bytes(data)
            count += 1
    print(f"make_ir_corpus: {count} seeds in {corpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
