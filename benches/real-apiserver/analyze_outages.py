#!/usr/bin/env python3
"""analyze_outages.py LABEL... : the analysis of outage_bench.py runs (Jobs created in batches before each
outage), and the parsing relist.py and warnings.py share. Per outage: latency (n due in it, deleted/total,
p50/p99/max of DELETE 2xx - outage end) in summary["per_outage"]; the batch a Job was created for; the poller's
"seen deleting/gone" counts only after the poller first saw the Job.
Reads results/LABEL.json, the audit log from the run's offset and the
controller's log; writes results/LABEL-analysis.json and prints a summary.

Deletion time of a Job = stageTimestamp of the controller's first DELETE of it (audit log,
user agent of the controller) answered 2xx. Also reported: first time the bench's own LIST
poller saw the Job with a deletionTimestamp or absent, and first time absent.
Reference time = expiry (lastTransitionTime + TTL), or, when the expiry fell inside an outage
[SIGTERM sent, end), that outage's end = the first 200 (to the bench's LIST of the namespace's Jobs
or its GET /readyz, each sent every 0.5 s on a new connection) sent after the SIGTERM and received
after the restart began.
Percentiles: nearest rank."""
import json, math, os, re, sys
from datetime import datetime, timezone
KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))

AUDIT = f"{KIT}/logs/audit.log"
NS = "outage-bench"


def parse_ts(s):
    s = s.rstrip("Z")
    if "." in s:
        base, frac = s.split(".")
        s = f"{base}.{(frac + '000000')[:6]}"
        fmt = "%Y-%m-%dT%H:%M:%S.%f"
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = max(1, math.ceil(p / 100 * len(xs)))
    return xs[k - 1]


def r3(x):
    return None if x is None else round(x, 3)


def audit_events(offset, t_from, t_to):
    with open(AUDIT, "rb") as f:
        f.seek(offset)
        for line in f:
            try:
                e = json.loads(line)
            except Exception:
                continue
            t = parse_ts(e["requestReceivedTimestamp"])
            if t < t_from or t > t_to:
                continue
            yield e


