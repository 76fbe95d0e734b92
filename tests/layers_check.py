#!/usr/bin/env python3
"""Every #include of the sources against the table of layers (src/layers.txt).

    layers_check.py ROOT [TABLE]

ROOT is a tree with src/ and include/; TABLE defaults to ROOT/src/layers.txt, the table the build
reads too (src/CMakeLists.txt: a target per layer, linked to the layers it may include). Links
alone do not stop an include of a header whose code is never called, so this reads every source
and header under src/ and include/: each file is in the layer whose files' prefix is the longest
one naming it, and each project header it includes ("..." or <...>, found as the compiler finds
it: beside the file, then under src/ and include/) must be in the same layer or in one the table
lets it include. The table itself is checked too: every file in a layer, every name known, no
cycle; and docs/architecture.md's table of layers, where ROOT has one, shows each layer's target
and what it may include as the table does. Prints each refusal, one line with its file and line; exit 1 when there is one, 0 when
there is none, 2 on bad arguments.
"""

import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".hpp.in")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
ROOTS = ("src", "include")


class Layer:
    def __init__(self, name, target, prefixes, may_include, line):
        self.name, self.target, self.prefixes = name, target, prefixes
        self.may_include, self.line = may_include, line


def read_table(path):
    """The table's layers by name, and the problems of the table itself."""
    layers, problems = {}, []
    with open(path, encoding="utf-8") as table:
        for number, text in enumerate(table, 1):
            fields = text.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) < 4:
                problems.append(f"{path}:{number}: a layer needs a name, a target, its files and "
                                "what it may include ('-' for nothing)")
                continue
            name, target, prefixes, deps = fields[0], fields[1], fields[2].split(","), fields[3:]
            if name in layers:
                problems.append(f"{path}:{number}: layer {name} is named twice")
            layers[name] = Layer(name, target, prefixes, [] if deps == ["-"] else deps, number)
    for layer in layers.values():
        for dep in layer.may_include:
            if dep not in layers:
                problems.append(f"{path}:{layer.line}: layer {layer.name} may include '{dep}', "
                                "which is no layer of the table")
    problems += cycles(layers, path)
    return layers, problems


def cycles(layers, path):
    """A layer reached again from itself through what it may include."""
    problems, done = [], set()

    def visit(name, trail):
        if name in trail:
            loop = trail[trail.index(name):] + [name]
            problems.append(f"{path}: the layers include each other: {' -> '.join(loop)}")
            return
        if name in done or name not in layers:
            return
        for dep in layers[name].may_include:
            visit(dep, trail + [name])
        done.add(name)

    for name in layers:
        visit(name, [])
    return problems


def layer_of(relative, layers):
    """The layer whose prefix is the longest one of `relative` (a path under ROOT), or None."""
    best, best_length = None, -1
    for layer in layers.values():
        for prefix in layer.prefixes:
            if relative.startswith(prefix) and len(prefix) > best_length:
                best, best_length = layer, len(prefix)
    return best


def resolve(root, including, kind, text):
    """The path under ROOT of the project file an include names, or None for another's header.
    As the compiler looks: "..." beside the including file first, then src/ and include/ (where
    the build's layer roots point); a header made from a .in template counts as its template."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.join(os.path.dirname(including), text))
    candidates += [os.path.join(top, text) for top in ROOTS]
    for candidate in candidates:
        candidate = os.path.normpath(candidate)
        if candidate.startswith(".."):
            continue
        for name in (candidate, candidate + ".in"):
            if os.path.isfile(os.path.join(root, name)):
                return name
    return None


def sources(root):
    for top in ROOTS:
        for directory, subdirectories, files in os.walk(os.path.join(root, top)):
            subdirectories.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(directory, name), root)


def check(root, layers, table_name):
    problems = []
    for relative in sources(root):
        layer = layer_of(relative, layers)
        if layer is None:
            problems.append(f"{relative}: in no layer of {table_name}")
            continue
        with open(os.path.join(root, relative), encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                included = resolve(root, relative, match.group(1), match.group(2))
                if included is None:
                    continue  # the standard library's, or another project's
                other = layer_of(included, layers)
                if other is None or other is layer or other.name in layer.may_include:
                    continue
                problems.append(
                    f"{relative}:{number}: includes {match.group(2)} (layer {other.name}), which "
                    f"layer {layer.name} may not include (it may include: "
                    f"{', '.join(layer.may_include) or 'nothing'}; {table_name})")
    return problems


def check_doc(root, layers, table_name):
    """docs/architecture.md's rows "| NAME: `files` | `target`... | what | may include |" against
    the table: every layer a row, its target named first, its "may include" the same list."""
    doc = os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(doc):
        return []
    rows = {}
    with open(doc, encoding="utf-8") as text:
        for line in text:
            match = re.match(r"\| ([a-z_]+): `", line)
            if match:
                cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
                rows[match.group(1)] = cells
    problems = []
    for layer in layers.values():
        cells = rows.get(layer.name)
        if cells is None:
            problems.append(f"docs/architecture.md: no row for layer {layer.name} of {table_name}")
            continue
        shown = [] if cells[-1] == "the standard library" else cells[-1].split(", ")
        if not cells[1].startswith(f"`{layer.target}`") or shown != layer.may_include:
            problems.append(
                f"docs/architecture.md: the row of layer {layer.name} shows target {cells[1]} and "
                f"may include '{cells[-1]}'; {table_name} says {layer.target} and "
                f"'{', '.join(layer.may_include) or 'the standard library'}'")
    problems += [f"docs/architecture.md: a row for {name}, no layer of {table_name}"
                 for name in rows if name not in layers]
    return problems


def main(argv):
    if len(argv) not in (2, 3) or not os.path.isdir(argv[1]):
        print("usage: layers_check.py ROOT [TABLE]", file=sys.stderr)
        return 2
    root = argv[1]
    table = argv[2] if len(argv) == 3 else os.path.join(root, "src", "layers.txt")
    if not os.path.isfile(table):
        print(f"layers_check: no table at {table}", file=sys.stderr)
        return 2
    layers, problems = read_table(table)
    if not problems:
        problems = check(root, layers, os.path.relpath(table, root))
        problems += check_doc(root, layers, os.path.relpath(table, root))
    for problem in problems:
        print(problem)
    if problems:
        print(f"layers_check: {len(problems)} include(s) or entries against the table of layers")
        return 1
    print(f"layers_check: {len(layers)} layers, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
