#!/usr/bin/env python3
"""relist.py LABEL : for each kube-apiserver restart of the run, how long after the restart's first
answer did each informer (audit userAgent contains 'kube-gc', or kube-controller-manager for kcm
runs; verbs list/watch; an informer =
userAgent suffix + resource path without query) get its first successful LIST (code 200) or a watch
that did not end at once (ResponseStarted 200 and its ResponseComplete >= MIN_WATCH s later, or never
completed in the window).  A watch that ends within MIN_WATCH s of starting is counted as the 410
('too old resource version') case: the audit log records only code 200 for watches, the error is an
event in the stream.  first answer = the run's outage end from analyze_outages.py (first 200 to the bench's LIST
or /readyz received after the restart)."""
import json, sys, math
from analyze_outages import parse_ts, pct
import os
KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))

MIN_WATCH = 1.0
label = sys.argv[1]
R = json.load(open(f"{RES}/{label}.json"))
A = json.load(open(f"{RES}/{label}-analysis.json"))["summary"]
T0, stop = R["T0"], R["controller_stop"]["stopped_at"]
UA_PAT = "kube-gc" if R["controller"] == "kube-gc" else "kube-controller-manager"
ev = {}
with open(f"{KIT}/logs/audit.log", "rb") as f:
    f.seek(R["audit_offset"])
    for l in f:
        e = json.loads(l)
        t = parse_ts(e["requestReceivedTimestamp"])
        if t < T0 - 1 or t > stop + 1:
            continue
        ua = e.get("userAgent", "")
        if UA_PAT not in ua or e["verb"] not in ("list", "watch"):
            continue
        a = ev.setdefault(e["auditID"], {"ua": ua.split(")")[-1].split("/")[-1] or "/", "verb": e["verb"],
                                           "path": e["requestURI"].split("?")[0], "recv": t})
        a[e["stage"]] = (parse_ts(e["stageTimestamp"]), (e.get("responseStatus") or {}).get("code"))
informers = sorted({(a["ua"], a["path"]) for a in ev.values()})
print(f"{label}: {len(informers)} informers ({sum(1 for u,_ in informers if 'metadata' in u)} metadata, "
      f"{sum(1 for u,_ in informers if 'shared' in u)} shared); {len(ev)} list/watch requests")
outs = [o for o in A["outages"]]
res = {}
for i, o in enumerate(R["outages"]):
    if o["kind"] != "kube-apiserver":
        continue
    so = outs[i]
    start = o["start_at"]
    answer = T0 + min(x for x in (so["first_list_200_rel_T0"], so["first_readyz_200_rel_T0"]) if x)
    nxt = R["outages"][i + 1]["stop_at"] if i + 1 < len(R["outages"]) else stop
    delays, never, detail, short_watches = {}, [], {}, {}
    for inf in informers:
        reqs = sorted((a for a in ev.values() if (a["ua"], a["path"]) == inf and a["recv"] >= start),
                      key=lambda a: a["recv"])
        ok_t = None
        nshort = 0
        for a in reqs:
            if a["verb"] == "list":
                rc = a.get("ResponseComplete")
                if rc and rc[1] == 200:
                    ok_t = rc[0]; break
            else:
                rs = a.get("ResponseStarted")
                rc = a.get("ResponseComplete")
                if rs and rs[1] == 200 and (rc is None or rc[0] - rs[0] >= MIN_WATCH):
                    ok_t = rs[0]; break
                if rs:
                    nshort += 1
        short_watches[inf] = nshort
        if ok_t is None:
            never.append(inf)
        else:
            delays[inf] = ok_t - answer
            detail[inf] = (round(ok_t - answer, 3), round(ok_t - nxt, 3) if ok_t > nxt else None)
    d = list(delays.values())
    late = sorted(((v, k) for k, v in delays.items() if v > 2), reverse=True)
    res[o["n"]] = {"restart_rel_T0": round(start - T0, 3), "first_answer_rel_T0": round(answer - T0, 3),
                   "next_sigterm_rel_T0": round(nxt - T0, 3),
                   "informers": len(informers), "recovered": len(d), "never": [" ".join(x) for x in never],
                   "max": round(max(d), 3) if d else None, "p50": round(pct(d, 50), 3) if d else None,
                   "p90": round(pct(d, 90), 3) if d else None,
                   "metadata_max": (lambda m: round(max(m), 3) if m else None)([v for k, v in delays.items() if "metadata" in k[0]]),
                   "metadata_p50": (lambda m: round(pct(m, 50), 3) if m else None)([v for k, v in delays.items() if "metadata" in k[0]]),
                   "after_next_sigterm": [[round(v, 3), " ".join(k)] for v, k in late if T0 + 0 <= answer + v and answer + v > nxt],
                   "over_2s": [[round(v, 3), " ".join(k), short_watches[k]] for v, k in late],
                   "over_5s": [[round(v, 3), " ".join(k), short_watches[k]] for v, k in late if v > 5],
                   "informers_with_short_watch_first": sum(1 for k, n in short_watches.items() if n)}
print(json.dumps(res, indent=1))
json.dump(res, open(f"{RES}/{label}-relist.json", "w"), indent=1)
for n, x in res.items():
    print(f"restart {n}: {x['recovered']}/{x['informers']} recovered, max {x['max']} s, p50 {x['p50']} s, p90 {x['p90']} s; "
          f"never: {x['never']}; over 5 s: {x['over_5s']}")
