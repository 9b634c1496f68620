"""fleet.py: what the tests against the vmfleet fixture (tests/ecosystem/vm_fleet.sh) share:
their arguments (SOURCE_DIR FLEET_DIR), the fixture's env file, the checks and their outcome,
and VictoriaMetrics' query API. Used by tests/ecosystem/test_vmalert.py and
tests/grafana/test_grafana.py (which add this directory to sys.path)."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

SRC, FLEET = sys.argv[1], sys.argv[2]
failed = False


def check(name, want, got):
    """Prints ok or FAIL with both values; a FAIL makes exit_code() 1."""
    global failed
    if want == got:
        print(f"ok   {name}")
    else:
        print(f"FAIL {name}: expected [{want}] got [{got}]")
        failed = True


def exit_code():
    return 1 if failed else 0


def _env():
    e = {}
    with open(os.path.join(FLEET, "env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            e[k] = v
    return e


# The fixture's env file: VM_URL, COLLECTOR_A_URL, TOKEN, CA, ...
E = _env()


def vm(path, params):
    """The JSON answer of VictoriaMetrics' PATH (/api/v1/query, ...) with PARAMS; an HTTP
    error is {"status": "error", "error": the start of its body}."""
    u = E["VM_URL"] + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(u, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return {"status": "error", "error": e.read().decode(errors="replace")[:300]}
