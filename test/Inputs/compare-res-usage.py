"""compare-res-usage.py CUOBJDUMP_OUTPUT FATLINK_JSON: checks that every
kernel of every cubin in `fatlink inspect --json` has the resources that
`cuobjdump -res-usage` prints for it (registers, stack, shared, local,
constant bank 0), in the same order of cubins; prints one line per kernel
checked and exits 1 on the first difference."""
import json
import re
import sys

# cuobjdump: "Fatbin elf code:" per cubin, then " Function NAME:" and
# "  REG:8 STACK:0 SHARED:0 LOCAL:0 [CONSTANT[2]:32] CONSTANT[0]:364 ...".
cubins = []
name = None
for line in open(sys.argv[1]):
    if line.startswith("Fatbin elf code:"):
        cubins.append({})
    m = re.match(r"\s*Function (\S+):$", line)
    if m:
        name = m.group(1)
        continue
    fields = dict(re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line))
    if name and "REG" in fields:
        cubins[-1][name] = tuple(int(fields.get(k, 0)) for k in
                                 ("REG", "STACK", "SHARED", "LOCAL", "CONSTANT[0]"))
        name = None

ours = [e for e in json.load(open(sys.argv[2])) if e["kind"] == "cubin"]
if len(ours) != len(cubins):
    sys.exit("cubins: fatlink %d, cuobjdump %d" % (len(ours), len(cubins)))
for entry, theirs in zip(ours, cubins):
    kernels = {k["name"]: k["resources"] for k in entry["kernels"]}
    if sorted(kernels) != sorted(theirs):
        sys.exit("%s: kernels %s, cuobjdump %s" % (entry["name"], sorted(kernels), sorted(theirs)))
    for k, r in sorted(kernels.items()):
        mine = (r["registers"], r["stack"], r["shared"], r["local"], r["constant0"])
        if mine != theirs[k]:
            sys.exit("%s %s: fatlink %s, cuobjdump %s" % (entry["name"], k, mine, theirs[k]))
        print("same %s %s %s" % (entry["arch"], k, " ".join(map(str, mine))))
