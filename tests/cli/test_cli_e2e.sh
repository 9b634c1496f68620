#!/bin/sh
# test_cli_e2e.sh POOLWATCH COLLECTOR SOURCE_DIR: the CLI against a real poolwatch-collector on
# loopback (HTTPS with a throw-away PKI from deploy/pki.sh, bearer tokens from a tokens file):
# import of a saved capture, then every listing, top --once, lookup, and the exit codes for
# auth refusals, unknown hosts and an untrusted server certificate.
set -u
PW=$1
COLL=$2
SRC=$3
FX=$SRC/tests/fixtures
# shellcheck source=../check.sh
. "$SRC/tests/check.sh"
dir=$(mktemp -d /tmp/pw-cli-e2e-XXXXXX)
cpid=
cleanup() {
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$dir"; [ -n "${KEEP:-}" ] && echo "kept $dir"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

"$SRC/deploy/pki.sh" "$dir/pki" >/dev/null 2>&1 || { echo "pki.sh failed"; exit 1; }
"$SRC/deploy/pki.sh" "$dir/otherca" >/dev/null 2>&1 || { echo "pki.sh failed"; exit 1; }
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '%s read reader\n%s admin admin\n' "$(sha readtok-123)" "$(sha admintok-456)" >"$dir/tokens"
chmod 600 "$dir/tokens"
AP=$(free_port)
HP=$(free_port)
start_collector() { # (again) on the same store and ports
    "$COLL" --agents.listen=127.0.0.1:$AP --store.path="$dir/pw.db" \
        --agents.ca_file="$dir/pki/ca.pem" --agents.cert_file="$dir/pki/collector.pem" \
        --agents.key_file="$dir/pki/collector.key" --http.listen=127.0.0.1:$HP \
        --http.tokens_file="$dir/tokens" --analysis.pooltag_file="$FX/http/pooltag_small.txt" \
        >>"$dir/collector.log" 2>&1 &
    cpid=$!
    i=0
    until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$HP),0.2)" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$cpid" 2>/dev/null; then
            echo "collector did not start:"; cat "$dir/collector.log"; exit 1
        fi
        sleep 0.1
    done
}
start_collector

export POOLWATCH_URL=https://127.0.0.1:$HP POOLWATCH_CA=$dir/pki/ca.pem
ADMIN=admintok-456
READ=readtok-123

# import: two screens of tests/fixtures/http/import_two_screens.txt, 10 minutes apart
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host OLD01 \
    --interval 10m --start 2024-03-14T10:00:00Z >"$dir/out" 2>"$dir/err"
check "import exit" 0 $?
check "import stored" 1 "$(grep -c 'server stored 2 screens' "$dir/out")"
# no limit given: what gives the host one is said
check "import without a limit: hint" \
    "$FX/http/import_two_screens.txt: note: limit unknown: give --os or --nonpaged-limit (the host has no level and no ETA until its nonpaged pool has a limit)" \
    "$(cat "$dir/err")"
# a pool far above the limit given (Pool N 4100K of 2 MB: 100 % above; paged 8192K under the
# /3GB rule's 530 MB): the rule may not fit this host
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host OVER01 \
    --os "Windows Server 2003 x86 /3GB" --nonpaged-limit 2MB >"$dir/out" 2>"$dir/err"
check "import over its limit exit" 0 $?
check "import over its limit: hint" \
    "$FX/http/import_two_screens.txt: warning: the capture's nonpaged pool, 4.0 MiB at its last screen, is 100 % above its limit 2.0 MiB (configured: 2 MB): a pool cannot grow past its limit, so the limit rule may not fit this host (check --os, or give --nonpaged-limit)" \
    "$(cat "$dir/err")"
POOLWATCH_TOKEN=$ADMIN "$PW" host rm OVER01 >/dev/null 2>&1 # the listings below count hosts
check "OVER01 removed" 0 $?
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host START01 \
    --start 'yesterday' >"$dir/out" 2>"$dir/err"
check "bad --start exit" 2 $?
check "bad --start lists the forms" \
    "poolwatch import: bad --start 'yesterday' (a time: now, -2h for two hours ago, 2024-03-14T10:00:00Z or 2024-03-14 10:00:00 (UTC), or ms since the epoch)" \
    "$(cat "$dir/err")"

POOLWATCH_TOKEN=$READ "$PW" hosts >"$dir/out" 2>"$dir/err"
check "hosts exit" 0 $?
check "hosts lists OLD01" 1 "$(grep -c '^OLD01 ' "$dir/out")"
# An imported capture has no pool limit: "-" in NP LIMIT (columns 62-72), its SOURCE (74-83)
# and NP% (85-90), as in NP ETA, level unknown; never "0 B" / "0.0%". CONN (36-47) says it is
# imported (the API's connection), not just "no".
check "hosts OLD01 limit unknown" "- - - unknown" \
    "$(grep '^OLD01 ' "$dir/out" | cut -c62-72,73-83,84-90,91-100 | tr -s ' ' | sed 's/^ //; s/ $//')"
check "hosts OLD01 imported" "imported" "$(grep '^OLD01 ' "$dir/out" | cut -c37-48 | tr -d ' ')"
check "hosts no 0.0%" 0 "$(grep -c '0\.0%' "$dir/out")"
POOLWATCH_TOKEN=$READ "$PW" --json --compact hosts >"$dir/out"
check "hosts --json" 0 "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(0 if any(h["name"]=="OLD01" for h in d["hosts"]) else 1)' "$dir/out")"
check "hosts --json OLD01 limit and ratio null" "None None None None" \
    "$(python3 -c 'import json,sys; h=[h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]=="OLD01"][0]; print(*(h[k] for k in ("nonpaged_limit_bytes","nonpaged_ratio","paged_limit_bytes","paged_ratio")))' "$dir/out")"
samples() { # HOST: the API's sample count of the host (an import's: the screens it stored)
    POOLWATCH_TOKEN=$READ "$PW" --json hosts >"$dir/samples.json" 2>/dev/null
    python3 -c 'import json,sys; print([h["samples"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]==sys.argv[2]])' "$dir/samples.json" "$1"
}
# the dashboard's host page showed "0 samples" for an imported host: its 2 screens are samples
check "an imported host's samples are its screens" "[2]" "$(samples OLD01)"

