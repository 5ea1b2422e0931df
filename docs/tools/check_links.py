#!/usr/bin/env python3
"""Checks the links of README.md and docs/: every relative link resolves to a
file inside the repository (and, with a #fragment into a Markdown file, to one
of its headings); no link leaves the repository.

Usage: check_links.py [--src REPO]
Exits 1 listing every broken link as FILE:LINE: TARGET (why).
The ctest DocsLinksTest.EveryLinkResolvesInsideTheRepository runs it.
"""

import argparse
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out = set()
    in_code = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line)
            if m:
                out.add(slug(m.group(1)))
    return out


def markdown_files(root):
    yield os.path.join(root, "README.md")
    for dirpath, dirnames, files in os.walk(os.path.join(root, "docs")):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(dirpath, f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(here)), help="repository root")
    root = os.path.realpath(ap.parse_args().src)
    broken = []
    checked = 0
    for path in markdown_files(root):
        rel = os.path.relpath(path, root)
        in_code = False
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target):
                    broken.append("%s:%d: %s (points outside the repository)" % (rel, n, target))
                    continue
                checked += 1
                file_part, _, fragment = target.partition("#")
                dest = path if not file_part else os.path.realpath(
                    os.path.join(os.path.dirname(path), file_part))
                if not (dest == root or dest.startswith(root + os.sep)):
                    broken.append("%s:%d: %s (points outside the repository)" % (rel, n, target))
                elif not os.path.exists(dest):
                    broken.append("%s:%d: %s (no such file)" % (rel, n, target))
                elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    broken.append("%s:%d: %s (no heading '%s' there)" % (rel, n, target, fragment))
    if broken:
        print("\n".join(broken), file=sys.stderr)
        print("\n%d broken link(s) in README.md and docs/" % len(broken), file=sys.stderr)
        return 1
    print("%d links in README.md and docs/ resolve inside the repository" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
