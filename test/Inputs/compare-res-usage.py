"""compare-res-usage.py CUOBJDUMP_OUTPUT FATLINK_JSON: checks that every
kernel of every cubin in `fatlink inspect --json` has the resources that
`cuobjdump -res-usage` prints for it (registers, stack, shared, local,
constant bank 0; shared with the reserved bytes fatlink reports beside it),
in the same order of cubins; prints one line per kernel
checked and exits 1 on the first difference.

compare-res-usage.py --link DEVICE_LINK_JSON FATLINK_JSON: the same between
`fatlink device-link --json`'s kernel_resources (one object per target and
kernel) and `fatlink inspect --json` of its output."""
import json
import re
import sys

KEYS = ("registers", "stack", "shared", "local", "constant0")

if sys.argv[1] == "--link":
    link = json.load(open(sys.argv[2]))
    ours = [e for e in json.load(open(sys.argv[3])) if e["kind"] == "cubin"]
    by_arch = {e["arch"]: {k["name"]: k["resources"] for k in e["kernels"]} for e in ours}
    counts = []
    reported = {}
    for r in link["kernel_resources"]:
        reported.setdefault(r["target"], {})[r["kernel"]] = r
    # The link also knows spills; inspect (the cubin alone) does not.
    keys = KEYS + ("shared_reserved", "code_size")
    for t in link["targets"]:
        if t["kind"] != "cubin":
            continue
        theirs = by_arch[t["target"]]
        mine = reported.get(t["target"], {})
        if sorted(mine) != sorted(theirs):
            sys.exit("%s: kernels %s, inspect %s" % (t["target"], sorted(mine), sorted(theirs)))
        for name, r in mine.items():
            if any(r[k] != theirs[name][k] for k in keys):
                sys.exit("%s %s: link %s, inspect %s" % (t["target"], name, r, theirs[name]))
        counts.append("%s %d kernels" % (t["target"], len(mine)))
    print("same in the link's report: " + ", ".join(counts))
    sys.exit(0)

# cuobjdump: "Fatbin elf code:" per cubin (none for a bare cubin), then " Function NAME:" and
# "  REG:8 STACK:0 SHARED:0 LOCAL:0 [CONSTANT[2]:32] CONSTANT[0]:364 ...".
# STACK:UNKNOWN (a stack ptxas cannot bound) is null in fatlink's JSON.
# Device functions (called, not launched) are listed too, without a
# CONSTANT[0] bank (a kernel's parameters and driver constants): left out.
cubins = []
name = None
for line in open(sys.argv[1]):
    if line.startswith("Fatbin elf code:"):
        cubins.append({})
    m = re.match(r"\s*Function (\S+):$", line)
    if m:
        name = m.group(1)
        if not cubins:  # a bare cubin: no "Fatbin elf code:" line
            cubins.append({})
        continue
    fields = dict(re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+|UNKNOWN)", line))
    if name and "REG" in fields and "CONSTANT[0]" in fields:
        cubins[-1][name] = tuple(None if fields.get(k) == "UNKNOWN" else int(fields.get(k, 0))
                                 for k in ("REG", "STACK", "SHARED", "LOCAL", "CONSTANT[0]"))
    if name and "REG" in fields:
        name = None

ours = [e for e in json.load(open(sys.argv[2])) if e["kind"] == "cubin"]
if len(ours) != len(cubins):
    sys.exit("cubins: fatlink %d, cuobjdump %d" % (len(ours), len(cubins)))
for entry, theirs in zip(ours, cubins):
    kernels = {k["name"]: k["resources"] for k in entry["kernels"]}
    if sorted(kernels) != sorted(theirs):
        sys.exit("%s: kernels %s, cuobjdump %s" % (entry["name"], sorted(kernels), sorted(theirs)))
    for k, r in sorted(kernels.items()):
        # cuobjdump's SHARED counts the system-reserved shared memory that
        # sm_90+ executables place in each kernel's section; fatlink's
        # "shared" is the driver's figure, without it.
        mine = (r["registers"], r["stack"], r["shared"] + r["shared_reserved"], r["local"],
                r["constant0"])
        if mine != theirs[k]:
            sys.exit("%s %s: fatlink %s, cuobjdump %s" % (entry["name"], k, mine, theirs[k]))
        print("same %s %s %s" % (entry["arch"], k, " ".join("-" if v is None else str(v) for v in mine)))
