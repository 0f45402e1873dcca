#!/bin/sh
# What kube-gc's start costs a real kube-apiserver with the TTL controller and the garbage
# collector both on, over the Jobs load_jobs.py made: from start to the sentinel's deletion,
# the API server's CPU, memory growth and bytes written (apiserver_cost.py), and the LIST and
# WATCH requests kube-gc sent per resource (audit log). The target: one list and one watch
# per resource, whatever the controllers enabled.
#
#   shared_lists.sh KUBE_GC_BINARY|kcm LABEL [NS]      (after: python3 load_jobs.py N [NS])
#
# Run each binary right after `python3 load_jobs.py 0 NS` re-made the sentinel, back to back.
set -eu
BIN=$1 LABEL=$2 NS=${3:-shared-lists}
KIT=${KUBE_GC_KIT:?set KUBE_GC_KIT to the kit directory}
COST=${KUBE_GC_COST:-$(dirname "$0")/../../../shared/real-apiserver/apiserver_cost.py}
OUT=${KUBE_GC_BENCH_RESULTS:-$(dirname "$0")/results}
mkdir -p "$OUT"
AUDIT=$KIT/logs/audit.log
from=$(wc -l < "$AUDIT")
if [ "$BIN" = kcm ]; then
    # kube-controller-manager (the kit's, TTL + garbage collector): until the audit log shows
    # its DELETE of the sentinel (it logs nothing on success); its peak RSS read before it is
    # stopped.
    python3 "$COST" "$KIT" --timeout 300 \
        --until "jobs/sentinel.*\"verb\":\"delete\".*kube-controller-manager" -- \
        sh -c "'$KIT/start-kcm.sh' >/dev/null; exec tail -n0 -F '$AUDIT'" \
        2> /dev/null | tee "$OUT/$LABEL.cost"
    grep VmHWM "/proc/$(cat "$KIT/kube-controller-manager.pid")/status" | tee -a "$OUT/$LABEL.cost"
    "$KIT/stop-kcm.sh" >/dev/null 2>&1
    AGENT=kube-controller-manager/
else
    # kube-gc logs to stderr: the command joins it to stdout, where apiserver_cost.py looks
    # for the sentinel's deletion, and apiserver_cost.py echoes it to its stderr: the log
    # file. Its peak RSS (VmHWM) is sampled every 0.2 s while it runs.
    python3 "$COST" "$KIT" --timeout 300 --until "\"deleted\".* namespace=\"$NS\" name=\"sentinel\"" -- \
        sh -c "'$BIN' run --kubeconfig '$KIT/admin.kubeconfig' --leader-elect=false \
        --secure-port=0 --controllers=ttl-after-finished,garbagecollector 2>&1 & pid=\$!
        while kill -0 \$pid 2>/dev/null; do
            v=\$(grep VmHWM /proc/\$pid/status 2>/dev/null) && echo \"\$v\" > '$OUT/$LABEL.rss'
            sleep 0.2; done &
        wait \$pid" \
        2> "$OUT/$LABEL.log" | tee "$OUT/$LABEL.cost"
    sleep 1
    sed 's/^/kube-gc /' "$OUT/$LABEL.rss" | tee -a "$OUT/$LABEL.cost"
    AGENT=kube-gc/
fi
sleep 3
tail -n +"$((from + 1))" "$AUDIT" | AGENT=$AGENT python3 -c '
import json, os, sys, collections
lists, watches = collections.Counter(), collections.Counter()
for line in sys.stdin:
    e = json.loads(line)
    if not e.get("userAgent", "").startswith(os.environ["AGENT"]) or e.get("stage") != "ResponseComplete":
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
