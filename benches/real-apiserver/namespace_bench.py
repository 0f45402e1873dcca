#!/usr/bin/env python3
"""Namespace deletion and pod garbage collection on a real kube-apiserver: kube-gc and
kube-controller-manager on the same scenes, each run from a freshly restarted API server.

  namespace_bench.py run CONTROLLER LABEL     one run (CONTROLLER = kube-gc | kcm)
  namespace_bench.py analyze LABEL...          results/LABEL.json again, from the audit log
  namespace_bench.py table LABEL...            medians and ranges over runs, as markdown

Environment: KUBE_GC_KIT (the kit's directory, required by run and analyze; its kit.env gives
the port), KUBE_GC_BIN (default target/release/kube-gc), KUBE_GC_BENCH_RESULTS (default results/
here), KUBE_GC_COST (the kit's apiserver_cost.py, required by run). The kit must be one of your
own: a run restarts its kube-apiserver and etcd (down.sh, up.sh) and starts
kube-controller-manager on it, so there is no default.

The controllers, as the comparison asks:
  kube-gc  run --controllers=namespace,podgc,garbagecollector,ttl-after-finished
           --terminated-pod-gc-threshold=5 --leader-elect=false --secure-port=0
  kcm      start-kcm.sh --controllers=namespace-controller
           --controllers=pod-garbage-collector-controller --terminated-pod-gc-threshold=5
           (start-kcm.sh adds the TTL and garbage-collector controllers)

One run, all names prefixed nsb-LABEL-:
  before T  the API server restarted, 5 s idle; Nodes `live` (Ready), `gone` (Ready) and `oos`
            (not ready, tainted node.kubernetes.io/out-of-service); namespace `pods` with Pods
            orphan-0/1 (on `gone`), oos-0 (on `oos`), unsched-0 (no node, a finalizer of ours)
            and live-0 (on `live`, never to be touched); namespaces `once` and `held`, each with
            two Pods (not scheduled), three ConfigMaps, a Secret, a Job, a Lease, an Event and
            the ServiceAccount `default` — `held` also a ConfigMap with a finalizer of ours.
  T         the controller starts (the API server's cost is measured from here: apiserver_cost.py
            runs the `drive` step, which starts and stops the controller)
  T+15 s    DELETE namespace `once`; DELETE Node `gone`; DELETE Pods oos-0 and unsched-0
            (neither goes by itself: no kubelet, a finalizer). Once unsched-0 is marked Failed
            (the first step of a force deletion), its finalizer is removed 3 s later.
  T+30 s    DELETE namespace `held`
  T+50 s    its ConfigMap's finalizer removed (JSON patch): the last blocker released
  T+90 s    eight terminated Pods (phase Succeeded, on `live`) created one by one: three are above
            the threshold of 5
  T+120 s   (or once everything above happened, if later; at most T+300 s) the controller stops
Then, from the audit log (stageTimestamp of each request's ResponseComplete): each namespace's
DELETE → its successful /finalize, the release → /finalize, and the requests every controller
component sent about the namespace in between (its objects, the namespace, and the namespace
controller's discovery GETs); for the Pods, the Node's DELETE → each orphan's DELETE, our DELETE
→ the controller's DELETE of oos-0, our DELETE → the controller's status patch (Failed) of
unsched-0, and the k-th surplus terminated Pod's status write → the k-th deletion. The API
server's cost over T..stop is apiserver_cost.py's. Writes results/LABEL.json, LABEL.cost and
LABEL.log (kube-gc's log; kcm's is the kit's logs/kcm.log)."""
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import time
import http.client
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.environ.get("KUBE_GC_KIT", "")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(HERE, "results"))
KUBE_GC = os.environ.get("KUBE_GC_BIN", "target/release/kube-gc")
COST = os.environ.get("KUBE_GC_COST", "")
UA = "nsbench/1"
HOLD = "nsbench.kube-gc.io/hold"
THRESHOLD = 5
TERMINATED = 8
KUBE_GC_ARGS = ["--controllers=namespace,podgc,garbagecollector,ttl-after-finished",
                f"--terminated-pod-gc-threshold={THRESHOLD}", "--leader-elect=false", "--secure-port=0"]
KCM_ARGS = ["--controllers=namespace-controller", "--controllers=pod-garbage-collector-controller",
            f"--terminated-pod-gc-threshold={THRESHOLD}"]