def klog_time(line, year):
    m = re.match(r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", line)
    if not m:
        return None, None
    lvl, mo, d, H, M, S, frac = m.groups()
    t = datetime(year, int(mo), int(d), int(H), int(M), int(S), tzinfo=timezone.utc).timestamp()
    return lvl, t + float("0." + frac)


def analyze(label):
    r = json.load(open(f"{RES}/{label}.json"))
    kind = r["controller"]
    ua_pat = "kube-gc" if kind == "kube-gc" else "kube-controller-manager"
    T0, stop = r["T0"], r["controller_stop"]["stopped_at"]
    outages = r["outages"]
    # outage end = first 200 to a LIST sent after the stop and received after the restart began
    # (a /readyz 200 can still arrive just after etcd's SIGTERM; such early 200s are listed)
    for o in outages:
        for key, w in (("first_list_200", "poller_lists"), ("first_readyz_200", "poller_readyz")):
            oks = [x["recv"] for x in r[w] if x["sent"] >= o["stop_at"] and x["status"] == 200
                   and x["recv"] >= o["start_at"]]
            o[key] = min(oks) if oks else None
            o["early_200s_" + w] = [[round(x["sent"] - o["stop_at"], 3), round(x["recv"] - o["stop_at"], 3)]
                                   for x in r[w] if x["sent"] >= o["stop_at"] and x["status"] == 200
                                   and x["recv"] < o["start_at"]]
        firsts = [t for t in (o["first_list_200"], o["first_readyz_200"]) if t]
        o["end"] = min(firsts) if firsts else o["up_sh_returned_at"]

    deletes = {}           # job -> list of (recv, stage, code)
    ctl_verbs = {}         # (verb, resource, code) -> n
    delete_codes = {}
    all_deletes = 0
    for e in audit_events(r["audit_offset"], T0 - 1, stop + 1):
        ua = e.get("userAgent", "")
        if ua_pat not in ua:
            continue
        ref = e.get("objectRef", {}) or {}
        code = (e.get("responseStatus") or {}).get("code")
        key = f'{e["verb"]} {ref.get("resource")} {code}'
        ctl_verbs[key] = ctl_verbs.get(key, 0) + 1
        if e["verb"] == "delete":
            all_deletes += 1
            delete_codes[str(code)] = delete_codes.get(str(code), 0) + 1
            if ref.get("resource") == "jobs" and ref.get("namespace") == NS:
                deletes.setdefault(ref.get("name"), []).append(
                    (parse_ts(e["requestReceivedTimestamp"]), parse_ts(e["stageTimestamp"]), code))

    # poller observations
    seen_deleting, seen_gone, seen_present = {}, {}, {}
    for l in sorted(r["poller_lists"], key=lambda x: x["recv"]):
        if l["status"] != 200 or l["sent"] < T0:
            continue
        for name in r["expiry"]:
            st = l["jobs"].get(name)
            if st is not None and name not in seen_present:
                seen_present[name] = l["recv"]
            if name not in seen_present:
                continue
            if (st is None or st) and name not in seen_deleting:
                seen_deleting[name] = l["recv"]
            if st is None and name not in seen_gone:
                seen_gone[name] = l["recv"]

    jobs = {}
    lat_out, lat_other = [], []
    lat_out_by = {}
    batch_of = {name: b["n"] for b in r.get("batches", []) for name in b["jobs"]}
    due_in = {o["n"]: [] for o in outages}
    due_outside = []
    for name, exp in sorted(r["expiry"].items()):
        in_outage = None
        for o in outages:
            if o["stop_at"] <= exp < o["end"]:
                in_outage = o["n"]
                ref = o["end"]
        if in_outage is None:
            ref = exp
            due_outside.append(name)
        else:
            due_in[in_outage].append(name)
        dl = deletes.get(name, [])
        ok = [d for d in dl if d[2] and 200 <= d[2] < 300]
        del_at = ok[0][1] if ok else None
        lat = del_at - ref if del_at is not None else None
        jobs[name] = {"expiry": exp, "expiry_rel_T0": r3(exp - T0), "expired_in_outage": in_outage,
                      "batch": batch_of.get(name),
                      "reference": ref, "delete_2xx_at": del_at, "latency": r3(lat),
                      "delete_attempts": [[r3(a - T0), r3(b - T0), c] for a, b, c in dl],
                      "seen_deleting_at_rel_T0": r3(seen_deleting[name] - T0) if name in seen_deleting else None,
                      "seen_gone_at_rel_T0": r3(seen_gone[name] - T0) if name in seen_gone else None,
                      "latency_seen_deleting": r3(seen_deleting[name] - ref) if name in seen_deleting else None}
        if lat is not None:
            if in_outage is None:
                lat_other.append(lat)
            else:
                lat_out.append(lat)
                lat_out_by.setdefault(in_outage, []).append(lat)

    # controller log
    year = datetime.fromtimestamp(T0, timezone.utc).year
    lines = open(r["controller_log"], errors="replace").read().splitlines()
    levels = {}
    warn_by_outage = {"before_first_outage": 0}
    bounds = [(o["n"], o["stop_at"]) for o in outages]
    stuck, recovered = [], []
    for ln in lines:
        lvl, t = klog_time(ln, year)
        if lvl:
            levels[lvl] = levels.get(lvl, 0) + 1
        if lvl == "W":
            slot = "before_first_outage"
            for n, s in bounds:
                if t >= s:
                    slot = f"outage_{n}"
            warn_by_outage[slot] = warn_by_outage.get(slot, 0) + 1
        if "informer is not seeing changes" in ln:
            stuck.append([r3(t - T0) if t else None, ln[:300]])
        if "informer is watching again" in ln:
            recovered.append([r3(t - T0) if t else None, ln[:300]])

    deleted = sum(1 for j in jobs.values() if j["delete_2xx_at"] is not None)
    gone = sum(1 for j in jobs.values() if j["seen_gone_at_rel_T0"] is not None)
    per_outage = []
    for o in outages:
        names = due_in[o["n"]]
        lats = [jobs[n]["latency"] for n in names if jobs[n]["latency"] is not None]
        per_outage.append({"n": o["n"], "kind": o["kind"], "due": len(names),
                           "batch_jobs_due_elsewhere": sorted(n for n, b in batch_of.items()
                                                              if b == o["n"] and n not in names),
                           "deleted": len(lats),
                           "p50": r3(pct(lats, 50)), "p99": r3(pct(lats, 99)),
                           "max": r3(max(lats)) if lats else None, "min": r3(min(lats)) if lats else None,
                           "due_rel_sigterm": [r3(min(r["expiry"][n] for n in names) - o["stop_at"]),
                                               r3(max(r["expiry"][n] for n in names) - o["stop_at"])] if names else None,
                           "end_rel_sigterm": r3(o["end"] - o["stop_at"]),
                           "warnings": warn_by_outage.get(f"outage_{o['n']}", 0)})
    summary = {
        "per_outage": per_outage,
        "due_outside_outages": due_outside,
        "label": label, "controller": kind,
        "deleted_2xx": deleted, "seen_gone": gone, "jobs": len(jobs),
        "expired_in_outage": len([j for j in jobs.values() if j["expired_in_outage"]]),
        "expired_in_outage_by_outage": {str(k): len(v) for k, v in sorted(lat_out_by.items())},
        "outage_latency_p50": r3(pct(lat_out, 50)), "outage_latency_p99": r3(pct(lat_out, 99)),
        "outage_latency_max": r3(max(lat_out) if lat_out else None),
        "other_count": len(lat_other),
        "other_latency_p50": r3(pct(lat_other, 50)), "other_latency_max": r3(max(lat_other) if lat_other else None),
        "outage_latency_by_outage": {str(k): {"n": len(v), "p50": r3(pct(v, 50)), "max": r3(max(v))}
                                     for k, v in sorted(lat_out_by.items())},
        "controller_deletes_total": all_deletes, "controller_delete_codes": delete_codes,
        "controller_requests_by_verb_resource_code": dict(sorted(ctl_verbs.items())),
        "log_lines": len(lines), "log_levels": levels, "warnings_by_outage": warn_by_outage,
        "informer_not_seeing_changes": stuck, "informer_watching_again": recovered,
        "outages": [{"n": o["n"], "kind": o["kind"], "stop_rel_T0": r3(o["stop_at"] - T0),
                     "exited_after_s": r3(o["exited_at"] - o["stop_at"]),
                     "started_rel_T0": r3(o["start_at"] - T0),
                     "first_list_200_rel_T0": r3(o["first_list_200"] - T0) if o["first_list_200"] else None,
                     "first_readyz_200_rel_T0": r3(o["first_readyz_200"] - T0) if o["first_readyz_200"] else None,
                     "length_s": r3(o["end"] - o["stop_at"]),
                     "early_200s_after_stop_readyz": o["early_200s_poller_readyz"],
                     "early_200s_after_stop_lists": o["early_200s_poller_lists"]} for o in outages],
        "all_gone_observed_rel_T0": r3(r["all_gone_observed_at"] - T0) if r["all_gone_observed_at"] else None,
        "controller_running_at_end": r["controller_running_at_end"],
        "controller_stop": r["controller_stop"],
    }
    json.dump({"summary": summary, "jobs": jobs}, open(f"{RES}/{label}-analysis.json", "w"), indent=1)
    return summary


if __name__ == "__main__":
    for label in sys.argv[1:]:
        s = analyze(label)
        print(json.dumps(s, indent=1))
