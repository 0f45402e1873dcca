#!/usr/bin/env python3
"""Outage bench on a real kube-apiserver: three kube-apiserver restarts (SIGTERM, wait for
exit, 15 s down, up.sh, 10 s) from T0+25 s (T0 = controller start), then an etcd outage (SIGTERM,
20 s down, up.sh). Before each of the four outages, a batch of 15 Jobs is created and marked finished
(status: startTime = completionTime = F_k, succeeded 1, a Complete condition) BATCH_LEAD s before
that outage's SIGTERM, with TTLs making them fall due DUE_FROM+(0..1) .. DUE_FROM+(4..5) s after the SIGTERM
(3 per second): inside the outage whether kube-apiserver exits after 1 s (outage ~17 s) or 60 s
(outage ~76 s), and inside the etcd outage (~23-26 s). (Batches, rather than Jobs expiring
through the run: kube-apiserver can take 60 s to exit after SIGTERM, so the first outage would
swallow every expiry.) 60 Jobs in all (job-00..14 outage 1, ...).
Measures, per Job, when the controller's DELETE succeeded (audit log) relative to the end of the
outage its expiry fell in (the server's first answer again), see analyze_outages.py.

usage: outage_bench.py CONTROLLER LABEL [extra controller args...]
   CONTROLLER = kube-gc | kcm
Writes $KUBE_GC_BENCH_RESULTS/LABEL.json (and LABEL.log for kube-gc's stderr, LABEL-kcm.log
for kcm's log segment)."""
import json, os, re, signal, ssl, subprocess, sys, threading, time, http.client
from datetime import datetime, timezone
KIT = os.environ.get("KUBE_GC_KIT") or sys.exit("set KUBE_GC_KIT to the kit's directory")
RES = os.environ.get("KUBE_GC_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))

KUBE_GC = os.environ.get("KUBE_GC_BIN", "target/release/kube-gc")
NS = "outage-bench"
N_BATCH = 15          # Jobs per outage
N_OUTAGES = 4
N_JOBS = N_BATCH * N_OUTAGES
BATCH_LEAD = 5.0      # a batch is created this many s before its outage's SIGTERM
DUE_FROM = 8          # first Jobs of a batch fall due this many s (at least) after the SIGTERM
TOKEN = open(f"{KIT}/pki/admin.token").read().strip()
CTX = ssl.create_default_context(cafile=f"{KIT}/pki/ca.crt")
AUDIT = f"{KIT}/logs/audit.log"
UA = "realbench/2"


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def request(method, path, body=None, timeout=10, content_type="application/json"):
    """-> (status or None, parsed body or error string)"""
    c = http.client.HTTPSConnection("127.0.0.1", 6443, context=CTX, timeout=timeout)
    headers = {"Accept": "application/json", "User-Agent": UA, "Authorization": f"Bearer {TOKEN}"}
    if body is not None:
        body = json.dumps(body)
        headers["Content-Type"] = content_type
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        raw = r.read()
        try:
            parsed = json.loads(raw)
        except Exception:
            parsed = raw.decode(errors="replace")
        return r.status, parsed
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        c.close()


def pid(name):
    return int(open(f"{KIT}/{name}.pid").read().strip())


def alive(p):
    try:
        st = open(f"/proc/{p}/stat").read()
    except OSError:
        return False
    return st.rsplit(")", 1)[1].split()[0] != "Z"


def up():
    r = subprocess.run([f"{KIT}/up.sh"], capture_output=True, text=True)
    if r.returncode != 0:
        log("up.sh failed", r.stdout, r.stderr)
        raise SystemExit("up.sh failed")
    return r.stdout.strip()


def rfc3339(t):
    return datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(s):
    # 2026-11-26T15:57:08.740660Z
    s = s.rstrip("Z")
    if "." in s:
        base, frac = s.split(".")
        frac = (frac + "000000")[:6]
        s = f"{base}.{frac}"
        fmt = "%Y-%m-%dT%H:%M:%S.%f"
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()


# ---------------------------------------------------------------- namespace handling
def ns_gone_and_recreated():
    st, ns = request("GET", f"/api/v1/namespaces/{NS}")
    if st == 200:
        # no namespace controller in this kit: empty it ourselves, then finalize it
        st, jl = request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs")
        for j in (jl.get("items", []) if st == 200 else []):
            name = j["metadata"]["name"]
            if j["metadata"].get("finalizers"):
                request("PATCH", f"/apis/batch/v1/namespaces/{NS}/jobs/{name}",
                        {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
            request("DELETE", f"/apis/batch/v1/namespaces/{NS}/jobs/{name}",
                    {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        st, pl = request("GET", f"/api/v1/namespaces/{NS}/pods")
        for p in (pl.get("items", []) if st == 200 else []):
            request("DELETE", f"/api/v1/namespaces/{NS}/pods/{p['metadata']['name']}?gracePeriodSeconds=0")
        request("DELETE", f"/api/v1/namespaces/{NS}")
        st, ns = request("GET", f"/api/v1/namespaces/{NS}")
        if st == 200:
            ns["spec"]["finalizers"] = []
            st2, b = request("PUT", f"/api/v1/namespaces/{NS}/finalize", ns)
            log("finalize namespace:", st2)
        for _ in range(120):
            st, _b = request("GET", f"/api/v1/namespaces/{NS}")
            if st == 404:
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"namespace {NS} not gone")
        log("namespace gone")
    st, b = request("POST", "/api/v1/namespaces",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    assert st == 201, (st, b)


# ---------------------------------------------------------------- poller
class Poller(threading.Thread):
    """Every `period` s launches (in its own thread, new connection) a LIST of the namespace's Jobs
    and a GET /readyz; records send/receive times, status, and which Jobs exist / are deleting."""

    def __init__(self, period=0.5):
        super().__init__(daemon=True)
        self.period, self.stop, self.lock = period, False, threading.Lock()
        self.lists, self.readyz = [], []

    def one_list(self):
        sent = time.time()
        st, b = request("GET", f"/apis/batch/v1/namespaces/{NS}/jobs?limit=500", timeout=75)
        rec = {"sent": sent, "recv": time.time(), "status": st}
        if st == 200:
            rec["jobs"] = {j["metadata"]["name"]: bool(j["metadata"].get("deletionTimestamp"))
                           for j in b.get("items", [])}
        else:
            rec["error"] = (b if isinstance(b, str) else (b.get("message") if isinstance(b, dict) else None))
            rec["error"] = rec["error"][:200] if rec["error"] else None
        with self.lock:
            self.lists.append(rec)

    def one_readyz(self):
        sent = time.time()
        st, b = request("GET", "/readyz", timeout=15)
        with self.lock:
            self.readyz.append({"sent": sent, "recv": time.time(), "status": st})

    def run(self):
        while not self.stop:
            threading.Thread(target=self.one_list, daemon=True).start()
            threading.Thread(target=self.one_readyz, daemon=True).start()
            time.sleep(self.period)

    def first_ok_after(self, t, which="lists"):
        with self.lock:
            recs = list(getattr(self, which))
        oks = [r["recv"] for r in recs if r["sent"] >= t and r["status"] == 200]
        return min(oks) if oks else None

    def latest_list(self):
        with self.lock:
            oks = [r for r in self.lists if r["status"] == 200]
        return max(oks, key=lambda r: r["recv"]) if oks else None


# ---------------------------------------------------------------- controller
class Controller:
    def __init__(self, kind, label, extra):
        self.kind, self.label, self.extra = kind, label, extra
        self.proc = None

    def start(self):
        if self.kind == "kube-gc":
            self.logpath = f"{RES}/{self.label}.log"
            self.logf = open(self.logpath, "w")
            self.cmd = [KUBE_GC, "run", "--kubeconfig", f"{KIT}/admin.kubeconfig", "--leader-elect=false",
                        "--controllers", "ttl-after-finished,garbagecollector", "--port", "0",
                        "--secure-port", "0"] + self.extra
            self.proc = subprocess.Popen(self.cmd, stdout=self.logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
            self.pid = self.proc.pid
        else:
            self.kcmlog = f"{KIT}/logs/kcm.log"
            self.kcm_offset = os.path.getsize(self.kcmlog) if os.path.exists(self.kcmlog) else 0
            self.cmd = [f"{KIT}/start-kcm.sh"] + self.extra
            r = subprocess.run(self.cmd, capture_output=True, text=True)
            log("start-kcm:", r.stdout.strip(), r.stderr.strip())
            assert r.returncode == 0
            self.pid = pid("kube-controller-manager")

    def running(self):
        if self.kind == "kube-gc":
            return self.proc.poll() is None
        return alive(self.pid)

    def stop(self):
        t = time.time()
        info = {"stop_sent": t}
        if self.kind == "kube-gc":
            info["exited_before_stop"] = self.proc.poll() is not None
            info["exit_code_before_stop"] = self.proc.returncode
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    log("kube-gc did not exit 60 s after SIGTERM: SIGKILL")
                    self.proc.kill(); self.proc.wait()
                    info["killed"] = True
            info["exit_code"] = self.proc.returncode
            self.logf.close()
        else:
            info["exited_before_stop"] = not alive(self.pid)
            r = subprocess.run([f"{KIT}/stop-kcm.sh"], capture_output=True, text=True)
            info["stop_output"] = (r.stdout + r.stderr).strip()
            with open(self.kcmlog, "rb") as f:
                f.seek(self.kcm_offset)
                seg = f.read()
            self.logpath = f"{RES}/{self.label}-kcm.log"
            open(self.logpath, "wb").write(seg)
        info["stopped_at"] = time.time()
        info["stop_seconds"] = round(info["stopped_at"] - t, 3)
        return info


# ---------------------------------------------------------------- main scenario
def job_manifest(i, ttl, batch):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i:02d}", "namespace": NS,
                         "labels": {"app": "outage-bench", "batch": str(batch)}},
            "spec": {"ttlSecondsAfterFinished": ttl, "backoffLimit": 0,
                     "template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "main", "image": "busybox:1.36",
                                                           "command": ["true"]}]}}}}


