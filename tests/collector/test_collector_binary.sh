#!/bin/sh
# test_collector_binary.sh COLLECTOR SOURCE_DIR: poolwatch-collector's command line from a shell:
# --new-token refuses what the tokens-file parser would refuse (writing nothing), and a tokens
# file error names FILE:LINE; --check-config checks the alert URLs.
set -u
COLL=$1
SRC=$2
tmp=$(mktemp -d /tmp/pw-coll-bin-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../check.sh
. "$SRC/tests/check.sh"

# --version: name, version, commit (from CMake, "unknown" outside git) and OpenSSL
"$COLL" --version >"$tmp/out" 2>"$tmp/err"
check "version exit" 0 $?
check "version line" 1 "$(grep -cE '^poolwatch-collector [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{4,}|unknown)\), OpenSSL [0-9]' "$tmp/out")"
# -V is --version (it said "unexpected argument '-V'" and the usage)
"$COLL" -V >"$tmp/out2" 2>"$tmp/err"
check "-V exit" 0 $?
check "-V prints the --version line" "$(cat "$tmp/out")" "$(cat "$tmp/out2")"
# another short option is named as an unknown option, with what the options look like
"$COLL" -x >"$tmp/out" 2>"$tmp/err"
check "-x exit" 2 $?
check "-x says it is an unknown option" \
    "poolwatch-collector: unknown option '-x' (options are --section.name=VALUE, --config FILE, --check-config, --help or -h, --version or -V)" \
    "$(head -n 1 "$tmp/err")"

# --help lists every option of the table, each as --section.name=, the same set --print-example
# writes (its "name = value" lines, "# name =" for one without a default, under [section])
"$COLL" --help >"$tmp/help" 2>"$tmp/err"
check "help exit" 0 $?
"$COLL" --print-example | awk '/^\[/ { sec = substr($0, 2, length($0) - 2) }
    /^[a-z_0-9]+ = |^# [a-z_0-9]+ =$/ { l = $0; sub(/^# /, "", l); sub(/ =.*/, "", l); print sec "." l }' |
    sort >"$tmp/example-options"
sed -n 's/^  --\([^=]*\)=.*/\1/p' "$tmp/help" | sort >"$tmp/help-options"
check "help lists options" 1 "$(test -s "$tmp/help-options" && echo 1)"
check "help lists the options of --print-example" "$(cat "$tmp/example-options")" \
    "$(cat "$tmp/help-options")"
check "help gives an option's type and default" 1 \
    "$(grep -c '^  --agents.handshake_timeout=duration (default 10s)$' "$tmp/help")"

"$COLL" --new-token read ops >"$tmp/out" 2>"$tmp/err"
check "new-token exit" 0 $?
check "new-token line" 1 "$(grep -cE '^[0-9a-f]{64} read ops$' "$tmp/out")"

"$COLL" --new-token read "bad name" >"$tmp/out" 2>"$tmp/err"
check "new-token bad name exit" 2 $?
check "new-token bad name stdout empty" "" "$(cat "$tmp/out")"
check "new-token bad name says why" \
    "poolwatch-collector: --new-token: name 'bad name': the name must be printable ASCII without spaces" \
    "$(cat "$tmp/err")"

"$COLL" --new-token read >"$tmp/out" 2>"$tmp/err"
check "new-token no name exit" 2 $?
check "new-token no name says what is missing" \
    "poolwatch-collector: --new-token needs a ROLE (read or admin) and a NAME: poolwatch-collector --new-token ROLE NAME" \
    "$(cat "$tmp/err")"

"$COLL" --new-token root x >"$tmp/out" 2>"$tmp/err"
check "new-token bad role exit" 2 $?
check "new-token bad role stdout empty" "" "$(cat "$tmp/out")"

# --check-config on a tokens file whose line 2 has a bad role: FILE:LINE in the message
"$SRC/deploy/pki.sh" "$tmp/pki" >/dev/null 2>&1 || { echo "pki.sh failed"; exit 1; }
printf '# tokens\n%s root alice\n' \
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" >"$tmp/tokens"
chmod 600 "$tmp/tokens"
COMMON="--store.path=$tmp/pw.db --agents.ca_file=$tmp/pki/ca.pem --agents.cert_file=$tmp/pki/collector.pem --agents.key_file=$tmp/pki/collector.key"
# shellcheck disable=SC2086
"$COLL" --check-config $COMMON --http.tokens_file="$tmp/tokens" >"$tmp/out" 2>"$tmp/err"
check "tokens file error exit" 2 $?
check "tokens file error names FILE:LINE" 1 \
    "$(grep -cF "$tmp/tokens:2: role must be 'read' or 'admin'" "$tmp/err")"

# --check-config parses the alert URLs as the running collector does
# shellcheck disable=SC2086
"$COLL" --check-config $COMMON --alerts.webhook_url=htp://x >"$tmp/out" 2>"$tmp/err"
check "check-config bad webhook_url exit" 2 $?
check "check-config bad webhook_url says why" \
    "poolwatch-collector: check failed: alerts.webhook_url: htp://x: only http:// is supported (put a TLS proxy on loopback for https)" \
    "$(cat "$tmp/err")"
# shellcheck disable=SC2086
"$COLL" --check-config $COMMON --alerts.alertmanager_url=https://am:9093 >"$tmp/out" 2>"$tmp/err"
check "check-config bad alertmanager_url exit" 2 $?
check "check-config bad alertmanager_url names it" 1 "$(grep -c 'alerts.alertmanager_url: https://am:9093: only http://' "$tmp/err")"
# shellcheck disable=SC2086
"$COLL" --check-config $COMMON --alerts.webhook_url=http://127.0.0.1:9/hook \
    --alerts.alertmanager_url=http://127.0.0.1:9093 >"$tmp/out" 2>"$tmp/err"
check "check-config good URLs exit" 0 $?

# Start-up failures say their reason once (it was "No such file or directory: cannot open
# '...': No such file or directory"), and a missing store directory is named.
P1=$((20000 + $$ % 20000))
LISTEN="--agents.listen=127.0.0.1:$P1 --http.listen=127.0.0.1:$((P1 + 1))"
# shellcheck disable=SC2086
"$COLL" $COMMON $LISTEN --http.tokens_file="$tmp/missing-tokens" >"$tmp/out" 2>"$tmp/err"
check "missing tokens file exit" 1 $?
check "missing tokens file: the reason once" 1 "$(grep -o 'No such file or directory' "$tmp/err" | wc -l)"
check "missing tokens file names it" 1 "$(grep -c "$tmp/missing-tokens" "$tmp/err")"
# shellcheck disable=SC2086
"$COLL" --store.path="$tmp/nodir/pw.db" --agents.ca_file="$tmp/pki/ca.pem" \
    --agents.cert_file="$tmp/pki/collector.pem" --agents.key_file="$tmp/pki/collector.key" \
    $LISTEN >"$tmp/out" 2>"$tmp/err"
check "missing store directory exit" 1 $?
check "missing store directory named" 1 \
    "$(grep -c "(directory $tmp/nodir: No such file or directory; create it or set store.path)" "$tmp/err")"

# One collector per store: a second one on the same store.path refuses to start and names the
# first one's PID and the lock file; the first one goes on and stops cleanly.
P2=$((P1 + 2))
run_collector() { # log, agents port: a collector on the shared store, in the background
    # shellcheck disable=SC2086
    "$COLL" $COMMON --agents.listen=127.0.0.1:$2 --http.listen=127.0.0.1:$(($2 + 1)) \
        >"$tmp/bg.out" 2>"$1" &
    bg=$!
    wait_for "a collector's listeners" 30 grep -q "agents: " "$1"
}
run_collector "$tmp/first.err" $P2
first=$bg
check "first collector up" 1 "$(grep -c "agents: " "$tmp/first.err")"
# shellcheck disable=SC2086
"$COLL" $COMMON --agents.listen=127.0.0.1:$((P2 + 2)) --http.listen=127.0.0.1:$((P2 + 3)) \
    >"$tmp/out" 2>"$tmp/err"
check "second collector on the same store exit" 1 $?
check "second collector names the holder" \
    "poolwatch-collector: store $tmp/pw.db is in use by another collector (PID $first, lock file $tmp/pw.db.lock): stop it, or give this one another store.path" \
    "$(cat "$tmp/err")"
check_stops "first collector" $first "$tmp/first.err"
# the lock went with it: the store opens again
run_collector "$tmp/third.err" $P2
check "store opens again after the holder stopped" 1 "$(grep -c "agents: " "$tmp/third.err")"
kill -TERM $bg
wait $bg

exit $fail
