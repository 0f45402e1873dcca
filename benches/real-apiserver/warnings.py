#!/usr/bin/env python3
"""warnings.py LABEL... : the kube-gc log's Warning lines (klog 'W'), per outage bucket as in analyze_outages.py
(a line belongs to the last outage whose SIGTERM came before it), grouped by message text (digits as N) with counts;
each group also lists the lines' resource=/controller= fields and times relative to T0."""
import json, re, sys
from collections import OrderedDict
from datetime import datetime, timezone
from analyze_outages import klog_time
import os
KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))

for label in sys.argv[1:]:
    r = json.load(open(f"{RES}/{label}.json"))
    T0 = r["T0"]; year = datetime.fromtimestamp(T0, timezone.utc).year
    bounds = [(o["n"], o["kind"], o["stop_at"]) for o in r["outages"]]
    buckets = OrderedDict((k, OrderedDict()) for k in ["before_first_outage"] + [f"outage_{n} ({kind})" for n, kind, _ in bounds])
    total = 0
    for ln in open(r["controller_log"], errors="replace"):
        lvl, t = klog_time(ln, year)
        if lvl != "W":
            continue
        total += 1
        slot = "before_first_outage"
        for n, kind, s in bounds:
            if t >= s:
                slot = f"outage_{n} ({kind})"
        m = re.match(r'^\S+ \S+\s+\d+ (\S+)\] "((?:[^"\\]|\\.)*)"(.*)$', ln.rstrip("\n"))
        src, msg, rest = (m.group(1), m.group(2), m.group(3)) if m else ("?", ln.strip(), "")
        g = buckets[slot].setdefault(re.sub(r"\d+", "N", msg), {"src": src, "n": 0, "at": []})
        g["n"] += 1
        fields = " ".join(f for f in re.findall(r'(?:resource|controller|failure|waiting)=(?:"[^"]*"|\S+)', rest))
        g["at"].append(f"T0+{t - T0:.1f}s {fields}".strip() + (f"  [{msg}]" if re.search(r"\d", msg) else ""))
    print(f"### {label}: {total} W lines")
    for slot, groups in buckets.items():
        n = sum(g["n"] for g in groups.values())
        print(f"- {slot}: {n}")
        for msg, g in groups.items():
            print(f"  - {g['n']} × [{g['src']}] \"{msg}\"")
            for a in g["at"]:
                print(f"      - {a}")
    print()