def request_retry(method, path, body, want, content_type="application/json", tries=20):
    for n in range(tries):
        st, b = request(method, path, body, content_type=content_type)
        if st == want:
            return b
        log(f"  {method} {path}: {st} {str(b)[:150]}; retrying")
        time.sleep(0.25)
    raise SystemExit(f"{method} {path} failed: {st} {b}")


def create_batch(k, planned_stop, uids, expiry, batches):
    """Batch k (1..4): Jobs 15(k-1)..15k-1, finished at F (now, whole seconds), due at
    ceil(planned_stop) + DUE_FROM + j//3 (j = 0..14)."""
    t_start = time.time()
    F = int(t_start)
    Fs = rfc3339(F)
    base = int(planned_stop) + 1 + DUE_FROM
    names = []
    for j in range(N_BATCH):
        i = (k - 1) * N_BATCH + j
        due = base + j // 3
        name = f"job-{i:02d}"
        b = request_retry("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", job_manifest(i, due - F, k), 201)
        uids[name] = b["metadata"]["uid"]
        expiry[name] = due
        names.append(name)
    created = time.time()
    for name in names:
        status = {"status": {"startTime": Fs, "completionTime": Fs, "succeeded": 1,
                             "conditions": [{"type": "Complete", "status": "True", "lastProbeTime": Fs,
                                             "lastTransitionTime": Fs}]}}
        request_retry("PATCH", f"/apis/batch/v1/namespaces/{NS}/jobs/{name}/status", status, 200,
                      content_type="application/merge-patch+json")
    done = time.time()
    bt = {"n": k, "jobs": names, "F": F, "F_rfc3339": Fs, "create_started": t_start, "created": created,
          "finished_patched": done, "planned_stop": planned_stop,
          "due_from": expiry[names[0]], "due_to": expiry[names[-1]]}
    batches.append(bt)
    log(f"batch {k}: {names[0]}..{names[-1]} created+finished in {done - t_start:.2f}s, F={Fs}, due "
        f"{bt['due_from'] - planned_stop:+.1f}..{bt['due_to'] - planned_stop:+.1f}s after the planned SIGTERM"
        f" ({planned_stop - done:.1f}s from now)")
    if done > planned_stop:
        log(f"WARNING: batch {k} finished after its planned SIGTERM")
    return bt


