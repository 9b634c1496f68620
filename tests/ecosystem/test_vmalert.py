#!/usr/bin/env python3
"""test_vmalert.py SOURCE_DIR FLEET_DIR: deploy/prometheus/poolwatch.rules.yml evaluated by
Debian's vmalert (package victoria-metrics, which ships it beside victoria-metrics) against
VictoriaMetrics holding a real collector's series (the vmfleet fixture, vm_fleet.sh).

The rules are the file's, with each `for:` shortened (5m, 15m -> 20s, 1m -> 10s) so that the test
waits seconds, not minutes; `promtool test rules` checks the durations themselves. vmalert
evaluates every 2 s and writes the recording rules back into VictoriaMetrics. Its query step,
which is how far back VictoriaMetrics looks for a series' last sample (Prometheus' lookback,
5 min by default), is 90 s: more than ddk-2003's 60 s between samples, so that its series stay
current between them (its agent takes each sample at the time it is stamped with), and short
enough for gone-1 to go stale within the test. The alerts are watched for 65 s once they fire.

Expected, from what the fixture started (vm_fleet.sh) and checked against the collector's own
API where it has the figure:
  - NonpagedPoolPressure critical for ddk-2003 (about 92 % of 128 MB), with an ETA in its text,
    its value the collector's used / limit for the host;
  - PoolTagLeak for ddk-2003's Ddk  (remote write carries the per-tag leak series of
    /metrics, so HostLeakSuspects, the rule for a store without them, stays quiet);
  - HostSilent warning for gone-1 (SIGKILLed: silent, its pool low), none for bye-1 (stopped
    with SIGTERM: its agent said goodbye, and remote write carried poolwatch_host_stopped 1);
  - RemoteWriteFailing for collector B (scraped; its receiver does not exist);
and no other alert firing. The recording rule pool:poolwatch_hosts_at_critical:count{pool=
"nonpaged"} is 1 in VictoriaMetrics.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import ssl

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import fleet  # noqa: E402 (the shared part of the vmfleet tests)
from fleet import E, SRC, check  # noqa: E402


def get(url, token=None):
    req = urllib.request.Request(url)
    ctx = None
    if token:
        req.add_header("Authorization", "Bearer " + token)
        ctx = ssl.create_default_context(cafile=E["CA"])
        ctx.check_hostname = False
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        return json.load(r)


def vm(query):
    return fleet.vm("/api/v1/query", {"query": query})["data"]["result"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pct(v):
    # Prometheus' humanizePercentage: %.4g of the value times 100, then "%"
    return "%.4g%%" % (v * 100)


work = tempfile.mkdtemp(prefix="pw-vmalert-")
rules = os.path.join(work, "poolwatch.rules.yml")
with open(os.path.join(SRC, "deploy/prometheus/poolwatch.rules.yml")) as f:
    text = f.read()
n_for = len(re.findall(r"^\s+for: ", text, re.M))
text = re.sub(r"^(\s+)for: 5m$", r"\1for: 20s", text, flags=re.M)
text = re.sub(r"^(\s+)for: 1m$", r"\1for: 10s", text, flags=re.M)
text = re.sub(r"^(\s+)for: 15m$", r"\1for: 20s", text, flags=re.M)
check("every for: of the rules shortened", n_for,
      len(re.findall(r"^\s+for: (20|10)s$", text, re.M)))
with open(rules, "w") as f:
    f.write(text)

port = free_port()
log = open(os.path.join(work, "vmalert.log"), "w")
proc = subprocess.Popen(
    ["vmalert", "-rule=" + rules, "-datasource.url=" + E["VM_URL"],
     "-remoteWrite.url=" + E["VM_URL"], "-remoteWrite.flushInterval=1s",
     "-notifier.url=http://127.0.0.1:%d" % free_port(), "-evaluationInterval=2s",
     "-datasource.queryStep=90s", "-httpListenAddr=127.0.0.1:%d" % port],
    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

want = {("NonpagedPoolPressure", "ddk-2003", "critical"), ("PoolTagLeak", "ddk-2003", "warning"),
        ("HostSilent", "gone-1", "warning"), ("RemoteWriteFailing", None, "warning")}
firing = []
try:
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            alerts = get("http://127.0.0.1:%d/api/v1/alerts" % port)["data"]["alerts"] or []
        except (OSError, ValueError):
            alerts = []
        firing = [a for a in alerts if a.get("state") == "firing"]
        keys = {(a["name"], a["labels"].get("host"), a["labels"].get("severity")) for a in firing}
        if keys >= want:
            break
        if proc.poll() is not None:
            break
        time.sleep(1)
    # For one of ddk-2003's sample intervals and then some, the same alerts and no other: each
    # evaluation sees its newest sample within the query step (a series that fell out of it
    # between two samples resolved the alert, which fired again 10 s after the next sample)
    want_keys = sorted((n, h or "", s) for n, h, s in want)
    watch_end = time.time() + 65
    while True:
        firing = [a for a in (get("http://127.0.0.1:%d/api/v1/alerts" % port)["data"]["alerts"] or [])
                  if a.get("state") == "firing"]
        keys = sorted((a["name"], a["labels"].get("host") or "", a["labels"].get("severity"))
                      for a in firing)
        if keys != want_keys or time.time() >= watch_end:
            break
        time.sleep(1)
    if keys != want_keys:
        print("     the alerts firing changed %.0f s after they all fired" %
              (65 - max(0.0, watch_end - time.time())))
    check("alerts firing, the same for 65 s", want_keys, keys)
    by = {(a["name"], a["labels"].get("host")): a for a in firing}

    h = get(E["COLLECTOR_A_URL"] + "/api/v1/hosts/ddk-2003", E["TOKEN"])
    a = by.get(("NonpagedPoolPressure", "ddk-2003"))
    if a is not None:
        v = float(a["value"])
        print("     ddk-2003: alert value %.6f; collector: ratio %.6f, level %s, ETA %s ms, "
              "suspects %s" % (v, h["nonpaged_ratio"], h["nonpaged_level"], h["nonpaged_eta_ms"],
                               h["suspects"]))
        check("collector's level of ddk-2003", "critical", h["nonpaged_level"])
        # ddk-2003 samples once a minute: the store may be one sample behind the collector
        check("alert value is the collector's used / limit (within one sample)", True,
              abs(v - h["nonpaged_ratio"]) < 0.001)
        check("pressure summary", "ddk-2003: nonpaged pool at %s of its limit" % pct(v),
              a["annotations"]["summary"])
        check("pressure description's ratio", "used / limit = %.3f" % v,
              a["annotations"]["description"].split(";")[0])
        m = re.search(r"time to exhaustion at the current trend: ((\d+)d )?((\d+)h )?((\d+)m )?(\d+)s$",
                      a["annotations"]["description"])
        check("pressure ETA is a duration", True, m is not None)
        if m is not None:
            # the text is the series' value (humanizeDuration drops the fraction); the series
            # is the collector's ETA of the analysis pass before ddk-2003's last sample
            eta = sum(int(m.group(g) or 0) * k for g, k in ((2, 86400), (4, 3600), (6, 60), (7, 1)))
            got = vm('poolwatch_pool_exhaustion_seconds{host="ddk-2003",pool="nonpaged"}')
            eta_vm = float(got[0]["value"][1]) if got else -1
            print("     ETA in the alert %d s, the series %.3f s, the collector's API now %.0f s" %
                  (eta, eta_vm, (h["nonpaged_eta_ms"] - h["last_seen_ms"]) / 1000
                   if h["nonpaged_eta_ms"] is not None else -1))
            check("ETA text is the series' value", True, 0 <= eta_vm - eta < 1.0 + 0.001 * eta_vm)
    a = by.get(("PoolTagLeak", "ddk-2003"))
    if a is not None:
        check("the leak alert names ddk-2003's leaking tag", "Ddk ", a["labels"].get("tag"))
    a = by.get(("RemoteWriteFailing", None))
    if a is not None:
        check("remote write alert names collector B's job", "poolwatch", a["labels"].get("job"))
    deadline = time.time() + 30
    got = []
    while time.time() < deadline:
        got = [r["value"][1] for r in vm('pool:poolwatch_hosts_at_critical:count{pool="nonpaged"}')]
        if got:
            break
        time.sleep(1)
    check("recording rule written to VictoriaMetrics", ["1"], got)
    # the clean stop reached VictoriaMetrics through remote write: bye-1 stopped, gone-1 not
    check("poolwatch_host_stopped of the cleanly stopped host", ["1"],
          [r["value"][1] for r in vm('last_over_time(poolwatch_host_stopped{host="bye-1"}[1h])')])
    check("poolwatch_host_stopped of the killed host", ["0"],
          [r["value"][1] for r in vm('last_over_time(poolwatch_host_stopped{host="gone-1"}[1h])')])
    h = get(E["COLLECTOR_A_URL"] + "/api/v1/hosts/bye-1", E["TOKEN"])
    check("the collector's connection of bye-1", "stopped", h.get("connection"))
    # The agents' own footprint (what AgentFootprint judges; no agent of the fixture grows, so
    # it does not fire): by remote write from collector A (no job label), the value of the
    # sample the collector's API holds for ddk-2003 once both name the same sample time; and
    # on collector B's /metrics, scraped (job "poolwatch").
    deadline = time.time() + 150
    same, scraped = None, []
    while time.time() < deadline and (same is None or not scraped):
        q = 'poolwatch_agent_resident_bytes{host="ddk-2003",job=""}'
        rw, ts = vm(q), vm("timestamp(%s)" % q)  # the value, and its sample's time
        try:  # polled: an answer slower than get's 10 s (seen at load 27) is asked again
            h = get(E["COLLECTOR_A_URL"] + "/api/v1/hosts/ddk-2003", E["TOKEN"])
        except (OSError, ValueError):
            h = {}
        ag = (h.get("totals") or {}).get("agent")
        if rw and ts and ag and int(round(float(ts[0]["value"][1]) * 1000)) == h["last_seen_ms"]:
            same = (float(rw[0]["value"][1]), float(ag["rss_bytes"]))
        scraped = vm('poolwatch_agent_resident_bytes{host="sim-b",job="poolwatch"}')
        time.sleep(1)
    check("ddk-2003's agent resident set by remote write is the API's for that sample", True,
          same is not None and same[0] == same[1] and same[0] > 0)
    print("     ddk-2003 agent resident set: remote write, API: %s" % (same,))
    check("sim-b's agent resident set on /metrics", True,
          bool(scraped) and float(scraped[0]["value"][1]) > 0)
    cpu = vm('poolwatch_agent_cpu_seconds_total{host="ddk-2003",job=""}')
    check("ddk-2003's agent CPU seconds by remote write", True, bool(cpu))
    check("no handles series from a Linux agent", [], vm('poolwatch_agent_handles'))
finally:
    proc.terminate()
    proc.wait(10)
    log.close()
    if fleet.failed:
        print("--- vmalert log")
        with open(os.path.join(work, "vmalert.log")) as f:
            print("".join(f.readlines()[-20:]))
        print("--- firing: " + json.dumps(firing)[:3000])
    shutil.rmtree(work, ignore_errors=True)
sys.exit(fleet.exit_code())