# Seconds after the controller's start.
AT_FIRST, AT_HELD, AT_RELEASE, AT_TERMINATED, WINDOW, LONGEST = 15, 30, 50, 90, 120, 300


def kit_port():
    port = 6443
    try:
        for line in open(os.path.join(KIT, "kit.env")):
            if line.startswith("API_PORT="):
                port = int(line.split("=", 1)[1])
    except OSError:
        pass
    return port


_SERVER = []


def server():
    """(port, token, TLS context) of the kit, read once."""
    if not _SERVER:
        if not KIT:
            raise SystemExit("set KUBE_GC_KIT to a kit of your own (build_kit.sh): a run restarts its "
                             "API server and starts kube-controller-manager on it")
        _SERVER.extend([kit_port(), open(os.path.join(KIT, "pki/admin.token")).read().strip(),
                        ssl.create_default_context(cafile=os.path.join(KIT, "pki/ca.crt"))])
    return _SERVER


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def request(method, path, body=None, content_type="application/json"):
    """-> (status, parsed body); raises on a transport error (the server must be up)."""
    port, token, context = server()
    c = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    headers = {"Accept": "application/json", "User-Agent": UA, "Authorization": f"Bearer {token}"}
    if body is not None:
        body = json.dumps(body)
        headers["Content-Type"] = content_type
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode(errors="replace")
    finally:
        c.close()


def must(method, path, body=None, content_type="application/json", ok=(200, 201)):
    status, answer = request(method, path, body, content_type)
    if status not in ok:
        raise SystemExit(f"{method} {path}: {status} {answer}")
    return answer


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(s):
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


class Names:
    """Every name of one run."""

    def __init__(self, label):
        if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?", label):
            raise SystemExit(f"LABEL {label!r}: lowercase letters, digits and '-', at most 32")
        p = f"nsb-{label}"
        self.once, self.held, self.pods = f"{p}-once", f"{p}-held", f"{p}-pods"
        self.live, self.gone, self.oos = f"{p}-live", f"{p}-gone", f"{p}-oos"


