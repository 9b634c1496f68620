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

exit $fail
