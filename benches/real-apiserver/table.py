#!/usr/bin/env python3
"""table.py LABEL... : markdown tables from results/LABEL-analysis.json (analyze_outages.py) and
results/LABEL-relist.json (relist.py): one row per run and outage, then one row per run."""
import json, os, sys
KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
print("| run | outage | SIGTERM→exit (s) | outage length SIGTERM→first 200 (s) | Jobs due in it (due at SIGTERM+… s) | deleted/total | p50 / p99 / max: DELETE 2xx − first answer (s) | W lines (kube-gc) | relist after this restart: max / p50 (s) | informers > 5 s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for lab in sys.argv[1:]:
    S = json.load(open(f"{RES}/{lab}-analysis.json"))["summary"]
    rl = json.load(open(f"{RES}/{lab}-relist.json")) if os.path.exists(f"{RES}/{lab}-relist.json") else {}
    outs = {o["n"]: o for o in S["outages"]}
    for p in S["per_outage"]:
        o = outs[p["n"]]
        x = rl.get(str(p["n"]))
        rel = f"{x['max']} / {x['p50']} ({x['recovered']}/{x['informers']})" if x else "n/a"
        if not x:
            over = "n/a"
        elif len(x["over_5s"]) <= 4:
            over = "; ".join(f"{v} s {name}" for v, name, _ in x["over_5s"]) or "none"
        else:
            over = (f"{len(x['over_5s'])} (slowest: " + "; ".join(f"{v} s {name}" for v, name, _ in x["over_5s"][:3])
                    + f"; fastest of them {x['over_5s'][-1][0]} s)")
        if x and x["never"]:
            over += f"; {len(x['never'])} not relisted before the controller was stopped"
        dr = f"{p['due_rel_sigterm'][0]:.1f}–{p['due_rel_sigterm'][1]:.1f}" if p["due_rel_sigterm"] else "–"
        w = p["warnings"] if S["controller"] == "kube-gc" else "n/a"
        print(f"| {lab} | {p['n']} ({p['kind']}) | {o['exited_after_s']:.1f} | {o['length_s']:.1f} | {p['due']} ({dr}) "
              f"| {p['deleted']}/{p['due']} | {p['p50']} / {p['p99']} / {p['max']} | {w} | {rel} | {over} |")
print()
print("| run | deleted/60 | due outside outages (n; p50 / max after expiry, s) | DELETEs (codes) | 409/404 | log lines (I/W/E) | W before outage 1 | running at end | exit code, s after SIGTERM |")
print("|---|---|---|---|---|---|---|---|---|")
for lab in sys.argv[1:]:
    S = json.load(open(f"{RES}/{lab}-analysis.json"))["summary"]
    lv = S["log_levels"]
    c4 = sum(v for k, v in S["controller_requests_by_verb_resource_code"].items() if k.endswith(" 409") or k.endswith(" 404"))
    cs = S["controller_stop"]
    ex = (f"{cs.get('exit_code')}, {cs['stop_seconds']}" + (" (SIGKILL)" if cs.get("killed") else "")) if S["controller"] == "kube-gc" \
        else f"stop-kcm.sh: {cs.get('stop_output')!r}, {cs['stop_seconds']}"
    wb = S["warnings_by_outage"].get("before_first_outage", 0) if S["controller"] == "kube-gc" else "n/a"
    print(f"| {lab} | {S['deleted_2xx']} | {S['other_count']}; {S['other_latency_p50']} / {S['other_latency_max']} "
          f"| {S['controller_deletes_total']} ({S['controller_delete_codes']}) | {c4} "
          f"| {S['log_lines']} ({lv.get('I',0)}/{lv.get('W',0)}/{lv.get('E',0)}) | {wb} "
          f"| {S['controller_running_at_end']} (exited before stop: {cs['exited_before_stop']}) | {ex} |")
