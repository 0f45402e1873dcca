#!/usr/bin/env python3
"""Fills the kit's API server with N unfinished batch/v1 Jobs of about 7 KB (a pod template with
env, resources, labels and annotations, like a CI job's) in namespace NS, then one finished
"sentinel" Job with ttlSecondsAfterFinished: 0, created last: its DELETE in the audit log (or
kube-gc's log) marks "caches synced and workers running".

  load_jobs.py N [NS]        (default NS: shared-lists)

Reads the kit from $KUBE_GC_KIT (required). Creates with 16 connections in parallel;
Jobs that exist already are kept (409 is fine), so a second run only adds the sentinel again.
kube-controller-manager must not run meanwhile (it would start the Jobs' Pods)."""
import http.client, json, os, ssl, sys, threading, time
from datetime import datetime, timezone

KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
TOKEN = open(f"{KIT}/pki/admin.token").read().strip()
CTX = ssl.create_default_context(cafile=f"{KIT}/pki/ca.crt")


def conn():
    return http.client.HTTPSConnection("127.0.0.1", 6443, context=CTX, timeout=60)


def request(c, method, path, body=None, content_type="application/json"):
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    return r.status, r.read()


def job(name, ttl=None):
    env = [{"name": f"SETTING_{i:02d}", "value": f"value-{i:02d}-" + "x" * 60} for i in range(40)]
    spec = {
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": {"app": "load", "tier": "batch", "run": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main", "image": "registry.example.com/ci/runner:1.2.3",
                    "command": ["/bin/sh", "-c", "echo run && sleep 1"],
                    "env": env,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"cpu": "1", "memory": "1Gi"}},
                }],
            },
        },
    }
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"app": "load"},
                         "annotations": {"load/description": "y" * 400}},
            "spec": spec}


def remove_sentinel(c, path):
    """The last run's sentinel may linger with a `foregroundDeletion` finalizer (the run was
    stopped right after its DELETE, before its collector removed it): clear it, delete, wait."""
    request(c, "PATCH", f"{path}/sentinel", {"metadata": {"finalizers": None}},
            "application/merge-patch+json")
    request(c, "DELETE", f"{path}/sentinel?propagationPolicy=Background")
    for _ in range(100):
        status, _ = request(c, "GET", f"{path}/sentinel")
        if status == 404:
            return
        time.sleep(0.1)
    raise SystemExit("the old sentinel does not go away")


def main():
    n = int(sys.argv[1])
    ns = sys.argv[2] if len(sys.argv) > 2 else "shared-lists"
    c = conn()
    status, _ = request(c, "POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert status in (201, 409), status
    path = f"/apis/batch/v1/namespaces/{ns}/jobs"
    counts = {}
    lock = threading.Lock()

    def worker(k):
        c = conn()
        for i in range(k, n, 16):
            status, body = request(c, "POST", path, job(f"load-{i:06d}"))
            with lock:
                counts[status] = counts.get(status, 0) + 1
            if status not in (201, 409):
                print(status, body[:200], file=sys.stderr)

    start = time.time()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{n} Jobs in {time.time() - start:.1f} s: {counts}")
    c = conn()  # the first one may have timed out while the Jobs were made
    remove_sentinel(c, path)
    status, body = request(c, "POST", path, job("sentinel", ttl=0))
    assert status == 201, (status, body[:300])
    created = json.loads(body)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    created["status"] = {"conditions": [{"type": "Complete", "status": "True",
                                         "lastTransitionTime": now}],
                         "startTime": now, "completionTime": now, "succeeded": 1}
    status, body = request(c, "PUT", f"{path}/sentinel/status", created)
    assert status == 200, (status, body[:300])
    print(f"sentinel uid {created['metadata']['uid']} finished at {now}")


if __name__ == "__main__":
    main()
