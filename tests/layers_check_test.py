#!/usr/bin/env python3
"""The include check (layers_check.py) refuses what it must: trees of a few files with a table of
their own, and a copy of the project's sources with one back-edge written in (and its docs with a
dependency the table lacks). Each tree is made in a temporary directory (under TMPDIR) and
removed.

    layers_check_test.py CHECKER PROJECT_ROOT
"""

import os
import shutil
import subprocess
import sys
import tempfile

TABLE = """\
# layer  target   files                       may include
api      pp_api   include/api/                -
low      pp_low   src/low/,src/base/only.     api
high     pp_high  src/high/                   low api
"""

CLEAN = {
    "include/api/types.hpp": "#pragma once\n",
    "src/base/only.hpp": '#include "api/types.hpp"\n',
    "src/low/low.hpp": '#pragma once\n#include "api/types.hpp"\n#include "base/only.hpp"\n',
    "src/low/low.cpp": '#include "low/low.hpp"\n#include <vector>\n#include "simdjson.h"\n',
    "src/high/high.hpp": '#pragma once\n#include "low/low.hpp"\n',
    "src/high/high.cpp": '#include "high/high.hpp"\n#include <api/types.hpp>\n',
}

FAILURES = 0


def run(checker, root, table=None):
    argv = [sys.executable, checker, root] + ([table] if table else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def tree(base, files, table=TABLE):
    root = tempfile.mkdtemp(dir=base)
    for path, text in dict(files, **{"src/layers.txt": table}).items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def expect(name, code, output, want_code, *wanted):
    global FAILURES
    missing = [w for w in wanted if w not in output]
    if code != want_code or missing:
        FAILURES += 1
        print(f"FAIL {name}: exit {code} (wanted {want_code}); missing {missing}\n{output}")
    else:
        print(f"ok   {name}")


def fixtures(checker, base):
    expect("a tree that keeps to its table passes", *run(checker, tree(base, CLEAN)), 0,
           "every include allowed")
    cases = [
        ("a header-only back-edge is refused",
         {"src/low/low.hpp": '#pragma once\n#include "high/high.hpp"\n'},
         "src/low/low.hpp:2: includes high/high.hpp (layer high), which layer low may not include"),
        ("a back-edge from a file of a prefix is refused",
         {"src/base/only.hpp": '#include "high/high.hpp"\n'},
         "src/base/only.hpp:1: includes high/high.hpp (layer high), which layer low"),
        ("a back-edge written relative to the file is refused",
         {"src/low/low.cpp": '#include "../high/high.hpp"\n'},
         "src/low/low.cpp:1: includes ../high/high.hpp (layer high)"),
        ("a back-edge in angle brackets is refused",
         {"src/low/low.cpp": '#  include <high/high.hpp>\n'},
         "src/low/low.cpp:1: includes high/high.hpp (layer high)"),
        ("an include of a layer's own file beside it counts as its layer",
         {"src/low/low.cpp": '#include "low.hpp"\n#include "../high/high.hpp"\n'},
         "src/low/low.cpp:2:"),
        ("a file in no layer is refused",
         {"src/other/x.cpp": "\n"}, "src/other/x.cpp: in no layer of src/layers.txt"),
    ]
    for name, change, wanted in cases:
        code, output = run(checker, tree(base, dict(CLEAN, **change)))
        expect(name, code, output, 1, wanted)
    bad_tables = [
        ("a cycle in the table is refused", TABLE.replace("api      pp_api   include/api/                -",
                                                          "api      pp_api   include/api/                high"),
         "the layers include each other: api -> high -> api"),
        ("a layer the table does not have is refused", TABLE + "extra pp_x src/extra/ nowhere\n",
         "may include 'nowhere', which is no layer of the table"),
        ("a row without what it may include is refused", TABLE + "extra pp_x src/extra/\n",
         "a layer needs a name, a target, its files and what it may include"),
    ]
    for name, table, wanted in bad_tables:
        code, output = run(checker, tree(base, CLEAN, table))
        expect(name, code, output, 1, wanted)


def project_copy(checker, project, base):
    """The issue's back-edge written into a copy of the project's own sources; then, with the
    sources as they are, the copy's docs/architecture.md showing a dependency the table lacks."""
    root = tempfile.mkdtemp(dir=base)
    for top in ("src", "include"):  # the docs come later: first the sources alone
        shutil.copytree(os.path.join(project, top), os.path.join(root, top))
    expect("the project's sources keep to src/layers.txt", *run(checker, root), 0,
           "every include allowed")
    header = os.path.join(root, "src/probe/platform/system.hpp")
    with open(header, encoding="utf-8") as f:
        original = f.read()
    with open(header, "a", encoding="utf-8") as f:
        f.write('#include "probe/outputs/output.hpp"\n')
    code, output = run(checker, root)
    expect("platform including outputs, in the project's copy, is refused", code, output, 1,
           "src/probe/platform/system.hpp:", "(layer outputs), which layer platform may not include")
    with open(header, "w", encoding="utf-8") as f:
        f.write(original)
    with open(os.path.join(project, "docs/architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs/architecture.md"), "w", encoding="utf-8") as f:
        # The platform row with one dependency more than the table gives it (fleet: never allowed).
        row = next(line for line in doc.splitlines() if line.startswith("| platform: "))
        f.write(doc.replace(row, row[:-2] + ", fleet |", 1))
    shown = row[:-2].rsplit("| ", 1)[1]
    code, output = run(checker, root)
    expect("docs/architecture.md showing another dependency than the table is refused", code,
           output, 1, "the row of layer platform shows target `pp_platform` and may include "
           f"'{shown}, fleet'")


def main(argv):
    if len(argv) != 3:
        print("usage: layers_check_test.py CHECKER PROJECT_ROOT", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="layers-check-") as base:
        fixtures(argv[1], base)
        project_copy(argv[1], argv[2], base)
    print(f"{FAILURES} failed" if FAILURES else "every case as expected")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