def wait_until(t):
    while time.time() < t:
        time.sleep(0.01)


def stop_with_a_batch_due(o, process, uids, expiry, batches):
    """Outage o: its batch of Jobs created BATCH_LEAD s before o["planned_stop"], then SIGTERM to
    process at that time and a wait for it to exit (o["stop_at"], o["exited_at"])."""
    planned = o["planned_stop"]
    wait_until(planned - BATCH_LEAD)
    create_batch(o["n"], planned, uids, expiry, batches)
    wait_until(planned)
    p = pid(process)
    o["stop_at"] = time.time()
    os.kill(p, signal.SIGTERM)
    while alive(p):
        time.sleep(0.05)
    o["exited_at"] = time.time()


def note_return(o, poller, ctl):
    """After up.sh returned for outage o: 0.6 s more, then when the pollers' first LIST and
    /readyz sent after the stop were answered 200 (o["end"]: that LIST, else up.sh's return)."""
    time.sleep(0.6)
    o["first_list_200"] = poller.first_ok_after(o["stop_at"], "lists")
    o["first_readyz_200"] = poller.first_ok_after(o["stop_at"], "readyz")
    o["end"] = o["first_list_200"] or o["up_sh_returned_at"]
    log(f"  back: LIST 200 at +{(o['first_list_200'] or 0) - o['start_at']:.2f}s after start, "
        f"readyz 200 at +{(o['first_readyz_200'] or 0) - o['start_at']:.2f}s; controller running: {ctl.running()}")


