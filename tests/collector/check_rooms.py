#!/usr/bin/env python3
"""check_rooms.py: the collector's rooms and the one direction of their dependencies.

Reads every #include "..." of collector/ and fails on
 - an include from a room into a room it may not depend on (the allowed graph is below, the
   only place it is written), or into a private header of another room (*_internal.h);
 - any cycle among the collector's files (a header including, through others, itself or the
   header of a .c file that includes it).
Usage: check_rooms.py SOURCE_DIR. Exit 0 when the tree keeps the rules, 1 with the offending
includes listed otherwise.
"""
import os
import re
import sys

# room -> the rooms its files may include (besides itself and common/, proto/)
ALLOWED = {
    "store": set(),
    "ingest": {"store"},
    "analysis": {"ingest", "store"},
    "export": {"analysis", "ingest", "store"},
    "api": {"export", "analysis", "ingest", "store"},
    "wiring": {"api", "export", "analysis", "ingest", "store"},
}


def room_of(rel):
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else "wiring"


def main(src):
    top = os.path.join(src, "collector")
    files = {}  # rel path -> includes (names)
    for d, _, names in os.walk(top):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.join(d, n)
                rel = os.path.relpath(p, top)
                with open(p, encoding="utf-8") as f:
                    files[rel] = re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    dup = [n for n, v in by_name.items() if len(v) > 1 and n.endswith(".h")]
    errors = ["header name used twice in collector/: %s (%s)" % (n, ", ".join(by_name[n]))
              for n in dup]
    edges = {}
    for rel, incs in files.items():
        r = room_of(rel)
        if r not in ALLOWED:
            errors.append("%s: room '%s' is not in the allowed graph" % (rel, r))
            continue
        edges[rel] = []
        for inc in incs:
            if inc not in by_name:
                continue  # common/, proto/, generated or system headers
            target = by_name[inc][0]
            tr = room_of(target)
            edges[rel].append(target)
            if tr != r and tr not in ALLOWED[r]:
                errors.append("%s (%s) includes %s (%s): %s may not depend on %s"
                              % (rel, r, target, tr, r, tr))
            if tr != r and inc.endswith("_internal.h"):
                errors.append("%s includes %s, private to %s/" % (rel, target, tr))
    # cycles at module level: a .c file, its header and its private header (X_internal.h)
    # are one node
    def node(rel):
        base = os.path.splitext(rel)[0]
        return base[: -len("_internal")] if base.endswith("_internal") else base
    graph = {}
    for rel, outs in edges.items():
        graph.setdefault(node(rel), set()).update(node(t) for t in outs if node(t) != node(rel))
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                errors.append("include cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    for e in errors:
        print("check_rooms: " + e)
    print("check_rooms: %d files, %d rooms, %d problems"
          % (len(files), len({room_of(r) for r in files}), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
