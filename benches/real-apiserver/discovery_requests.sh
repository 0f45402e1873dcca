#!/bin/bash
# Runs `kube-gc run --dry-run` (every controller) for 70 s against the kit's kube-apiserver and
# counts, from its audit log, kube-gc's requests and how many were discovery GETs (/api, /apis,
# /api/{v}, /apis/{g}/{v}): the garbage collector re-discovers every 30 s, so 70 s holds the
# start-up discovery and two or three rounds more.
#
#   benches/real-apiserver/discovery_requests.sh target/release/kube-gc LABEL
set -euo pipefail
BIN=$1; LABEL=$2; KIT=${KUBE_GC_KIT:?set KUBE_GC_KIT to the kit directory}; AUDIT=$KIT/logs/audit.log
START=$(wc -l < "$AUDIT")
"$BIN" run --kubeconfig "$KIT/admin.kubeconfig" --dry-run --secure-port=0 > "/tmp/$LABEL.log" 2>&1 &
PID=$!; sleep 70; kill -TERM $PID; wait $PID || true
tail -n +$((START+1)) "$AUDIT" | LABEL=$LABEL python3 -c "
import collections, json, os, sys
total = 0; paths = collections.Counter()
for line in sys.stdin:
    e = json.loads(line)
    if e.get('stage') != 'ResponseComplete' or 'kube-gc' not in e.get('userAgent', ''):
        continue
    total += 1
    uri = e['requestURI'].split('?')[0]
    if uri in ('/api', '/apis') or (uri.startswith('/api/') and uri.count('/') == 2) \
            or (uri.startswith('/apis/') and uri.count('/') == 3):
        paths[uri] += 1
print(os.environ['LABEL'], 'requests', total, 'discovery GETs', sum(paths.values()),
      'distinct discovery paths', len(paths), 'GETs of /apis', paths['/apis'])
"
