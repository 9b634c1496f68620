#!/bin/sh
# test_cli_binary.sh POOLWATCH FIXTURES: the real `poolwatch` binary from a shell: exit codes,
# FILE:LINE errors on stderr, and values of `parse --json` (from shared/data/README.md).
set -u
PW=$1
FX=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME EXPECTED ACTUAL
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: expected [$2] got [$3]"
        fail=1
    else
        echo "ok   $1"
    fi
}

"$PW" parse --json --compact "$FX/poolmon/case08_poolmon_xp_msdocs_ip_double_mapped.txt" >"$tmp/out" 2>"$tmp/err"
check "case08 exit" 0 $?
# README case08: IpSI per_alloc 51 (53272 / 1027 = 51.87, floored)
check "case08 IpSI" 1 "$(grep -c '"tag":"IpSI","type":"nonpaged","allocs":1027,"frees":0,"diff":1027,"bytes":53272,"per_alloc":51,' "$tmp/out")"

"$PW" parse --json --compact "$FX/poolmon/case02_poolmon_xp_msdocs_display_sort_alloc.txt" >"$tmp/out"
check "case02 memory_kb" 1 "$(grep -c '"header":{"memory_kb":260620,' "$tmp/out")"

"$PW" parse "$FX/poolmon/case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt" >"$tmp/out" 2>"$tmp/err"
check "case18 exit" 2 $?
check "case18 stdout empty" "" "$(cat "$tmp/out")"
check "case18 FILE:LINE" "$FX/poolmon/case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt:3: not poolmon:" \
    "$(head -n 1 "$tmp/err" | cut -d' ' -f1-3)"

"$PW" parse /nonexistent/file >/dev/null 2>&1
check "missing file exit" 2 $?
"$PW" --url http://127.0.0.1:1 hosts >/dev/null 2>&1
check "refused connection exit" 1 $?
"$PW" frobnicate >/dev/null 2>&1
check "unknown command exit" 2 $?
"$PW" --version >"$tmp/out" 2>&1
check "--version exit" 0 $?
"$PW" -V >"$tmp/out2" 2>&1
check "-V exit" 0 $?
check "-V is --version" "$(cat "$tmp/out")" "$(cat "$tmp/out2")"
"$PW" --help | grep -q '^Exit codes: 0 ok, 1 server or network error, 2 usage or input error, 3 not found,$'
check "help lists exit codes" 0 $?

# help says what the commands really do (the new-user trial): leaks are listed by urgency, not
# "by score"; import takes slabinfo dumps, support bundles and event exports, not only poolmon
"$PW" help leaks >"$tmp/out" 2>&1
check "help leaks: by urgency" "1 0" \
    "$(grep -c '^Leak suspects by urgency: those whose pool is critical first, then warn' "$tmp/out") $(grep -c 'by score' "$tmp/out")"
"$PW" help import >"$tmp/out" 2>&1
check "help import: slabinfo, support bundles, events" "1 1 1" \
    "$(grep -c '/proc/slabinfo and /proc/allocinfo dumps' "$tmp/out") $(grep -c 'support bundle' "$tmp/out") $(grep -c 'wevtutil' "$tmp/out")"
"$PW" --help | grep -q 'leak suspects, most urgent first$'
check "usage: leaks most urgent first" 0 $?

exit $fail
