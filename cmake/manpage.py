#!/usr/bin/env python3
"""manpage.py daemon|cli BINARY OUT: writes BINARY's man page (roff, section 1) to OUT from
what the binary itself prints, so the page says what --help says:
  daemon  `BINARY --help` (synopsis, description) and `BINARY --print-example` (every option of
          the configuration file from the option table: section, name, default, type, range,
          description), plus the flags that pw_daemon_main handles (common/daemon.c);
  cli     `BINARY --help` (synopsis, the command list, connection options, times, exit codes)
          and `BINARY help COMMAND` for each command of that list.
The version comes from `BINARY --version`. Run by the build (cmake/DebianPackages.cmake).
"""
import re
import subprocess
import sys

mode, binary, out = sys.argv[1:4]


def run(*args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"manpage.py: {binary} {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def esc(text):
    """One line of text as roff: backslashes and hyphens escaped, no control character."""
    t = text.replace("\\", "\\e").replace("-", "\\-")
    if t.startswith((".", "'")):
        t = "\\&" + t
    return t


def para(lines):
    return "\n".join(esc(x) for x in lines if x.strip())


name = binary.rsplit("/", 1)[-1]
version = run("--version").split()[1]
help_text = run("--help")
page = []


def head(summary):
    page.append(f'.TH {name.upper()} 1 "" "poolwatch {version}" "poolwatch manual"')
    page.append(".SH NAME")
    page.append(f"{esc(name)} \\- {esc(summary)}")


def synopsis(usage_lines):
    page.append(".SH SYNOPSIS")
    page.append(".nf")
    for u in usage_lines:
        page.append(esc(re.sub(r"^(usage: |       )", "", u)))
    page.append(".fi")


blocks = help_text.rstrip("\n").split("\n\n")
usage = blocks[0].splitlines()

if mode == "daemon":
    desc = " ".join(blocks[1].split()) if len(blocks) > 1 else ""
    first = desc.split(". ")[0].rstrip(".")
    summary = first[0].lower() + first[1:] if first else name
    head(summary)
    synopsis(usage)
    page.append(".SH DESCRIPTION")
    page.append(para(blocks[1].splitlines()) if len(blocks) > 1 else "")
    for b in blocks[2:]:
        if b.startswith("Options ("):  # --help's list of options: CONFIGURATION below has them
            break
        page.append(".PP")
        page.append(para(b.splitlines()))
    page.append(".SH OPTIONS")
    for flag, text in (
        ("\\-\\-config \\fIFILE\\fR", "Read the configuration from FILE (INI)."),
        ("\\-\\-check\\-config", "Check the configuration (and open what it names: the source, "
         "the certificates), print the effective configuration and exit: 0 when it is good, "
         "2 when not."),
        ("\\-\\-print\\-example", "Print a configuration file with every option, its default "
         "and description (what the options below say) and exit."),
        ("\\-\\-version", "Print the version, the git commit and the TLS library and exit."),
        ("\\-\\-help", "Print the usage and every option of the configuration file (as "
         "--section.name=TYPE with its default and description) and exit."),
        ("\\-\\-\\fIsection.name\\fR=\\fIVALUE\\fR", "Any option of the configuration file; a "
         "flag overrides the file, a later flag an earlier one."),
    ):
        page += [".TP", f".B {flag}", esc(text) if not text.startswith("\\") else text]
    page.append(".SH CONFIGURATION")
    page.append(esc("The options of the configuration file by section, with their defaults "
                    "(from the option table, as --print-example writes them)."))
    section, comments = None, []
    for line in run("--print-example").splitlines():
        m = re.fullmatch(r"\[(.+)\]", line)
        if m:
            section, comments = m.group(1), []
            page.append(f".SS [{esc(section)}]")
            continue
        if section is None or not line.strip():
            comments = [] if section is not None else comments
            continue
        m = re.fullmatch(r"(#\s*)?([A-Za-z0-9_-]+) =\s*(.*)", line)
        if m:
            opt, default = m.group(2), m.group(3).strip()
            shown = f"default: {default}" if default else "no default"
            page += [".TP", f".B \\-\\-{esc(section)}.{esc(opt)}", f"({esc(shown)})"]
            text = [c.lstrip("#").strip() for c in comments]
            page.append(para(x for x in text if not x.startswith("Type: ")))
            page += [".br", para(x for x in text if x.startswith("Type: "))]
            comments = []
        elif line.startswith("#"):
            comments.append(line)
    page.append(".SH FILES")
    page += [".TP", f".I /etc/poolwatch/{esc(name.replace('poolwatch-', ''))}.conf",
             esc("The configuration file of the package's systemd unit.")]
elif mode == "cli":
    head("fleet-wide poolmon: remote pool tables, leaks and imports from a poolwatch collector")
    synopsis(usage)
    page.append(".SH DESCRIPTION")
    cmds = []
    for b in blocks[1:]:
        lines = b.splitlines()
        if lines[0].rstrip(":") == "Commands":
            for x in lines[1:]:
                m = re.match(r"  ([a-z]+)\b", x)
                if m and m.group(1) not in cmds:
                    cmds.append(m.group(1))
            continue
        page.append(".PP")
        page.append(para(lines))
    page.append(".SH COMMANDS")
    for c in cmds:
        text = run("help", c).splitlines()
        cu = [x for x in text if x.startswith(("usage: ", "       "))]
        rest = [x for x in text if x not in cu and not x.startswith("Global options:")]
        page.append(f".SS {esc(c)}")
        page.append(".nf")
        page += [esc(re.sub(r"^(usage: |       )", "", x)) for x in cu]
        page.append(".fi")
        page.append(para(rest))
    if not cmds:
        sys.exit("manpage.py: no command list in --help")
else:
    sys.exit("usage: manpage.py daemon|cli BINARY OUT")
page.append(".SH SEE ALSO")
others = [p for p in ("poolwatch", "poolwatch-agent", "poolwatch-collector") if p != name]
page.append(", ".join(f".BR {p} (1)".replace(".BR ", "\\fB").replace(" (1)", "\\fR(1)")
                      for p in others))
with open(out, "w") as f:
    f.write("\n".join(page) + "\n")
