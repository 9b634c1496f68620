#!/bin/sh
# test_agent_binary.sh AGENT SOURCE_DIR: poolwatch-agent's start-up errors from a shell: each
# says its reason once, and a CA file that cannot be read says why.
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

exit $fail