# top --once: the second screen (Abcd Nonp 150/50/100/10000, change +50/+10/+40/+4000)
POOLWATCH_TOKEN=$READ "$PW" top OLD01 --once >"$dir/out" 2>"$dir/err"
check "top exit" 0 $?
# (changes are the server's to compute; an imported history may have none: any value passes)
# the changes since the first screen, as the capture's second screen shows them (150 - 100, 50 -
# 40, 100 - 60, 10000 - 6000): an imported host's last step is known (they read 0 before)
check "top Abcd row" 1 "$(grep -cF ' Abcd Nonp         150 (   50)         50 (   10)       100 (   40)       10000 (   4000)       100' "$dir/out")"
check "top sorted by bytes" "Abcd Wxyz" "$(awk '/^ (Abcd|Wxyz) /{printf "%s%s", s, $1; s=" "}' "$dir/out")"
check "top memory" 1 "$(grep -c '^ Memory:  1048576K Avail:   524288K' "$dir/out")"
# the Limit line (GET /api/v1/hosts/OLD01): an import without --nonpaged-limit/--os has none
check "top limit line" 1 "$(grep -cE '^ Limit N: [0-9.]+ [KMG]?i?B, limit unknown  P: [0-9.]+ [KMG]?i?B, limit unknown  ETA: - \(no pool grows towards a known limit\)$' "$dir/out")"
# top --once --json: one snapshot, the API's pool table itself (the same document as a GET of
# /api/v1/hosts/OLD01/pool with top's default view), not the text screen
POOLWATCH_TOKEN=$READ "$PW" top OLD01 --once --json >"$dir/out" 2>"$dir/err"
check "top --once --json exit" 0 $?
curl -s --cacert "$dir/pki/ca.pem" -H "Authorization: Bearer $READ" \
    "https://127.0.0.1:$HP/api/v1/hosts/OLD01/pool?sort=bytes&by_change=0&order=desc&pool=both" >"$dir/pool.json"
check "top --once --json is the API's pool table" same "$(python3 -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("same" if a == b and a["host"] == "OLD01" and any(r["tag"] == "Abcd" and r["bytes"] == 10000 for r in a["rows"]) else "differ")' "$dir/out" "$dir/pool.json" 2>&1)"
POOLWATCH_TOKEN=$READ "$PW" --json --compact top OLD01 >"$dir/out" 2>"$dir/err"
check "top --json without --once: one line of JSON" "1 ok" \
    "$(wc -l <"$dir/out" | tr -d ' ') $(python3 -c 'import json,sys; json.load(open(sys.argv[1])); print("ok")' "$dir/out" 2>&1)"

POOLWATCH_TOKEN=$READ "$PW" series OLD01 'Abcd' --pool nonpaged --from 2024-03-14T09:00:00Z --to 2024-03-14T11:00:00Z >"$dir/out" 2>"$dir/err"
check "series exit" 0 $?
check "series points" 1 "$(grep -c '^2024-03-14 10:10:00Z .* 10000 ' "$dir/out")"
cat "$dir/err"
# a tag the host never had is not found (exit 3, as docs/cli.md says), not an empty series
POOLWATCH_TOKEN=$READ "$PW" series OLD01 NOPE >"$dir/out" 2>"$dir/err"
check "series of an unknown tag -> 3" 3 $?
check "series of an unknown tag says so" \
    "poolwatch: GET /api/v1/hosts/OLD01/series?tag=NOPE: HTTP 404 ENOENT: host 'OLD01' has no tag 'NOPE' in any pool, now or in its history (tags are case-sensitive)" \
    "$(cat "$dir/err")"
# a known tag with nothing in the pool asked: an empty answer that says where to look
POOLWATCH_TOKEN=$READ "$PW" series OLD01 Abcd --pool paged >"$dir/out" 2>"$dir/err"
check "series of a known tag in another pool exit" 0 $?
check "series of a known tag in another pool says so" 1 "$(grep -c '^(nothing in the paged pool in that time' "$dir/out")"

# series on a terminal: 30 screens 10 min apart (tag Long: diff 60 + 10k of 100 B, k = 0..29) do
# not fit a 12-row terminal (8 points): one per hour, the last screen of each (k = 5, 11, 17,
# 23, 29: 11000, 17000, 23000, 29000, 35000 B); to a pipe, or with --step 0, every sample.
python3 -c '
for k in range(30):
    a, d = 100 + 10 * k, 60 + 10 * k
    print(" Memory: 1048576K Avail:  524288K  PageFlts:     0   InRam Krnl: 1024K P: 2048K")
    print(" Commit: 262144K Limit: 1048576K Peak: 300000K            Pool N: 4096K P: 8192K")
    print(" Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n")
    print(" Long Nonp %10d (   0) %9d (   0) %8d %8d (     0)    100\n" % (a, 40, d, d * 100))
' >"$dir/thirty.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/thirty.txt" --host LONG01 --interval 10m \
    --start 2024-03-15T00:00:00Z >"$dir/out" 2>"$dir/err"
check "import 30 screens" 1 "$(grep -c 'server stored 30 screens' "$dir/out")"
POOLWATCH_TOKEN=$READ "$PW" series LONG01 Long >"$dir/out" 2>"$dir/err"
check "series to a pipe: every sample" 30 "$(grep -c '^2024-03-15 ' "$dir/out")"
POOLWATCH_TOKEN=$READ LINES=12 script -qec "'$PW' series LONG01 Long" /dev/null </dev/null >"$dir/tty" 2>&1
check "series on a terminal: hourly points" "11000 17000 23000 29000 35000" \
    "$(tr -d '\r' <"$dir/tty" | awk '/^2024-03-15 /{printf "%s%s", s, $3; s=" "}')"
check "series on a terminal: says so" 1 "$(grep -c '^(30 samples in that time, more than this terminal shows: one point per 1h, the last sample of each; --step 0 prints every sample)' "$dir/tty")"
POOLWATCH_TOKEN=$READ LINES=12 script -qec "'$PW' series LONG01 Long --step 0" /dev/null </dev/null >"$dir/tty" 2>&1
check "series on a terminal, --step 0: every sample" 30 "$(grep -c '^2024-03-15 ' "$dir/tty")"

