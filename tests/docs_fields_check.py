#!/usr/bin/env python3
"""Docs.ReportMdNamesEveryFieldOfTheSchema: every field of docs/report.schema.json is named in
docs/report.md (in `code`), and every field path the page writes as a dotted path (`run.devices`)
is one the schema has. Prints what is missing; exit 1 if anything is.

    docs_fields_check.py SCHEMA REPORT_MD
"""
import json
import re
import sys


def fields(node, path, out):
    """Every property of the schema, as a dotted path (array items and definitions included)."""
    if not isinstance(node, dict):
        return
    for name, sub in node.get("properties", {}).items():
        out.add(f"{path}.{name}".lstrip("."))
        fields(sub, f"{path}.{name}", out)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            fields(node[key], path, out)
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(key, []):
            fields(sub, path, out)
    for key in ("definitions", "$defs"):
        for name, sub in node.get(key, {}).items():
            fields(sub, "#" + name, out)


# Where the page describes an object: its fields must be named there, not only somewhere on the
# page. Schema path prefix -> the start of that part of the page (to its next row or heading).
PARTS = {
    "run": "| `run` |",
    "stack": "| `stack` |",
    "driver": "| `driver` |",
    "tool": "| `tool` |",
    "#amp": "## Mixed-precision training",
    "#precision": "| `precisions` |",
}


def names_in(text):
    """The identifiers inside `code` spans (a span may wrap onto the next line)."""
    named = set()
    for span in re.findall(r"`([^`]+)`", text):
        named.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))
    return named


def part_of(page, start):
    at = page.find(start)
    if at < 0:
        return ""
    heading = start.startswith("#")
    end = page.find("\n#", at + 1) if heading else page.find("\n|", at + 1)
    return page[at:] if end < 0 else page[at:end]


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    page = open(sys.argv[2], encoding="utf-8").read()
    named = names_in(page)
    every = set()
    fields(schema, "", every)
    missing = []
    for path in sorted(every):
        name = path.rsplit(".", 1)[-1]
        prefix = path.split(".", 1)[0]
        where = PARTS.get(prefix)
        # The top-level fields of a described object must be named in its part of the page.
        if where and path.count(".") == 1 and name not in names_in(part_of(page, where)):
            missing.append(f"{path} (in its part: {where})")
        elif name not in named:
            missing.append(path)
    for p in missing:
        print(f"docs/report.md does not name the field {p}")
    print(f"{len(every)} fields in the schema, {len(missing)} not named in docs/report.md")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
