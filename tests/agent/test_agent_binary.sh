#!/bin/sh
# test_agent_binary.sh AGENT SOURCE_DIR: poolwatch-agent's start-up errors from a shell: each
# says its reason once, and a CA file that cannot be read says why; --version; a running agent
# survives SIGHUP (and logs it) and logs the SIGTERM that stops it.
set -u
AGENT=$1
SRC=$2
tmp=$(mktemp -d /tmp/pw-agent-bin-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../check.sh
. "$SRC/tests/check.sh"

"$SRC/deploy/pki.sh" "$tmp/pki" --agent h1 >/dev/null 2>&1 || { echo "pki.sh failed"; exit 1; }
TLS="--collector.endpoints=127.0.0.1:1 --collector.cert_file=$tmp/pki/agent-h1.pem --collector.key_file=$tmp/pki/agent-h1.key"

# shellcheck disable=SC2086
"$AGENT" --agent.source=replay:"$tmp/nonexistent" --spool.dir="$tmp/spool" \
    --collector.ca_file="$tmp/pki/ca.pem" $TLS >"$tmp/out" 2>"$tmp/err"
check "missing replay file exit" 1 $?
check "missing replay file: one clause" \
    "poolwatch-agent: $tmp/nonexistent: cannot open: No such file or directory" "$(cat "$tmp/err")"

# shellcheck disable=SC2086
"$AGENT" --agent.source=sim:steady/0 --spool.dir="$tmp/spool" \
    --collector.ca_file="$tmp/nonexistent" $TLS >"$tmp/out" 2>"$tmp/err"
check "missing CA file exit" 1 $?
check "missing CA file says why" 1 \
    "$(grep -c "^poolwatch-agent: TLS error: CA file '$tmp/nonexistent': No such file or directory" "$tmp/err")"

# --check-config knows the collector would refuse a certificate for another host: the sim
# source names itself sim-steady-0, the certificate is for h1.
# shellcheck disable=SC2086
"$AGENT" --check-config --agent.source=sim:steady/0 --spool.dir="$tmp/spool" \
    --collector.ca_file="$tmp/pki/ca.pem" $TLS >"$tmp/out" 2>"$tmp/err"
check "check-config wrong host exit" 2 $?
check "check-config wrong host says so" 1 "$(grep -c "collector.cert_file: the certificate is for CN h1, DNS h1, but this agent names itself 'sim-steady-0' (set agent.host_name, or make its certificate for 'sim-steady-0'): the collector would refuse it" "$tmp/err")"
# the same with the name set (case does not matter): accepted
# shellcheck disable=SC2086
"$AGENT" --check-config --agent.source=sim:steady/0 --agent.host_name=H1 --spool.dir="$tmp/spool" \
    --collector.ca_file="$tmp/pki/ca.pem" $TLS >"$tmp/out" 2>"$tmp/err"
check "check-config right host exit" 0 $?

# --version: name, version, commit (from CMake, "unknown" outside git) and OpenSSL
"$AGENT" --version >"$tmp/out" 2>"$tmp/err"
check "version exit" 0 $?
check "version line" 1 "$(grep -cE '^poolwatch-agent [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{4,}|unknown)\), OpenSSL [0-9]' "$tmp/out")"
"$AGENT" -V >"$tmp/out2" 2>"$tmp/err"
check "-V exit" 0 $?
check "-V prints the --version line" "$(cat "$tmp/out")" "$(cat "$tmp/out2")"

# SIGHUP (a closed terminal, `systemctl reload`) never kills the agent: it logs it and goes on.
# The collector endpoint is closed, so the agent samples into its spool and retries.
# shellcheck disable=SC2086
"$AGENT" --agent.source=sim:steady/0 --agent.host_name=h1 --spool.dir="$tmp/spool-hup" \
    --collector.ca_file="$tmp/pki/ca.pem" $TLS >"$tmp/hup.out" 2>"$tmp/hup.err" &
pid=$!
wait_for "the agent's start" 30 grep -q "host h1, source sim, " "$tmp/hup.err"
kill -HUP $pid
wait_for "SIGHUP logged" 30 grep -q "SIGHUP: certificate" "$tmp/hup.err"
check "SIGHUP logged: the TLS files read again" 1 "$(grep -c 'SIGHUP: certificate, key and CA files read again (used from the next connection); the configuration is read at start only' "$tmp/hup.err")"
kill -0 $pid 2>/dev/null
check "alive after SIGHUP" 0 $?
# a certificate that cannot be read: said, and the previous one stays in use
mv "$tmp/pki/agent-h1.pem" "$tmp/pki/agent-h1.pem.away"
kill -HUP $pid
wait_for "the second SIGHUP logged" 30 grep -q "SIGHUP: TLS files not read again" "$tmp/hup.err"
check "second SIGHUP: the previous files stay" 1 "$(grep -c "WARN  \[agent\] SIGHUP: TLS files not read again, the previous ones stay in use: .*$tmp/pki/agent-h1.pem" "$tmp/hup.err")"
mv "$tmp/pki/agent-h1.pem.away" "$tmp/pki/agent-h1.pem"
check_stops "agent after two SIGHUPs" $pid "$tmp/hup.err"

exit $fail