# ------------------------------------------------------------------------------------ objects
def pod(name, node=None, finalizers=None):
    spec = {"restartPolicy": "Never", "automountServiceAccountToken": False,
            "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def make_node(name, ready, out_of_service=False):
    must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    at = now_rfc3339()
    condition = {"type": "Ready", "status": "True" if ready else "False",
                 "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                 "message": "nsbench", "lastHeartbeatTime": at, "lastTransitionTime": at}
    must("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"conditions": [condition]}},
         "application/merge-patch+json")
    if out_of_service:
        taints = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                  {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]
        must("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints}}, "application/merge-patch+json")


def make_namespace(ns):
    must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # No ServiceAccount controller runs on the kit; the ServiceAccount admission plugin wants it.
    must("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})


def fill(ns, held):
    """Two Pods, three ConfigMaps, a Secret, a Job, a Lease, an Event (+ one held ConfigMap)."""
    for i in range(2):
        must("POST", f"/api/v1/namespaces/{ns}/pods", pod(f"pod-{i}"))
    for i in range(3):
        must("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}})
    if held:
        must("POST", f"/api/v1/namespaces/{ns}/configmaps",
             {"metadata": {"name": "held", "finalizers": [HOLD]}, "data": {"k": "v"}})
    must("POST", f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "secret"}, "stringData": {"k": "v"}})
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}
    must("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", job)
    must("POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
         {"metadata": {"name": "lease"}, "spec": {"holderIdentity": "nsbench"}})
    at = now_rfc3339()
    must("POST", f"/api/v1/namespaces/{ns}/events",
         {"metadata": {"name": "pod-0.event"}, "type": "Normal", "reason": "Scheduled", "message": "nsbench",
          "involvedObject": {"kind": "Pod", "namespace": ns, "name": "pod-0"},
          "firstTimestamp": at, "lastTimestamp": at, "count": 1, "source": {"component": "nsbench"}})


def set_up(n):
    make_node(n.live, ready=True)
    make_node(n.gone, ready=True)
    make_node(n.oos, ready=False, out_of_service=True)
    make_namespace(n.pods)
    pods = f"/api/v1/namespaces/{n.pods}/pods"
    for name, node, finalizers in [("orphan-0", n.gone, None), ("orphan-1", n.gone, None),
                                   ("oos-0", n.oos, None), ("unsched-0", None, [HOLD]), ("live-0", n.live, None)]:
        must("POST", pods, pod(name, node, finalizers))
    for ns, held in [(n.once, False), (n.held, True)]:
        make_namespace(ns)
        fill(ns, held)


# ------------------------------------------------------------------------------------ cleanup
def drop_finalizers(path):
    status, obj = request("GET", path)
    if status == 200 and obj["metadata"].get("finalizers"):
        request("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")


def empty_and_finalize(ns):
    """What no controller does once the run is over: empties `ns` and finalizes it."""
    status, _ = request("GET", f"/api/v1/namespaces/{ns}")
    if status == 404:
        return
    for group_path in ["/api/v1", "/apis/batch/v1", "/apis/coordination.k8s.io/v1"]:
        for resource in ["pods", "configmaps", "secrets", "events", "serviceaccounts", "jobs", "leases"]:
            status, listed = request("GET", f"{group_path}/namespaces/{ns}/{resource}")
            if status != 200:
                continue
            for item in listed.get("items", []):
                path = f"{group_path}/namespaces/{ns}/{resource}/{item['metadata']['name']}"
                drop_finalizers(path)
                request("DELETE", f"{path}?gracePeriodSeconds=0&propagationPolicy=Background")
    request("DELETE", f"/api/v1/namespaces/{ns}")
    status, namespace = request("GET", f"/api/v1/namespaces/{ns}")
    if status == 200:
        namespace["spec"]["finalizers"] = []
        request("PUT", f"/api/v1/namespaces/{ns}/finalize", namespace)


def clean_up(n):
    for ns in [n.once, n.held, n.pods]:
        empty_and_finalize(ns)
    for node in [n.live, n.gone, n.oos]:
        request("DELETE", f"/api/v1/nodes/{node}")


def leftovers():
    """Namespaces and Nodes earlier runs left (a run stopped half-way)."""
    found = []
    for kind in ["namespaces", "nodes"]:
        status, listed = request("GET", f"/api/v1/{kind}")
        for item in listed.get("items", []) if status == 200 else []:
            if item["metadata"]["name"].startswith("nsb-"):
                found.append((kind, item["metadata"]["name"]))
    return found


# ------------------------------------------------------------------------------------ drive
class Controller:
    """The controller under test, started and stopped by the drive step."""

    def __init__(self, which, label):
        self.which, self.label, self.proc, self.peak_rss_kib = which, label, None, None

    def start(self):
        if self.which == "kcm":
            subprocess.run([os.path.join(KIT, "start-kcm.sh"), *KCM_ARGS], check=True,
                           stdout=subprocess.DEVNULL)
        else:
            out = open(os.path.join(RES, f"{self.label}.log"), "w")
            self.proc = subprocess.Popen(
                [KUBE_GC, "run", "--kubeconfig", os.path.join(KIT, "admin.kubeconfig"), *KUBE_GC_ARGS],
                stdout=out, stderr=subprocess.STDOUT)

    def pid(self):
        if self.proc:
            return self.proc.pid
        try:
            return int(open(os.path.join(KIT, "kube-controller-manager.pid")).read())
        except (OSError, ValueError):
            return None

    def sample_rss(self):
        try:
            for line in open(f"/proc/{self.pid()}/status"):
                if line.startswith("VmHWM:"):
                    self.peak_rss_kib = int(line.split()[1])
        except (OSError, TypeError):
            pass

    def stop(self):
        self.sample_rss()
        if self.which == "kcm":
            subprocess.run([os.path.join(KIT, "stop-kcm.sh")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        elif self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def exists(path):
    status, obj = request("GET", path)
    return obj if status == 200 else None


def drive(which, label):
    """Runs under apiserver_cost.py: the controller's whole life, and the scenes' actions."""
    n = Names(label)
    pods = f"/api/v1/namespaces/{n.pods}/pods"
    controller = Controller(which, label)
    t0 = time.time()
    controller.start()
    log(f"{which} started")
    actions, done = {}, set()
    unsched_failed_at = None
    terminated_made = 0

    def at(seconds):
        return time.time() - t0 >= seconds

    def act(name, method, path, body=None, content_type="application/json", ok=(200, 201, 202)):
        must(method, path, body, content_type, ok)
        actions[name] = time.time()
        log(name)

    while True:
        if at(AT_FIRST) and "first" not in done:
            act("delete-once", "DELETE", f"/api/v1/namespaces/{n.once}")
            act("delete-node", "DELETE", f"/api/v1/nodes/{n.gone}")
            act("delete-oos", "DELETE", f"{pods}/oos-0")
            act("delete-unsched", "DELETE", f"{pods}/unsched-0")
            done.add("first")
        if at(AT_HELD) and "held" not in done:
            act("delete-held", "DELETE", f"/api/v1/namespaces/{n.held}")
            done.add("held")
        if at(AT_RELEASE) and "release" not in done:
            path = f"/api/v1/namespaces/{n.held}/configmaps/held"
            held = must("GET", path)
            index = held["metadata"]["finalizers"].index(HOLD)
            act("release", "PATCH", path, [
                {"op": "test", "path": "/metadata/uid", "value": held["metadata"]["uid"]},
                {"op": "remove", "path": f"/metadata/finalizers/{index}"}], "application/json-patch+json")
            done.add("release")
        if "first" in done and "unsched" not in done:
            obj = exists(f"{pods}/unsched-0")
            if obj and obj.get("status", {}).get("phase") == "Failed" and unsched_failed_at is None:
                unsched_failed_at = time.time()
            if unsched_failed_at and time.time() - unsched_failed_at >= 3:
                drop_finalizers(f"{pods}/unsched-0")
                actions["unsched-released"] = time.time()
                done.add("unsched")
        if at(AT_TERMINATED) and terminated_made < TERMINATED:
            name = f"done-{terminated_made}"
            must("POST", pods, pod(name, n.live))
            must("PATCH", f"{pods}/{name}/status", {"status": {"phase": "Succeeded"}},
                 "application/merge-patch+json")
            terminated_made += 1
            time.sleep(0.3)
            continue
        controller.sample_rss()
        if at(WINDOW) and finished(n, pods, terminated_made):
            break
        if at(LONGEST):
            log("not finished at the longest window; stopping")
            break
        time.sleep(0.5)
    controller.stop()
    log(f"{which} stopped after {time.time() - t0:.1f} s")
    json.dump({"t0": t0, "stopped": time.time(), "actions": actions, "peak_rss_kib": controller.peak_rss_kib},
              open(os.path.join(RES, f"{label}.drive.json"), "w"))


def finished(n, pods, terminated_made):
    if exists(f"/api/v1/namespaces/{n.once}") or exists(f"/api/v1/namespaces/{n.held}"):
        return False
    status, listed = request("GET", pods)
    names = {p["metadata"]["name"]: p for p in listed.get("items", [])} if status == 200 else {}
    if any(name in names for name in ["orphan-0", "orphan-1", "oos-0", "unsched-0"]):
        return False
    terminated = [p for p in names.values() if p.get("status", {}).get("phase") in ("Succeeded", "Failed")]
    return terminated_made == TERMINATED and len(terminated) <= THRESHOLD


# ------------------------------------------------------------------------------------ analysis
def audit_events(since):
    """Each request from `since` on, once, from the audit log and any rotated since: its
    ResponseComplete (a watch's ResponseStarted until it ends), `t` its stageTimestamp and
    `received` its requestReceivedTimestamp."""
    logs = os.path.join(KIT, "logs")
    files = sorted(os.path.join(logs, f) for f in os.listdir(logs)
                   if f.startswith("audit") and f.endswith(".log")
                   and os.path.getmtime(os.path.join(logs, f)) >= since)
    by_id = {}
    for path in files:
        for line in open(path):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("stage") not in ("ResponseComplete", "ResponseStarted"):
                continue
            e["t"] = parse_ts(e["stageTimestamp"])
            e["received"] = parse_ts(e["requestReceivedTimestamp"])
            if e["received"] < since:
                continue
            if e["stage"] == "ResponseComplete" or e["auditID"] not in by_id:
                by_id[e["auditID"]] = e
    return sorted(by_id.values(), key=lambda e: e["t"])


def component(e):
    """`namespace-controller`, `pod-garbage-collector`, …; None for a request not a controller's.
    kube-gc: `kube-gc/0.1.0 (identity)/COMPONENT`; kcm: `kube-controller-manager/v1.28.7
    (linux/amd64) kubernetes/c8dcb00/COMPONENT`; `main` where no component is named."""
    agent = e.get("userAgent", "")
    parts = agent[agent.find(")") + 1:].split("/")
    if agent.startswith("kube-gc/"):
        return parts[1] if len(parts) > 1 else "main"
    if agent.startswith("kube-controller-manager/"):
        return parts[2] if len(parts) > 2 else "main"
    return None


def ref(e):
    return e.get("objectRef") or {}


def code(e):
    return (e.get("responseStatus") or {}).get("code")


def is_discovery(e):
    uri = e["requestURI"].split("?")[0]
    return uri in ("/api", "/apis") or (uri.startswith("/api/") and uri.count("/") == 2) \
        or (uri.startswith("/apis/") and uri.count("/") == 3)


def mine(e):
    return e.get("userAgent") == UA


def namespace_scene(events, ns, release=None):
    deleted = next((e["t"] for e in events if mine(e) and e["verb"] == "delete"
                    and ref(e).get("resource") == "namespaces" and ref(e).get("name") == ns), None)
    finalized = next((e["t"] for e in events if component(e) and e["verb"] == "update"
                      and ref(e).get("resource") == "namespaces" and ref(e).get("name") == ns
                      and ref(e).get("subresource") == "finalize" and code(e) == 200), None)
    out = {"deleted": deleted, "finalized": finalized,
           "delete_to_gone": round(finalized - deleted, 3) if deleted and finalized else None}
    if release:
        out["release_to_gone"] = round(finalized - release, 3) if finalized else None
    if not (deleted and finalized):
        return out
    by = {}
    for e in events:
        if not (deleted <= e["t"] <= finalized) or not component(e):
            continue
        r = ref(e)
        about = r.get("namespace") == ns or (r.get("resource") == "namespaces" and r.get("name") == ns)
        discovery = is_discovery(e) and component(e) == "namespace-controller"
        if not (about or discovery):
            continue
        verb = "discovery" if discovery else e["verb"] + (f" {r['subresource']}" if r.get("subresource") else "")
        key = f"{component(e)} {verb}" + (f" {code(e)}" if code(e) and code(e) >= 300 else "")
        by[key] = by.get(key, 0) + 1
    out["requests"] = dict(sorted(by.items()))
    out["requests_total"] = sum(by.values())
    out["namespace_controller_requests"] = sum(v for k, v in by.items() if k.startswith("namespace-controller "))
    return out


def pod_scenes(events, n, actions):
    pods_ns = n.pods

    def controller_on_pod(name, verb, subresource=None, ok=True):
        return [e for e in events if component(e) and e["verb"] == verb and ref(e).get("namespace") == pods_ns
                and ref(e).get("resource") == "pods" and ref(e).get("name") == name
                and ref(e).get("subresource") == subresource and (not ok or code(e) in (200, 201))]

    def first_t(found):
        return found[0]["t"] if found else None

    out = {}
    node_deleted = next((e["t"] for e in events if mine(e) and e["verb"] == "delete"
                         and ref(e).get("resource") == "nodes" and ref(e).get("name") == n.gone), None)
    out["orphaned"] = [round(t - node_deleted, 3) if t and node_deleted else None
                       for t in (first_t(controller_on_pod(f"orphan-{i}", "delete")) for i in range(2))]
    ours = {name: next((e["t"] for e in events if mine(e) and e["verb"] == "delete" and ref(e).get("resource") == "pods"
                        and ref(e).get("name") == name), None) for name in ["oos-0", "unsched-0"]}
    t = first_t(controller_on_pod("oos-0", "delete"))
    out["out_of_service"] = round(t - ours["oos-0"], 3) if t and ours["oos-0"] else None
    t = first_t(controller_on_pod("unsched-0", "patch", "status"))
    out["unscheduled_marked_failed"] = round(t - ours["unsched-0"], 3) if t and ours["unsched-0"] else None
    t = first_t(controller_on_pod("unsched-0", "delete"))
    released = actions.get("unsched-released")
    out["unscheduled_deleted"] = round(t - ours["unsched-0"], 3) if t and ours["unsched-0"] and (
        not released or t <= released) else None
    # The k-th surplus terminated Pod (the 6th, 7th, 8th status write) against the k-th deletion.
    writes = [e["t"] for e in events if mine(e) and e["verb"] == "patch" and ref(e).get("subresource") == "status"
              and ref(e).get("namespace") == pods_ns and ref(e).get("name", "").startswith("done-")]
    deletions = sorted(e["t"] for e in events if component(e) and e["verb"] == "delete" and code(e) == 200
                       and ref(e).get("namespace") == pods_ns and ref(e).get("name", "").startswith("done-"))
    out["terminated"] = [round(d - w, 3) for w, d in zip(writes[THRESHOLD:], deletions)]
    out["terminated_deleted"] = len(deletions)
    out["live_pod_touched"] = len([e for e in events if component(e) and e["verb"] in ("delete", "patch", "update")
                                   and ref(e).get("name") == "live-0"])
    by = {}
    for e in events:
        r = ref(e)
        if not component(e) or component(e) in ("namespace-controller",):
            continue
        ours_pod = r.get("resource") == "pods" and r.get("namespace") == pods_ns and r.get("name")
        ours_node = r.get("resource") == "nodes" and r.get("name") in (n.live, n.gone, n.oos)
        if ours_pod or ours_node:
            key = f"{component(e)} {e['verb']}" + (f" {r['subresource']}" if r.get("subresource") else "") \
                + (f" {code(e)}" if code(e) and code(e) >= 300 else "")
            by[key] = by.get(key, 0) + 1
    out["requests"] = dict(sorted(by.items()))
    return out


def run_requests(events, start, stop):
    """Every request the controller's components sent over the run (received between its
    start and its stop), by component and verb."""
    by = {}
    for e in events:
        if start <= e["received"] <= stop and component(e):
            verb = "discovery" if is_discovery(e) else e["verb"]
            key = f"{component(e)} {verb}"
            by[key] = by.get(key, 0) + 1
    return {"total": sum(by.values()), "by": dict(sorted(by.items()))}


def parse_cost(text):
    m = re.search(r"(?:command|until match): ([\d.]+) s; kube-apiserver ([\d.]+) CPU s, peak memory \+(\d+) MiB, "
                  r"wrote ([\d.]+) MB; etcd ([\d.]+) CPU s", text)
    if not m:
        return None
    keys = ["seconds", "apiserver_cpu_s", "apiserver_peak_growth_mib", "apiserver_wrote_mb", "etcd_cpu_s"]
    return dict(zip(keys, (float(x) for x in m.groups())))


def run(which, label):
    if which not in ("kube-gc", "kcm"):
        raise SystemExit("CONTROLLER is kube-gc or kcm")
    server()
    if not COST or not os.path.exists(COST):
        raise SystemExit(f"{COST!r}: no apiserver_cost.py there; set KUBE_GC_COST")
    os.makedirs(RES, exist_ok=True)
    n = Names(label)
    log(f"restarting the kit's API server ({KIT})")
    subprocess.run([os.path.join(KIT, "down.sh")], check=True, stderr=subprocess.DEVNULL)
    subprocess.run([os.path.join(KIT, "up.sh")], check=True, stdout=subprocess.DEVNULL)
    for kind, name in leftovers():
        log(f"an earlier run left {kind}/{name}: cleaning it up")
        if kind == "namespaces":
            empty_and_finalize(name)
        else:
            request("DELETE", f"/api/v1/nodes/{name}")
    time.sleep(5)
    since = time.time()
    set_up(n)
    log("scenes made; the controller starts")
    cost = subprocess.run([sys.executable, COST, KIT, "--timeout", str(LONGEST + 60), "--",
                           sys.executable, os.path.abspath(__file__), "drive", which, label],
                          stdout=subprocess.PIPE, text=True)
    open(os.path.join(RES, f"{label}.cost"), "w").write(cost.stdout)
    log(cost.stdout.strip())
    drove = json.load(open(os.path.join(RES, f"{label}.drive.json")))
    drove.update({"controller": which, "since": since, "cost": cost.stdout})
    json.dump(drove, open(os.path.join(RES, f"{label}.drive.json"), "w"))
    time.sleep(2)   # the audit log's last lines
    result = analyze(label)
    clean_up(n)
    print(json.dumps(result, indent=1))


def analyze(label):
    """results/LABEL.json from the audit log and what the run recorded (LABEL.drive.json)."""
    server()   # the kit's audit log is read
    n = Names(label)
    drove = json.load(open(os.path.join(RES, f"{label}.drive.json")))
    since = drove["since"]
    events = audit_events(since)
    release = next((e["t"] for e in events if mine(e) and e["verb"] == "patch" and ref(e).get("name") == "held"
                    and ref(e).get("namespace") == n.held), None)
    result = {
        "controller": drove["controller"], "label": label,
        "date": datetime.fromtimestamp(since, timezone.utc).isoformat(),
        "once": namespace_scene(events, n.once),
        "held": namespace_scene(events, n.held, release),
        "pods": pod_scenes(events, n, drove["actions"]),
        "cost": parse_cost(drove["cost"]),
        "run_requests": run_requests(events, drove["t0"], drove["stopped"]),
        "controller_peak_rss_mib": round(drove["peak_rss_kib"] / 1024, 1) if drove.get("peak_rss_kib") else None,
        "window_s": round(drove["stopped"] - drove["t0"], 1),
    }
    json.dump(result, open(os.path.join(RES, f"{label}.json"), "w"), indent=1)
    return result


# ------------------------------------------------------------------------------------ table
def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    if all(float(v).is_integer() and abs(v) >= 1 for v in values):
        fmt = lambda v: f"{v:.0f}"   # counts
    elif max(values) < 1:
        fmt = lambda v: f"{v:.3f}"
    else:
        fmt = lambda v: f"{v:.1f}"
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def table(labels):
    runs = [json.load(open(os.path.join(RES, f"{label}.json"))) for label in labels]
    groups = {}
    for r in runs:
        groups.setdefault(r["controller"], []).append(r)
    rows = [
        ("namespace emptied in one pass: DELETE → gone (s)", lambda r: r["once"]["delete_to_gone"]),
        ("its requests (all controllers, discovery included)", lambda r: r["once"].get("requests_total")),
        ("of them the namespace controller's", lambda r: r["once"].get("namespace_controller_requests")),
        ("namespace held by a finalizer: DELETE → gone (s)", lambda r: r["held"]["delete_to_gone"]),
        ("its last blocker released → gone (s)", lambda r: r["held"]["release_to_gone"]),
        ("its requests (all controllers)", lambda r: r["held"].get("requests_total")),
        ("of them the namespace controller's", lambda r: r["held"].get("namespace_controller_requests")),
        ("orphans of a deleted node: Node DELETE → Pod deleted (s)", lambda r: max(
            (v for v in r["pods"]["orphaned"] if v is not None), default=None)),
        ("terminating Pod on an out-of-service node: DELETE → force-deleted (s)",
         lambda r: r["pods"]["out_of_service"]),
        ("terminating unscheduled Pod: DELETE → marked Failed (s)", lambda r: r["pods"]["unscheduled_marked_failed"]),
        ("terminated Pods above the threshold: surplus → deleted, slowest of 3 (s)",
         lambda r: max(r["pods"]["terminated"], default=None)),
        ("API server CPU over the run (s)", lambda r: (r["cost"] or {}).get("apiserver_cpu_s")),
        ("API server peak memory growth (MiB)", lambda r: (r["cost"] or {}).get("apiserver_peak_growth_mib")),
        ("API server bytes written (MB)", lambda r: (r["cost"] or {}).get("apiserver_wrote_mb")),
        ("etcd CPU (s)", lambda r: (r["cost"] or {}).get("etcd_cpu_s")),
        ("run length: start → stop (s)", lambda r: r["window_s"]),
        ("the controller's requests over the run", lambda r: r.get("run_requests", {}).get("total")),
        ("controller peak RSS (MiB)", lambda r: r["controller_peak_rss_mib"]),
    ]
    names = sorted(groups, reverse=True)   # kube-gc, then kcm
    print("| | " + " | ".join(f"{c} ({len(groups[c])} runs)" for c in names) + " |")
    print("|---|" + "---|" * len(names))
    for title, get in rows:
        print(f"| {title} | " + " | ".join(spread([get(r) for r in groups[c]]) for c in names) + " |")
    print()
    for r in runs:
        print(f"{r['label']} ({r['controller']}, {r['date']}): once {r['once'].get('requests')}; "
              f"held {r['held'].get('requests')}; pods {r['pods']['requests']}")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] in ("run", "drive"):
        (run if sys.argv[1] == "run" else drive)(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        table(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "analyze":
        for label in sys.argv[2:]:
            analyze(label)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
