"""ctest inkling-python-installed: the package as a user gets it.

    check_installed.py PREFIX PYTHONDIR README EXAMPLES

PREFIX is a fresh `cmake --install` prefix (the inkling-consumer test's).
With PYTHONPATH=PREFIX/PYTHONDIR as the only setting (no
INKLING_RUNTIME_LIB, no LD_LIBRARY_PATH): `import inkling` comes from the
prefix, both shared libraries are loaded from the prefix, and README's
Python snippet runs as written (from the source root, for its example
file path).
"""

import os
import re
import subprocess
import sys


def main():
    prefix, pydir, readme, examples = sys.argv[1:5]
    prefix = os.path.realpath(prefix)
    site = os.path.join(prefix, pydir)
    env = {k: v for k, v in os.environ.items()
           if k not in ("INKLING_RUNTIME_LIB", "LD_LIBRARY_PATH",
                        "PYTHONPATH")}
    env["PYTHONPATH"] = site

    probe = """
import os, sys, inkling
layer = inkling.Layer.from_file(sys.argv[1])
manager = inkling.Manager(inkling.LayoutConfig(2, 8, 16, kernel=4), 8)
print("package", os.path.realpath(inkling.__file__))
with open("/proc/self/maps") as maps:
    for line in maps:
        if "libinkling_" in line:
            print("mapped", os.path.realpath(line.split()[-1]))
"""
    out = subprocess.run(
        [sys.executable, "-c", probe,
         os.path.join(examples, "small_layer.mlir")],
        env=env, cwd="/", capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("import from %s failed:\n%s" % (site, out.stderr))
    lines = out.stdout.splitlines()
    package = [line.split(" ", 1)[1] for line in lines
               if line.startswith("package ")]
    mapped = {line.split(" ", 1)[1] for line in lines
              if line.startswith("mapped ")}
    if not package or not package[0].startswith(site + os.sep):
        sys.exit("inkling was imported from %s, not %s" % (package, site))
    for name in ("libinkling_runtime.so", "libinkling_layer.so"):
        paths = {path for path in mapped if os.path.basename(path) == name}
        if not paths or any(not p.startswith(prefix + os.sep)
                            for p in paths):
            sys.exit("%s loaded from %s, not from %s" % (name, paths or
                                                           "nowhere", prefix))
    print("installed package %s loads %s" % (package[0], sorted(mapped)))

    with open(readme) as f:
        match = re.search(r"<!-- python-snippet -->\n```python\n(.*?)```",
                          f.read(), re.S)
    if not match:
        sys.exit(readme + ": no <!-- python-snippet --> block")
    out = subprocess.run([sys.executable, "-c", match.group(1)], env=env,
                         cwd=os.path.dirname(os.path.abspath(readme)),
                         capture_output=True, text=True)
    sys.stdout.write(out.stdout)
    if out.returncode != 0:
        sys.exit("README's Python snippet failed:\n" + out.stderr)
    print("README's Python snippet ran from the installed package")


if __name__ == "__main__":
    main()
