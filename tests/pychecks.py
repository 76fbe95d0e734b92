"""The checks of the Python test scripts: each prints `ok` or `FAIL` with its detail, and the script
exits 1 where one failed (finish())."""

import importlib.util
import os
import sys

# A script of bench/ imported by a test leaves no __pycache__ in the source tree.
sys.dont_write_bytecode = True

FAILURES = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"))
    if not ok:
        FAILURES.append(name)


def load(path, name):
    """The module in the file `path` (a script of bench/: its folder importable too)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def finish():
    print(f"{len(FAILURES)} failed" if FAILURES else "all passed")
    return 1 if FAILURES else 0
