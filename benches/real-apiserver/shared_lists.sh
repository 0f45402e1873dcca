#!/bin/sh
# What kube-gc's start costs a real kube-apiserver with the TTL controller and the garbage
# collector both on, over the Jobs load_jobs.py made: from start to the sentinel's deletion,
# the API server's CPU, memory growth and bytes written (apiserver_cost.py), and the LIST and
# WATCH requests kube-gc sent per resource (audit log). Issue 29, item 3: one list and one watch
# per resource, whatever the controllers enabled.
#
#   shared_lists.sh KUBE_GC_BINARY LABEL [NS]      (after: python3 load_jobs.py N [NS])
#
# Run each binary right after `python3 load_jobs.py 0 NS` re-made the sentinel, back to back.
set -eu
BIN=$1 LABEL=$2 NS=${3:-shared-lists}
KIT=${KUBE_GC_KIT:-/work/kit}
COST=${KUBE_GC_COST:-$(dirname "$0")/../../../shared/real-apiserver/apiserver_cost.py}
OUT=${KUBE_GC_BENCH_RESULTS:-$(dirname "$0")/results}
mkdir -p "$OUT"
AUDIT=$KIT/logs/audit.log
from=$(wc -l < "$AUDIT")
# kube-gc logs to stderr: the command joins it to stdout, where apiserver_cost.py looks for the
# sentinel's deletion, and apiserver_cost.py echoes it to its stderr: the log file.
python3 "$COST" "$KIT" --timeout 300 --until "\"deleted\".* namespace=\"$NS\" name=\"sentinel\"" -- \
    sh -c "exec '$BIN' run --kubeconfig '$KIT/admin.kubeconfig' --leader-elect=false \
    --secure-port=0 --controllers=ttl-after-finished,garbagecollector 2>&1" \
    2> "$OUT/$LABEL.log" | tee "$OUT/$LABEL.cost"
sleep 3
tail -n +"$((from + 1))" "$AUDIT" | python3 -c '
import json, sys, collections
lists, watches = collections.Counter(), collections.Counter()
for line in sys.stdin:
    e = json.loads(line)
    if not e.get("userAgent", "").startswith("kube-gc/") or e.get("stage") != "ResponseComplete":
        continue
    ref = e.get("objectRef") or {}
    resource = "/".join(x for x in (ref.get("apiGroup", ""), ref.get("resource", "")) if x)
    if e["verb"] == "list":
        lists[resource] += 1
    elif e["verb"] == "watch":
        watches[resource] += 1
print("LISTs of batch/jobs:", lists["batch/jobs"], " WATCHes of batch/jobs:", watches["batch/jobs"])
print("resources listed more than once:", {r: n for r, n in lists.items() if n > 1} or "none")
print("LISTs:", sum(lists.values()), "over", len(lists), "resources; WATCHes:", sum(watches.values()))
' | tee -a "$OUT/$LABEL.cost"