def main():
    kind, label, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    assert kind in ("kube-gc", "kcm")
    os.makedirs(RES, exist_ok=True)
    out = {"controller": kind, "label": label, "extra_args": extra}
    log(up())
    ns_gone_and_recreated()
    audit_offset = os.path.getsize(AUDIT)
    out["audit_offset"] = audit_offset
    uids, expiry, batches = {}, {}, []
    out.update(uids=uids, expiry=expiry, batches=batches, n_batch=N_BATCH, batch_lead=BATCH_LEAD,
               due_from=DUE_FROM)

    poller = Poller(0.5)
    poller.start()
    time.sleep(1)
    ctl = Controller(kind, label, extra)
    T0 = time.time()
    ctl.start()
    out["T0"] = T0
    out["controller_cmd"] = ctl.cmd
    out["controller_pid"] = ctl.pid
    log(f"{kind} started pid {ctl.pid}")

    time.sleep(3)
    if not ctl.running():
        poller.stop = True
        raise SystemExit(f"{kind} exited at once; see {getattr(ctl, 'logpath', 'its log')}")
    outages = []
    planned = T0 + 25
    for k in range(3):
        o = {"kind": "kube-apiserver", "n": k + 1, "planned_stop": planned}
        stop_with_a_batch_due(o, "kube-apiserver", uids, expiry, batches)
        log(f"apiserver outage {k + 1}: exited {o['exited_at'] - o['stop_at']:.1f}s after SIGTERM")
        time.sleep(15)
        o["start_at"] = time.time()
        up()
        o["up_sh_returned_at"] = time.time()
        note_return(o, poller, ctl)
        outages.append(o)
        planned = o["up_sh_returned_at"] + 0.6 + 10
    o = {"kind": "etcd", "n": 4, "planned_stop": planned}
    stop_with_a_batch_due(o, "etcd", uids, expiry, batches)
    log(f"etcd outage: exited {o['exited_at'] - o['stop_at']:.1f}s after SIGTERM")
    time.sleep(20)
    o["start_at"] = time.time()
    up()
    o["up_sh_returned_at"] = time.time()
    # the LISTs sent during the outage may still be hanging: wait for the first 200 of one sent after stop
    for _ in range(200):
        if poller.first_ok_after(o["stop_at"], "lists"):
            break
        time.sleep(0.1)
    note_return(o, poller, ctl)
    outages.append(o)
    last_end = o["end"]

    # wait until every Job is gone or 150 s after the last outage ended
    all_gone_at = None
    while time.time() < last_end + 150:
        l = poller.latest_list()
        if l and l["sent"] > last_end and not l["jobs"]:
            all_gone_at = l["recv"]
            break
        time.sleep(0.5)
    log(f"all gone: {all_gone_at is not None}; controller running: {ctl.running()}")
    time.sleep(1)
    poller.stop = True
    out["all_gone_observed_at"] = all_gone_at
    out["controller_running_at_end"] = ctl.running()
    out["controller_stop"] = ctl.stop()
    out["controller_log"] = ctl.logpath
    log("controller stopped", out["controller_stop"])
    time.sleep(3)  # in-flight poller requests finish
    out["outages"] = outages
    out["poller_lists"] = poller.lists
    out["poller_readyz"] = poller.readyz
    json.dump(out, open(f"{RES}/{label}.json", "w"), indent=1)
    log(f"wrote {RES}/{label}.json")


if __name__ == "__main__":
    main()
