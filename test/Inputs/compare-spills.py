"""compare-spills.py PTXAS_LOG DEVICE_LINK_JSON TARGET: checks that the
spill stores and loads `fatlink device-link --json` reports in
kernel_resources for TARGET are the ones `ptxas -v` printed, run by hand on
the same PTX ("Function properties for NAME" then "N bytes stack frame, N
bytes spill stores, N bytes spill loads"); prints one line per kernel and
exits 1 on the first difference or on a kernel either side lacks."""
import json
import re
import sys

log, link, target = sys.argv[1:4]
ptxas = {}
name = None
for line in open(log):
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        name = m.group(1)
        continue
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and name:
        ptxas[name] = (int(m.group(1)), int(m.group(2)))
        name = None
rows = [r for r in json.load(open(link))["kernel_resources"] if r["target"] == target]
if not rows:
    sys.exit("no kernels for %s in %s" % (target, link))
for r in rows:
    mine = (r["spill_stores"], r["spill_loads"])
    if r["kernel"] not in ptxas:
        sys.exit("%s: not in the ptxas log" % r["kernel"])
    if mine != ptxas[r["kernel"]]:
        sys.exit("%s %s: link %s, ptxas %s" % (target, r["kernel"], mine, ptxas[r["kernel"]]))
    print("same %s %s %d %d" % (target, r["kernel"], mine[0], mine[1]))