# File order is time order. Screens of two tags, Snap (allocs 100 + 10k, frees 40 + k: diff
# 60 + 9k of 100 B) and Wxyz (allocs 10 + k, frees 5 + k), k = 1..11, one a file, given as a
# shell glob sorts them (poolsnap1, poolsnap10, poolsnap11, poolsnap2, ...): counters fall
# between poolsnap11 and poolsnap2 for both tags, the names' order makes them grow: taken, and
# said. Then two files whose names' order does not help (hi before lo): a warning naming them;
# and one file whose screen 2 counts below its screen 1: FILE:LINE warning. (A limit is given:
# without one, "limit unknown" is said once, after the last file.)
mkdir "$dir/snaps"
snap() { # K...: screens k to stdout (7 lines each)
    python3 -c '
import sys
for k in map(int, sys.argv[1:]):
    a, f, wa, wf = 100 + 10 * k, 40 + k, 10 + k, 5 + k
    print(" Memory: 1048576K Avail:  524288K  PageFlts:     0   InRam Krnl: 1024K P: 2048K")
    print(" Commit: 262144K Limit: 1048576K Peak: 300000K            Pool N: 4096K P: 8192K")
    print(" Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n")
    print(" Snap Nonp %10d (   0) %9d (   0) %8d %8d (     0)    100" % (a, f, a - f, (a - f) * 100))
    print(" Wxyz Paged %9d (   0) %9d (   0) %8d %8d (     0)    100\n" % (wa, wf, wa - wf, (wa - wf) * 100))
' "$@"
}
S=$dir/snaps
for k in 1 2 3 4 5 6 7 8 9 10 11; do snap $k >"$S/poolsnap$k.txt"; done
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/poolsnap1.txt" "$S/poolsnap10.txt" "$S/poolsnap11.txt" \
    "$S/poolsnap2.txt" "$S/poolsnap3.txt" "$S/poolsnap4.txt" "$S/poolsnap5.txt" \
    "$S/poolsnap6.txt" "$S/poolsnap7.txt" "$S/poolsnap8.txt" "$S/poolsnap9.txt" --host SNAP01 \
    --start 2024-03-16T00:00:00Z --nonpaged-limit 64MB >"$dir/out" 2>"$dir/err"
check "glob-ordered files: import exit" 0 $?
check "glob-ordered files: ordered by name, said" \
    "poolwatch import: ordered by name: $S/poolsnap2.txt before $S/poolsnap10.txt (in the order given, counters fall between $S/poolsnap11.txt and $S/poolsnap2.txt for 2 of 2 tags)" \
    "$(cat "$dir/err")"
POOLWATCH_TOKEN=$READ "$PW" series SNAP01 Snap >"$dir/out" 2>"$dir/err"
check "glob-ordered files: stored in the names' order, 15 min apart" \
    "00:00:00Z 6900 00:15:00Z 7800 00:30:00Z 8700 00:45:00Z 9600 01:00:00Z 10500 01:15:00Z 11400 01:30:00Z 12300 01:45:00Z 13200 02:00:00Z 14100 02:15:00Z 15000 02:30:00Z 15900" \
    "$(awk '/^2024-03-16 /{printf "%s%s %s", s, $2, $3; s=" "}' "$dir/out")"
snap 11 >"$S/hi.txt"
snap 1 >"$S/lo.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/hi.txt" "$S/lo.txt" --host SNAP02 \
    --start 2024-03-16T00:00:00Z --nonpaged-limit 64MB >"$dir/out" 2>"$dir/err"
check "falling files: imported" 0 $?
check "falling files: warned, naming both" \
    "poolwatch import: warning: counters fall between $S/hi.txt and $S/lo.txt for 2 of 2 tags: out of order, or a reboot?" \
    "$(cat "$dir/err")"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/poolsnap1.txt" "$S/poolsnap2.txt" --host SNAP04 \
    --start 2024-03-16T00:00:00Z >"$dir/out" 2>"$dir/err"
check "two files without a limit: limit unknown said once, after the last" \
    "$S/poolsnap2.txt: note: limit unknown: give --os or --nonpaged-limit (the host has no level and no ETA until its nonpaged pool has a limit)" \
    "$(cat "$dir/err")"
# a reboot among one-screen files (r7..r12 count from the start again): the glob's order falls
# twice (r12 to r2, r6 to r7), the names' once: taken, and the reboot's fall said
mkdir "$S/reb"
for k in 1 2 3 4 5 6; do snap $k >"$S/reb/r$k.txt"; snap $k >"$S/reb/r$((k + 6)).txt"; done
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/reb/r1.txt" "$S/reb/r10.txt" "$S/reb/r11.txt" \
    "$S/reb/r12.txt" "$S/reb/r2.txt" "$S/reb/r3.txt" "$S/reb/r4.txt" "$S/reb/r5.txt" \
    "$S/reb/r6.txt" "$S/reb/r7.txt" "$S/reb/r8.txt" "$S/reb/r9.txt" --host SNAP05 \
    --start 2024-03-16T00:00:00Z --nonpaged-limit 64MB >"$dir/out" 2>"$dir/err"
check "a reboot among the files: ordered by name, the reboot said" \
    "poolwatch import: ordered by name: $S/reb/r2.txt before $S/reb/r10.txt (in the order given, counters fall between $S/reb/r12.txt and $S/reb/r2.txt for 2 of 2 tags)|poolwatch import: warning: counters fall between $S/reb/r6.txt and $S/reb/r7.txt for 2 of 2 tags: out of order, or a reboot?|" \
    "$(tr '\n' '|' <"$dir/err")"
snap 5 1 2 >"$S/back.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/back.txt" --host SNAP03 --start 2024-03-16T00:00:00Z \
    --nonpaged-limit 64MB >"$dir/out" 2>"$dir/err"
check "falling screens of one file: imported" 0 $?
check "falling screens of one file: FILE:LINE warning" \
    "$S/back.txt:8: warning: counters fall between screen 1 (line 1) and screen 2 for 2 of 2 tags: out of order, or a reboot?" \
    "$(cat "$dir/err")"

# A capture poolmon grew (its log): imported at noon with 2 screens, in the evening with 4, then
# the 4 with CRLF line ends and in UTF-16 (Notepad's "Unicode"), these without --start (the
# CLI's "ends now", not the first import's start): the capture is its first screen, so the host
# has 4 screens, 15 min apart from the first import's start, nothing stored twice.
snap 1 2 >"$S/grow2.txt"
snap 1 2 3 4 >"$S/grow4.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/grow2.txt" --host GROW01 --start 2024-03-17T00:00:00Z \
    >"$dir/out" 2>"$dir/err"
