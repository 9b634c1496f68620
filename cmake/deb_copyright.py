#!/usr/bin/env python3
"""deb_copyright.py LICENSE HEADER OUT: writes the packages' machine-readable copyright file
(https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/) to OUT: HEADER's header
paragraph (deploy/debian/copyright.in), then one `Files: *` paragraph whose Copyright and
License text are LICENSE's, so the packages say what the repository's LICENSE says. Run by the
build (cmake/DebianPackages.cmake).
"""
import re
import sys

lic_path, header_path, out = sys.argv[1:4]
lines = open(lic_path, encoding="utf-8").read().rstrip("\n").split("\n")
if not lines or lines[0].strip() != "MIT License":
    sys.exit(f"deb_copyright.py: {lic_path}:1: expected 'MIT License', found {lines[:1]!r}")
holder = None
for i, line in enumerate(lines):
    m = re.fullmatch(r"Copyright \(c\) (.+)", line.strip())
    if m:
        holder, body = m.group(1), lines[i + 1 :]
        break
if holder is None:
    sys.exit(f"deb_copyright.py: {lic_path}: no 'Copyright (c) YEAR HOLDER' line")
while body and not body[0].strip():
    body.pop(0)
header = open(header_path, encoding="utf-8").read().rstrip("\n")
text = [header, "", "Files: *", f"Copyright: {holder}", "License: MIT"]
text += [" " + ln if ln.strip() else " ." for ln in body]
with open(out, "w", encoding="utf-8") as f:
    f.write("\n".join(text) + "\n")
