#!/usr/bin/env python3
"""deb_conffile.py IN OUT [SECTION.KEY=VALUE...] [note=TEXT]: writes the configuration file a
package installs (a conffile) from the example IN (deploy/config/*.conf.example, generated
from the option tables): each SECTION.KEY's line in that section, commented out or not,
becomes `KEY = VALUE`, and TEXT (" | " starts a new line) is added as comment lines after the
example's header.
Fails when an option is not in the example, so a renamed option cannot be dropped silently.
Run by the build (cmake/DebianPackages.cmake).
"""
import re
import sys

src, out, *args = sys.argv[1:]
note = "".join(a[len("note="):] for a in args if a.startswith("note="))
sets = [a for a in args if not a.startswith("note=")]
lines = open(src, encoding="utf-8").read().split("\n")
for item in sets:
    name, _, value = item.partition("=")
    section, _, key = name.partition(".")
    cur, hits = None, 0
    for i, line in enumerate(lines):
        m = re.fullmatch(r"\[([^\]]+)\]", line.strip())
        if m:
            cur = m.group(1)
        elif cur == section and re.fullmatch(r"#?\s*" + re.escape(key) + r"\s*=.*", line):
            lines[i] = f"{key} = {value}"
            hits += 1
    if hits != 1:
        sys.exit(f"deb_conffile.py: {src}: [{section}] {key}: found {hits} times, expected once")
if note:
    first = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    lines[first:first] = ["# " + part for part in note.split(" | ")]
with open(out, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
