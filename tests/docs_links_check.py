#!/usr/bin/env python3
"""Docs.EveryLinkReachesItsFileAndHeading: every relative link of README.md and docs/*.md names a
file of the repository, and a link with an anchor (`report.md#tolerances`, `#exit-codes`) names a
heading of that Markdown file, as GitHub makes a heading's anchor. Links in code are not links.
Prints each broken one as FILE:LINE: LINK: why; exit 1 if there is one.

    docs_links_check.py REPO_ROOT
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose(lines):
    """(line number, line) of the lines outside fenced code blocks, inline code removed."""
    fenced = False
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor of a heading: its text (a link's text, a code span's content) lowercased,
    what is not a letter, digit, space, hyphen or underscore dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a Markdown file's headings (a repeated one as GitHub numbers it)."""
    seen = {}
    out = set()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    fenced = False
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(root, page):
    """What is wrong with each relative link of one page, as 'LINE: LINK: why'."""
    with open(os.path.join(root, page), encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems = []
    for number, line in prose(lines):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part \
                else page
            full = os.path.join(root, path)
            if not os.path.exists(full):
                problems.append(f"{number}: {target}: no file {path}")
            elif anchor and path.endswith(".md") and anchor not in anchors(full):
                problems.append(f"{number}: {target}: {path} has no heading #{anchor}")
    return problems


def main(root):
    pages = ["README.md"] + sorted(
        os.path.join("docs", name) for name in os.listdir(os.path.join(root, "docs"))
        if name.endswith(".md"))
    bad = 0
    links = 0
    for page in pages:
        with open(os.path.join(root, page), encoding="utf-8") as f:
            links += sum(len(LINK.findall(line)) for _, line in prose(f.read().splitlines()))
        for problem in broken_links(root, page):
            print(f"{page}:{problem}")
            bad += 1
    print(f"{links} links in {len(pages)} pages, {bad} broken")
    if links == 0:
        print("no link found: the pattern no longer reads these pages")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