check "grown capture: first import" 1 "$(grep -c 'server stored 2 screens' "$dir/out")"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/grow4.txt" --host GROW01 >"$dir/out" 2>"$dir/err"
check "grown capture: the 2 new screens stored after the 2 known" 1 \
    "$(grep -c "^$S/grow4.txt: already imported into GROW01: 2 screens of this capture were stored by an earlier import of the same capture (its first screen; the start time does not make it new); 2 screens new, stored after them (the last at " "$dir/out")"
python3 -c 'import sys; t=open(sys.argv[1]).read(); open(sys.argv[2],"w",newline="").write(t.replace("\n","\r\n")); open(sys.argv[3],"wb").write(t.encode("utf-16"))' \
    "$S/grow4.txt" "$S/grow4crlf.txt" "$S/grow4utf16.txt"
for f in grow4crlf grow4utf16; do
    POOLWATCH_TOKEN=$ADMIN "$PW" import "$S/$f.txt" --host GROW01 >"$dir/out" 2>"$dir/err"
    check "grown capture: $f is the same capture" 1 \
        "$(grep -c "^$S/$f.txt: already imported into GROW01: 4 screens of this capture were stored by an earlier import of the same capture (its first screen; the start time does not make it new); nothing stored again$" "$dir/out")"
done
POOLWATCH_TOKEN=$READ "$PW" series GROW01 Snap --from 2024-03-16T00:00:00Z \
    --to 2024-03-18T00:00:00Z >"$dir/out" 2>"$dir/err"
check "grown capture: 4 points, 15 min apart from the first import's start" \
    "2024-03-17 00:00:00Z 6900 2024-03-17 00:15:00Z 7800 2024-03-17 00:30:00Z 8700 2024-03-17 00:45:00Z 9600" \
    "$(awk '/^2024-/{printf "%s%s %s %s", s, $1, $2, $3; s=" "}' "$dir/out")"

# a capture of poolmon headers without a table (saved before poolmon drew its rows) is no
# host: refused with FILE:LINE (line 1, where its screen starts), nothing stored; the API
# refuses it too; a capture where one screen of two is header-only is imported with a warning
# naming that screen's line (1)
printf ' Memory: 1048576K Avail:  524288K  PageFlts:     0   InRam Krnl: 1024K P: 2048K\n Commit: 262144K Limit: 1048576K Peak: 300000K            Pool N: 4096K P: 8192K\n Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n\n' >"$dir/header.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/header.txt" --host HDR01 >"$dir/out" 2>"$dir/err"
check "header-only capture refused (usage)" 2 $?
check "header-only capture: file and line named" \
    "$dir/header.txt:1: no pool tag rows: the capture's screen has a header only (saved before poolmon drew its table, or the rows were cut away): nothing to import" \
    "$(cat "$dir/err")"
curl -s --cacert "$dir/pki/ca.pem" -H "Authorization: Bearer $ADMIN" --data-binary @"$dir/header.txt" \
    "https://127.0.0.1:$HP/api/v1/import?host=HDR01" >"$dir/out"
check "header-only capture refused by the API" "EINVAL no pool tag rows: line 1" \
    "$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; print(e["code"], e["message"].split(":")[0] + ":" + e["message"].split(":")[1])' "$dir/out" 2>&1)"
POOLWATCH_TOKEN=$READ "$PW" --json hosts >"$dir/out"
check "no host HDR01" 0 "$(grep -c '"HDR01"' "$dir/out")"
{ cat "$dir/header.txt"; head -n 6 "$dir/thirty.txt"; } >"$dir/half.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/half.txt" --host HDR02 >"$dir/out" 2>"$dir/err"
check "one header-only screen of two: imported" 0 $?
check "one header-only screen of two: warned with its line" 1 \
    "$(grep -c "^$dir/half.txt:1: warning: screen 1 of 2 has a header but no rows: it is imported as a table with no tag in it$" "$dir/err")"

# a capture whose last screen was cut short (the new-user trial: 1 of 2 rows became the host's
# table, nothing said): left out with a warning that says why, by the CLI and the server
python3 -c '
for k in range(3):
    print(" Memory: 1048576K Avail:  524288K  PageFlts:     0   InRam Krnl: 1024K P: 2048K")
    print(" Commit: 262144K Limit: 1048576K Peak: 300000K            Pool N: 4096K P: 8192K")
    print(" Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n")
    print(" Part Nonp %10d (   0) %9d (   0) %8d %8d (     0)    100" % (100 + k, 40, 60 + k, 6000 + 100 * k))
    if k < 2:
        print(" Twoo Nonp        100 (   0)        40 (   0)       60     6000 (     0)    100")
    print()
' >"$dir/partial.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/partial.txt" --host PART01 >"$dir/out" 2>"$dir/err"
check "partial last screen: imported" 0 $?
check "partial last screen: warned, with what is done and why" 1 \
    "$(grep -c "^$dir/partial.txt:15: warning: the last screen has 1 row where the screen before it has 2: the file ends inside it (saved while poolmon was writing, or cut short); it is left out, since the 1 tag missing from it would read as freed and it would become the host's table; the 2 screens before it are imported$" "$dir/err")"
check "partial last screen: 2 screens stored" 1 "$(grep -c 'server stored 2 screens' "$dir/out")"
# the same file cut inside that last row too: the two warnings agree (the cut-row one said "the
# rest is imported" while the next said the screen is left out)
python3 -c '
for k in range(3):
    print(" Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc")
    for t in ("Part", "Twoo", "Thre"):
        print(" %s Nonp %10d (   0) %9d (   0) %8d %8d (     0)    100" % (t, 100 + k, 40, 60 + k, 6000 + 100 * k))
' | head -c -50 >"$dir/partcut.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/partcut.txt" --host PART02 >"$dir/out" 2>"$dir/err"
check "cut row in a cut last screen: imported" 0 $?
check "cut row in a cut last screen: one story" \
    "$dir/partcut.txt:12: warning: the last line is cut inside a row (file truncated?): left out, and so is the screen it ends (below)|$dir/partcut.txt:9: warning: the last screen has 2 rows where the screen before it has 3: the file ends inside it (saved while poolmon was writing, or cut short); it is left out, since the 1 tag missing from it would read as freed and it would become the host's table; the 2 screens before it are imported|" \
    "$(grep -v 'limit unknown' "$dir/err" | tr '\n' '|')"
POOLWATCH_TOKEN=$READ "$PW" top PART01 --once >"$dir/out" 2>"$dir/err"
check "partial last screen: the host's table has both tags" 2 "$(grep -cE '^ (Part|Twoo) ' "$dir/out")"

for cmd in "tags" "tags --fleet" "leaks"; do
    # shellcheck disable=SC2086
    POOLWATCH_TOKEN=$READ "$PW" $cmd >"$dir/out" 2>"$dir/err"
    check "$cmd exit" 0 $?
    # shellcheck disable=SC2086
    POOLWATCH_TOKEN=$READ "$PW" --json $cmd >"$dir/out" 2>"$dir/err"
    check "$cmd --json parses" 0 "$(python3 -c 'import json,sys; json.load(open(sys.argv[1])); print(0)' "$dir/out" 2>&1)"
done

# tags TAG --type: OLD02 holds Abcd in both pools (paged 700 bytes, nonpaged 300): only the
# asked pool's rows, under that pool's header
cat >"$dir/both.txt" <<'EOF'
 Memory: 1048576K Avail:  524288K  PageFlts:     0   InRam Krnl: 1024K P: 2048K
 Commit: 262144K Limit: 1048576K Peak: 300000K            Pool N: 4096K P: 8192K
 Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc

 Abcd Paged       10 (   0)         3 (   0)        7      700 (     0)    100
 Abcd Nonp         5 (   0)         2 (   0)        3      300 (     0)    100
EOF
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/both.txt" --host OLD02 --start 2024-03-14T10:00:00Z \
    >/dev/null 2>"$dir/err"
check "import OLD02 exit" 0 $?
POOLWATCH_TOKEN=$READ "$PW" tags Abcd --type nonpaged >"$dir/out" 2>"$dir/err"
check "tags Abcd --type nonpaged exit" 0 $?
check "tags --type header" 1 "$(grep -c '^Tag "Abcd" nonpaged: .* on 2 hosts' "$dir/out")"
check "tags --type nonpaged rows" "OLD01 nonpaged OLD02 nonpaged" \
    "$(awk '/^OLD0/{printf "%s%s %s", s, $1, $2; s=" "}' "$dir/out")"
POOLWATCH_TOKEN=$READ "$PW" tags Abcd --type paged >"$dir/out" 2>"$dir/err"
check "tags --type paged header" 1 "$(grep -c '^Tag "Abcd" paged: .* on 1 host;' "$dir/out")"
check "tags --type paged rows" "OLD02 paged" \
    "$(awk '/^OLD0/{printf "%s%s %s", s, $1, $2; s=" "}' "$dir/out")"

# A Linux host's saved series (a shell loop's log of 12 slabinfo + allocinfo dumps, a prompt
# line after each) and a support bundle's directory (sosreport: proc/slabinfo, proc/allocinfo,
# the time of its `date -u` run)
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/linux_series/slab_loop_12x15min_dentry_leak.txt" \
    --host LNX01 >"$dir/out" 2>"$dir/err"
check "import linux exit" 0 $?
check "import linux stored" 1 "$(grep -c ': 12 points (server stored 12 points, 120 rows) as LNX01' "$dir/out")"
check "import linux skipped lines said" 1 \
    "$(grep -c 'dentry_leak.txt:17: note: 12 line(s) between the dumps' "$dir/err")"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/sosreport/sosreport-HOST01-2026-11-30" --host SOS01 \
    --json >"$dir/out" 2>"$dir/err"
check "import bundle exit" 0 $?
check "import bundle" "linux 1 7 1796076000000" "$(python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["imports"][0]; print(i["format"], i["screens"], i["rows"], i["first_ts_ms"])' "$dir/out")"

POOLWATCH_TOKEN=$READ "$PW" lookup 'Io' >"$dir/out" 2>"$dir/err"
check "lookup exit" 0 $?
check "lookup description" 1 "$(grep -c 'general IO allocations' "$dir/out")"
# the tag as every listing shows it: 4 bytes, "Io" padded with spaces (it printed "Io")
check "lookup shows the 4-byte tag" 'Tag "Io  ": listed in pooltag.txt' "$(head -n 1 "$dir/out")"
# an imported host has no agent: lookup --host answers from pooltag.txt and says so (it gave
# "HTTP 503 not connected" and dropped the pooltag line)
POOLWATCH_TOKEN=$ADMIN "$PW" lookup 'Io' --host OLD01 >"$dir/out" 2>"$dir/err"
check "lookup --host imported exit" 0 $?
check "lookup --host imported" 'Tag "Io  ": listed in pooltag.txt|  driver:      nt!io|  description: general IO allocations|Host: imported (a saved capture, no agent): no live driver lookup; the driver above is pooltag.txt'"'"'s|' \
    "$(tr '\n' '|' <"$dir/out")$(cat "$dir/err")"

# rows that cannot be read mid-capture (tests/fixtures/SOURCES.md): each said with FILE:LINE,
# its screen left out (a gap), the other 92 of 96 stored
BAD=$FX/poolmon/variant_case02_96_screens_bad_rows.txt
POOLWATCH_TOKEN=$ADMIN "$PW" import "$BAD" --host ROWS01 >"$dir/out" 2>"$dir/err"
check "bad rows: imported" 0 $?
check "bad rows: stored" 1 "$(grep -c "^$BAD: 96 screens (server stored 92 screens, 644 rows) as ROWS01" "$dir/out")"
check "bad rows: the typo said with its line" 1 \
    "$(grep -c "^$BAD:953: warning: unexpected character after the number in column bytes: screen 80 of 96 is incomplete: it is left out (a gap, not a tag read as freed)$" "$dir/err")"
check "bad rows: the lost header said" 1 \
    "$(grep -c "^$BAD:722: warning: tag 'Wait' Nonp again in one screen (first at line 715): a screen's header was lost; a new screen starts here: screen 61 of 96" "$dir/err")"
check "bad rows: 4 warnings" 4 "$(grep -c ': warning: ' "$dir/err")"
check "bad rows: the gap said" 1 \
    "$(grep -c "^$BAD: 4 screens left out, a gap in the history (rows that cannot be read: the warnings above): lines 229, 470, 722, 945$" "$dir/err")"

# exit codes: every HTTP status the API documents (docs/openapi.json) is in docs/cli.md's table
# of exit codes (5xx as a class), so a script knows what each refusal exits with
check "every API status has a documented exit code" "" "$(python3 -c '
import json, re, sys
api = json.load(open(sys.argv[1]))
codes = {c for ops in api["paths"].values() for op in ops.values() if isinstance(op, dict)
         for c in op.get("responses", {}) if c[0] in "45"}
md = open(sys.argv[2]).read()
table = md[md.index("## Exit codes"):md.index("## Commands")]
print(" ".join(sorted(c for c in codes if c not in table and not (c[0] == "5" and "5xx" in table))))' \
    "$SRC/docs/openapi.json" "$SRC/docs/cli.md")"
POOLWATCH_TOKEN=wrong "$PW" hosts >/dev/null 2>&1
check "unknown token -> 4" 4 $?
"$PW" hosts >/dev/null 2>&1
check "no token -> 4" 4 $?
POOLWATCH_TOKEN=$READ "$PW" import "$FX/http/import_two_screens.txt" --host X >/dev/null 2>&1
check "read token on import -> 4" 4 $?
POOLWATCH_TOKEN=$READ "$PW" top NOSUCHHOST --once >/dev/null 2>"$dir/err"
check "unknown host -> 3" 3 $?
check "top: unknown host names the code and the path" \
    "poolwatch top: GET /api/v1/hosts/NOSUCHHOST/pool?sort=bytes&by_change=0&order=desc&pool=both: HTTP 404 ENOENT: unknown host 'NOSUCHHOST'" \
    "$(cat "$dir/err")"
POOLWATCH_TOKEN=$READ "$PW" --ca "$dir/otherca/ca.pem" hosts >/dev/null 2>"$dir/err"
check "untrusted server -> 1" 1 $?
check "untrusted server says why and names --ca" \
    "poolwatch: server certificate of 127.0.0.1 not accepted: self-signed certificate in certificate chain (checked against the CA file $dir/otherca/ca.pem; give the CA file that signed it with --ca FILE or POOLWATCH_CA)" \
    "$(cat "$dir/err")"
# POOLWATCH_CA set empty means the system store (which does not know the demo CA), and says so
POOLWATCH_CA= POOLWATCH_TOKEN=$READ "$PW" hosts >/dev/null 2>"$dir/err"
check "empty POOLWATCH_CA -> system store -> 1" 1 $?
check "empty POOLWATCH_CA: checked against the system store" 1 \
    "$(grep -c "(checked against the system's CA store; give the CA file that signed it with --ca FILE or POOLWATCH_CA)" "$dir/err")"
POOLWATCH_TOKEN=$READ "$PW" --ca "$dir/nonexistent.pem" hosts >/dev/null 2>"$dir/err"
check "missing CA file says why" 1 \
    "$(grep -c "cannot load CA file $dir/nonexistent.pem: No such file or directory" "$dir/err")"
POOLWATCH_TOKEN=$READ "$PW" --url "https://localhost:$HP" hosts >/dev/null 2>&1
check "DNS name in SAN accepted" 0 $?

# top in a terminal (tmux on a private socket): keys P (nonpaged), I (include prompt), E, Q.
# After each key the screen is polled until it shows the key's effect (10 s at most).
if command -v tmux >/dev/null 2>&1; then
    T="tmux -L pw-cli-e2e-$$"
    # screen_has PATTERN: the pane shows a line matching the grep pattern (saved in $dir/screen)
    screen_has() { $T capture-pane -t top -p >"$dir/screen" 2>/dev/null && grep -q "$1" "$dir/screen"; }
    # screen_has_both A B: both patterns on the screen
    screen_has_both() { screen_has "$1" && grep -q "$2" "$dir/screen"; }
    $T new-session -d -s top -x 120 -y 30 \
        "env POOLWATCH_URL=$POOLWATCH_URL POOLWATCH_CA=$POOLWATCH_CA POOLWATCH_TOKEN=$ADMIN $PW top OLD01; sleep 5"
    wait_for "top's table and status line" 10 screen_has_both '^ Tag  Type' 'agent not connected'
    $T capture-pane -t top -p >"$dir/screen1"
    check "tmux top header" 1 "$(grep -c '^ Tag  Type      Allocs (     )' "$dir/screen1")"
    # admin token, but no agent connected for an imported host: the status line says so
    check "tmux top live note" 1 "$(grep -c 'agent not connected' "$dir/screen1")"
    $T send-keys -t top p
    wait_for "'Pool: nonpaged' after key p" 10 screen_has 'Pool: nonpaged'
    $T send-keys -t top i
    wait_for "the include prompt after key i" 10 screen_has '^Include tags'
    $T send-keys -t top 'Ab*' Enter
    wait_for "'Include: Ab*' after the prompt" 10 screen_has 'Include: Ab\*'
    $T send-keys -t top e
    wait_for "the Sum row after key e" 10 screen_has '^ Sum '
    $T capture-pane -t top -p >"$dir/screen2"
    check "tmux top status" 1 "$(grep -c '^ Sort: Bytes (desc)  Pool: nonpaged  Include: Ab\*  Exclude: -' "$dir/screen2")"
    check "tmux top rows" "Sum Abcd" "$(awk '/^ (Sum|Abcd|Wxyz) /{printf "%s%s", s, $1; s=" "}' "$dir/screen2")"
    $T send-keys -t top q
    screen_gone() { ! screen_has '^ Tag  Type'; }
    wait_for "top to quit after key q (table gone)" 10 screen_gone
    $T capture-pane -t top -p >"$dir/screen3"
    check "tmux top quits" 0 "$(grep -c '^ Tag  Type' "$dir/screen3")"
    $T kill-server 2>/dev/null
else
    skip_part "top in a terminal not checked: tmux is not installed (deploy/install-deps.sh)"
fi

# --- pressure for imports: limits given directly or derived from --os through the Windows
# source's rule table, shown by /api/v1/hosts with their source, kept across a restart. The
# capture's last screen: Pool N 4100K = 4,198,400 B, P 8192K = 8,388,608 B, Memory 1 GiB.
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host DDK03 \
    --os "Windows Server 2003 x86 /3GB" >/dev/null 2>"$dir/err"
check "import --os exit" 0 $?
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host CFG04 \
    --nonpaged-limit 64MB --paged-limit 1GB >/dev/null 2>"$dir/err"
check "import --nonpaged-limit exit" 0 $?
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host W7X64 \
    --os "Windows 7 x64" >/dev/null 2>"$dir/err"
check "import --os needing RAM exit" 0 $?
limits() { # HOST: limit, source, detail, ratio, level of both pools from /api/v1/hosts
    POOLWATCH_TOKEN=$READ "$PW" --json hosts >"$dir/hosts.json" 2>"$dir/err"
    python3 -c 'import json,sys
h=[h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]==sys.argv[2]]
if not h: print("absent"); sys.exit()
h=h[0]
print(h["os"], "|", h["nonpaged_limit_bytes"], h["nonpaged_limit_source"], h["nonpaged_limit_detail"], "|",
      repr(h["nonpaged_ratio"]), h["nonpaged_level"], "|", h["paged_limit_bytes"], h["paged_limit_source"],
      repr(h["paged_ratio"]))' "$dir/hosts.json" "$1"
}
# (the API writes reals with 10 significant digits)
# 128 MB = 134217728: 4198400 / 134217728 = 0.031280517578125; 530 MB = 555745280:
# 8388608 / 555745280 = 0.015094339622641509
DDK="Windows Server 2003 x86 /3GB | 134217728 computed Windows Server 2003 x86 with /3GB: 128 MB | 0.03128051758 ok | 555745280 computed 0.01509433962"
check "DDK03 limits from --os" "$DDK" "$(limits DDK03)"
# 64MB as Windows writes pool limits = 64 MiB = 67108864: 4198400 / 67108864 = 0.06256103515625;
# 1GB = 1 GiB: 8388608 / 2^30 = 0.0078125
CFG="windows | 67108864 configured given at import | 0.06256103516 ok | 1073741824 configured 0.0078125"
check "CFG04 limits given" "$CFG" "$(limits CFG04)"
# 7 x64: 75 % of the capture's 1 GiB = 805306368: 4198400 / 805306368 = 0.005213419596354167
check "W7X64 limit from --os and the capture's RAM" \
    "805306368 computed Windows 7 x64: 75% of RAM <= 128 GB = 768 MB | 0.005213419596" \
    "$(limits W7X64 | awk -F' [|] ' '{print $2 " | " $3}' | sed 's/ ok$//')"
# bad values name the field, and nothing is uploaded
for bad in "--nonpaged-limit=-5" "--nonpaged-limit=lots" "--paged-limit=0"; do
    POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 "$bad" \
        >/dev/null 2>"$dir/err"
    check "import $bad exit" 2 $?
    opt=${bad%%=*}
    check "import $bad names the option" 1 "$(grep -c "^poolwatch import: bad $opt '${bad#*=}': .*give a size above 0 with its unit" "$dir/err")"
done
# too large: above the 1024TB bound, or past 2^64 bytes (99999999999 x 2^40 > 1.8e19): said as
# such, not "give a size above 0" (the new-user trial)
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 \
    --nonpaged-limit 2000TB >/dev/null 2>"$dir/err"
check "import --nonpaged-limit 2000TB exit" 2 $?
check "import --nonpaged-limit 2000TB says the maximum" \
    "poolwatch import: bad --nonpaged-limit '2000TB': above the largest limit; the largest pool limit taken is 1024TB (1,125,899,906,842,624 bytes)" \
    "$(cat "$dir/err")"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 \
    --paged-limit=99999999999TB >/dev/null 2>"$dir/err"
check "import --paged-limit 99999999999TB exit" 2 $?
check "import --paged-limit 99999999999TB says it overflows" \
    "poolwatch import: bad --paged-limit '99999999999TB': too large, more than 2^64 bytes; the largest pool limit taken is 1024TB (1,125,899,906,842,624 bytes)" \
    "$(cat "$dir/err")"
# a bare number would be bytes (128 B: no pool is that small): refused, with the forms taken
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 \
    --nonpaged-limit 128 >/dev/null 2>"$dir/err"
check "import --nonpaged-limit 128 exit" 2 $?
check "import --nonpaged-limit 128 says why and what is taken" \
    "poolwatch import: bad --nonpaged-limit '128': a bare number would be bytes; give a size above 0 with its unit, as Windows writes pool limits: 128MB (= 128MiB, 134,217,728 bytes), 2GB, 512KB, or bytes with B (134217728B); at most 1024TB" \
    "$(cat "$dir/err")"
# decimals are not taken, and said so with the same size in a smaller unit (1.5 x 1024 MB)
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 \
    --nonpaged-limit 1.5GB >/dev/null 2>"$dir/err"
check "import --nonpaged-limit 1.5GB exit" 2 $?
check "import --nonpaged-limit 1.5GB says decimals are not taken" \
    "poolwatch import: bad --nonpaged-limit '1.5GB': a size with decimals is not taken; write it in a smaller unit: 1536MB" \
    "$(cat "$dir/err")"
# an empty file is said to be empty (not "no poolmon screen"), in the words parse uses
: >"$dir/empty.txt"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/empty.txt" --host EMPTY01 >/dev/null 2>"$dir/err"
check "import of an empty file exit" 2 $?
check "import of an empty file says so and names slabinfo" \
    "$dir/empty.txt: the file is empty: no poolmon screen or /proc/slabinfo dump in it" \
    "$(cat "$dir/err")"
"$PW" parse "$dir/empty.txt" >/dev/null 2>"$dir/err"
check "parse of an empty file exit" 2 $?
check "parse of an empty file says what import says" \
    "$dir/empty.txt: the file is empty: no poolmon screen or /proc/slabinfo dump in it" \
    "$(cat "$dir/err")"
# bytes with B are taken: 134217728B = 128 MiB
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BYTES01 \
    --nonpaged-limit 134217728B >/dev/null 2>"$dir/err"
check "import --nonpaged-limit 134217728B exit" 0 $?
check "BYTES01 limit" "134217728 configured given at import" \
    "$(limits BYTES01 | awk -F' [|] ' '{print $2}')"
# the server's refusals name the options typed, not the API's parameters
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/linux_series/slab_loop_12x15min_dentry_leak.txt" \
    --host LNX02 --os "Windows 7 x64" >/dev/null 2>"$dir/err"
check "import of a Linux series with --os exit" 2 $?
check "import of a Linux series with --os names the options" 1 \
    "$(grep -c "HTTP 400 EINVAL: parameter --os names a Windows version; a Linux series takes --nonpaged-limit (the limit of its slab memory) instead$" "$dir/err")"
# a directory that is not a support bundle says so
mkdir -p "$dir/captures"
cp "$FX/http/import_two_screens.txt" "$dir/captures/"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/captures" --host DIR01 >/dev/null 2>"$dir/err"
check "import of a plain directory exit" 2 $?
check "import of a plain directory says what a directory must be" \
    "$dir/captures: a directory, and not a support bundle: a directory is imported only in the sosreport layout, whose proc/slabinfo it does not have; give the capture files themselves (e.g. $dir/captures/*.txt)" \
    "$(cat "$dir/err")"
# the same capture again with another --os stores nothing and changes the limits: said
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host DDK05 \
    --os "Windows Server 2003 x86 /3GB" >/dev/null 2>"$dir/err"
check "import DDK05 exit" 0 $?
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host DDK05 \
    --os "Windows 7 x64" >"$dir/out" 2>"$dir/err"
check "re-import with another --os exit" 0 $?
# 128 MiB before (2003 /3GB); 75 % of the capture's 1 GiB = 768 MiB after (7 x64)
check "re-import with another --os says nothing stored and the limits changed" 1 \
    "$(grep -c "^$FX/http/import_two_screens.txt: already imported into DDK05: 2 screens of this capture were stored by an earlier import of the same capture (its first screen; the start time does not make it new); nothing stored again; limits changed: nonpaged 768.0 MiB (Windows 7 x64: 75% of RAM <= 128 GB = 768 MB), was 128.0 MiB" "$dir/out")"
# both pools' changes, apart (the new-user trial: "..., was 128.0 MiB paged ...")
check "re-import: the pools' changes are apart" 1 "$(grep -c "was 128.0 MiB; paged " "$dir/out")"
check "DDK05's limit is the new one" "805306368 computed Windows 7 x64: 75% of RAM <= 128 GB = 768 MB" \
    "$(limits DDK05 | awk -F' [|] ' '{print $2}')"
check "DDK05's screens are counted once" "[2]" "$(samples DDK05)"
POOLWATCH_TOKEN=$ADMIN "$PW" import "$FX/http/import_two_screens.txt" --host BAD01 --os "Windows 95" \
    >/dev/null 2>"$dir/err"
check "import unknown --os exit" 2 $?
check "import unknown --os says why" \
    "poolwatch import: --os: os 'Windows 95': '95' is not a Windows version the limit table knows (e.g. \"Windows Server 2003 x86 /3GB\", \"Windows 7 x64\")" \
    "$(cat "$dir/err")"
api_import() { # QUERY: the API's answer to an import with it (status and error message)
    curl -s -o "$dir/api.json" -w '%{http_code}' --cacert "$dir/pki/ca.pem" \
        -H "Authorization: Bearer $ADMIN" --data-binary @"$FX/http/import_two_screens.txt" \
        "https://127.0.0.1:$HP/api/v1/import?host=BAD02&$1"
    python3 -c 'import json,sys; print("", json.load(open(sys.argv[1])).get("error", {}).get("message", ""))' "$dir/api.json"
}
check "API nonpaged_limit_bytes=-5" \
    "400 parameter 'nonpaged_limit_bytes' must be an integer from 0 to 1125899906842624" \
    "$(api_import nonpaged_limit_bytes=-5)"
check "API os=Windows%2095" \
    "400 parameter os 'Windows 95': '95' is not a Windows version the limit table knows (e.g. \"Windows Server 2003 x86 /3GB\", \"Windows 7 x64\")" \
    "$(api_import os=Windows%2095)"
check "API os needing RAM the capture lacks is refused only then: a 2000-era rule works" \
    "200" "$(api_import 'os=Windows%20XP' | cut -c1-3)"
check "BAD01 not imported" "absent" "$(limits BAD01)"

# --- host lifecycle: rename an import, retire hosts (history deleted or kept)
POOLWATCH_TOKEN=$ADMIN "$PW" host rename DDK03 DDK04 >"$dir/out" 2>"$dir/err"
check "host rename exit" 0 $?
check "host rename says so" "renamed DDK03 to DDK04" "$(cat "$dir/out")"
check "renamed host keeps its limits" "$DDK" "$(limits DDK04)"
check "old name gone" "absent" "$(limits DDK03)"
POOLWATCH_TOKEN=$ADMIN "$PW" host rename DDK04 CFG04 >"$dir/out" 2>"$dir/err"
check "host rename to a taken name exit" 1 $?
check "host rename to a taken name says so" 1 "$(grep -c "HTTP 409 EEXIST: a host named 'CFG04' exists" "$dir/err")"
POOLWATCH_TOKEN=$READ "$PW" host rm CFG04 >"$dir/out" 2>"$dir/err"
check "host rm with a read token -> 4" 4 $?
POOLWATCH_TOKEN=$ADMIN "$PW" host rm DDK04 >"$dir/out" 2>"$dir/err"
check "host rm exit" 0 $?
check "host rm says so" "retired DDK04: its history is deleted" "$(cat "$dir/out")"
POOLWATCH_TOKEN=$ADMIN "$PW" host rm CFG04 --keep-history >"$dir/out" 2>"$dir/err"
check "host rm --keep-history exit" 0 $?
check "retired hosts gone from hosts" "absent absent" "$(limits DDK04) $(limits CFG04)"
POOLWATCH_TOKEN=$READ "$PW" series DDK04 'Abcd' >/dev/null 2>&1
check "series of a retired host -> 3" 3 $?
POOLWATCH_TOKEN=$ADMIN "$PW" host rm NOSUCHHOST >/dev/null 2>&1
check "host rm unknown -> 3" 3 $?
metrics() { curl -s --cacert "$dir/pki/ca.pem" -H "Authorization: Bearer $READ" "https://127.0.0.1:$HP/metrics"; }
check "retired hosts gone from /metrics" 0 "$(metrics | grep -c 'host="\(DDK04\|CFG04\)"')"
# its limit with where it comes from (--os: the rule table's, computed)
check "a live import still in /metrics" 1 "$(metrics | grep -c '^poolwatch_pool_limit_bytes{host="W7X64",pool="nonpaged",source="computed"} 805306368$')"

# --- a restart keeps the limits, the retirements and the leak list
POOLWATCH_TOKEN=$READ "$PW" leaks >"$dir/leaks_before" 2>"$dir/err"
check "leaks before the stop list suspects" 0 "$(grep -c '^analysis has not run yet' "$dir/leaks_before")"
kill -TERM "$cpid"
wait "$cpid"
check "collector stops for the restart" 0 $?
start_collector
# just started, before the first pass: the list the clean stop kept (<store>.suspects.json),
# with the same evidence and ETAs, not an empty one
POOLWATCH_TOKEN=$READ "$PW" leaks >"$dir/out" 2>"$dir/err"
check "leaks before the first pass exit" 0 $?
check "leaks before the first pass: the list the stop kept" "$(cat "$dir/leaks_before")" "$(cat "$dir/out")"
check "W7X64 limits after a restart" \
    "805306368 computed Windows 7 x64: 75% of RAM <= 128 GB = 768 MB | 0.005213419596" \
    "$(limits W7X64 | awk -F' [|] ' '{print $2 " | " $3}' | sed 's/ ok$//')"
check "retired hosts stay gone after a restart" "absent absent absent" "$(limits DDK04) $(limits CFG04) $(limits DDK03)"
# a retired name is free: a new import under it is a new host (the kept history stays out)
POOLWATCH_TOKEN=$ADMIN "$PW" import "$dir/both.txt" --host CFG04 --start 2024-03-14T10:00:00Z \
    >/dev/null 2>"$dir/err"
check "import under a retired name exit" 0 $?
check "the new CFG04 has no limit of the old one" "windows | None unknown  | None unknown | None unknown None" "$(limits CFG04)"
check "an imported host's samples after a restart: its screens, from the store" "[2]" "$(samples OLD01)"

# last: alerts (keeps the checks above meaningful if the server fails here)
POOLWATCH_TOKEN=$READ "$PW" alerts >"$dir/out" 2>"$dir/err"
check "alerts exit" 0 $?
POOLWATCH_TOKEN=$READ "$PW" --json alerts >"$dir/out" 2>"$dir/err"
check "alerts --json parses" 0 "$(python3 -c 'import json,sys; json.load(open(sys.argv[1])); print(0)' "$dir/out" 2>&1 | tail -1)"

finish
