#!/usr/bin/env python3
"""test_grafana.py SOURCE_DIR FLEET_DIR: the Grafana dashboard deploy/grafana/poolwatch.json
against real data (its schema: validate.js, ctest test_grafana_schema).

Every PromQL expression of its panels, with the template variables substituted, returns
   data from VictoriaMetrics holding a real collector's series (the vmfleet fixture,
   tests/ecosystem/vm_fleet.sh): the host and tag variables' own queries (label_values) must
   list ddk-2003 and its leaking tag "Ddk ", which are then used; the pool variable takes its
   default (nonpaged). A range target is asked over the last 10 minutes, an instant one now;
   each must answer with at least one series (and a query that VictoriaMetrics refuses fails).
"""
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ecosystem"))
import fleet  # noqa: E402 (the shared part of the vmfleet tests)
from fleet import SRC, check, vm  # noqa: E402


dash_path = os.path.join(SRC, "deploy/grafana/poolwatch.json")
with open(dash_path) as f:
    dash = json.load(f)

# the template variables
chosen = {"host": "ddk-2003", "tag": "Ddk "}
values = {}
for v in dash["templating"]["list"]:
    name = v["name"]
    if v["type"] == "datasource":
        continue
    if v["type"] == "custom":
        values[name] = v["current"]["value"]
        check(f"${name} default among its options", True,
              values[name] in [o["value"] for o in v["options"]])
        continue
    q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
    m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q)
    check(f"${name} is a label_values() query", True, m is not None)
    if m is None:
        continue
    res = vm("/api/v1/label/%s/values" % m.group(2), {"match[]": m.group(1)})
    got = res.get("data") or []
    print(f"     ${name}: {len(got)} values from {q}")
    check(f"${name} lists {chosen[name]!r}", True, chosen[name] in got)
    values[name] = chosen[name]


def subst(expr):
    for k, val in values.items():
        expr = expr.replace("${%s}" % k, val).replace("$%s" % k, val)
    return expr


def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))


n = 0
now = time.time()
for p in panels(dash["panels"]):
    for t in p.get("targets", []):
        expr = subst(t["expr"])
        name = f"panel {p['id']} '{subst(p['title'])}' {t['refId']}"
        n += 1
        if "$" in expr:
            check(name + ": every variable substituted", "", expr)
            continue
        if t.get("instant"):
            res = vm("/api/v1/query", {"query": expr, "time": "%.3f" % now})
        else:
            res = vm("/api/v1/query_range",
                     {"query": expr, "start": "%.3f" % (now - 600), "end": "%.3f" % now, "step": "30"})
        if res.get("status") != "success":
            check(name + ": " + expr, "success", res.get("status") + " " + str(res.get("error")))
            continue
        k = len(res["data"]["result"])
        check(f"{name}: {expr} -> {k} series", True, k > 0)
print(f"     {n} expressions evaluated")
check("expressions in the dashboard", True, n >= 20)
sys.exit(fleet.exit_code())
