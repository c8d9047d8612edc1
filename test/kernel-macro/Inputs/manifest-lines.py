# manifest-lines.py JSON: device-link --json's kernel_manifest, one line
# per kernel and per parameter, for FileCheck.
import json
import sys

for k in json.load(open(sys.argv[1]))["kernel_manifest"]:
    print("%s (%s) from %s" % (k["kernel"], k["language"], k["origin"]))
    for p in k["params"]:
        line = "  %s: %s %s %d" % (p["name"], p["type"], p["kind"], p["size"])
        if p["kind"] == "pointer":
            line += " %s %s %d" % ("const" if p["const"] else "mut", p["elem_kind"], p["elem_size"])
        print(line)
