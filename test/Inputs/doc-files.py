#!/usr/bin/env python3
"""doc-files.py DOC OUTDIR [FROM=TO ...]: writes the files a document shows.

A fenced code block whose info string names a file, as in

    ```toml file=hello/app/Cargo.toml

is written to OUTDIR/hello/app/Cargo.toml, byte for byte, after replacing
each FROM with TO (e.g. the document's /src/fatlink with the checkout the
test uses). So a test builds exactly what the reader copies
(docs/cargo.md's minimal project, docs/bazel.md's outside workspace).
Fails when the document names no file, names one twice, or a path leaves
OUTDIR; prints the files written.
"""
import os
import re
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: doc-files.py DOC OUTDIR [FROM=TO ...]")
    doc, outdir = sys.argv[1], sys.argv[2]
    subst = [a.split("=", 1) for a in sys.argv[3:]]
    files, current, fence = {}, None, None
    for n, line in enumerate(open(doc, encoding="utf-8"), 1):
        if current is None:
            m = re.match(r"^(```+)\S*\s+file=(\S+)\s*$", line)
            if m:
                fence, name = m.group(1), m.group(2)
                path = os.path.normpath(name)
                if path.startswith("..") or os.path.isabs(path):
                    sys.exit("%s:%d: file=%s leaves the output directory" % (doc, n, name))
                if path in files:
                    sys.exit("%s:%d: file=%s is shown twice" % (doc, n, name))
                current, files[path] = path, []
        elif line.rstrip("\n") == fence:
            current = None
        else:
            files[current].append(line)
    if current is not None:
        sys.exit("%s: the block of file=%s is not closed" % (doc, current))
    if not files:
        sys.exit("%s: no code block names a file (```lang file=PATH)" % doc)
    for path, lines in sorted(files.items()):
        text = "".join(lines)
        for old, new in subst:
            text = text.replace(old, new)
        out = os.path.join(outdir, path)
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        print(path)


main()
