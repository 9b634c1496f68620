#!/usr/bin/env bash
# fleet.sh COLLECTOR AGENT SOURCE_DIR WORKDIR: starts a poolwatch-collector and a few agents
# on free loopback ports with a throw-away PKI (deploy/pki.sh), for the dashboard test:
#   sim-fleet-small-0..3  simulated Windows hosts with 6 h of backfilled history (preset
#                         fleet-small: host 3 leaks nonpaged pool in tag NtFC)
#   capture-case09        a replay of tests/fixtures/poolmon/case09 (two screens, Drsd)
#   capture-case10        a replay of tests/fixtures/poolmon/case10 (all sessions, then
#                         session 0: session-pool rows of one Remote Desktop session)
# Writes WORKDIR/env (POOLWATCH_URL, POOLWATCH_READ_TOKEN, POOLWATCH_ADMIN_TOKEN, POOLWATCH_CA,
# POOLWATCH_SPKI: the
# base64 SHA-256 of the server key, for chromium's --ignore-certificate-errors-spki-list) and
# WORKDIR/pids. Stop with: kill $(cat WORKDIR/pids).
set -euo pipefail
COLL=$1 AGENT=$2 SRC=$3 DIR=$4
mkdir -p "$DIR/logs" "$DIR/spool"
: >"$DIR/pids"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
SIM=(sim-fleet-small-0 sim-fleet-small-1 sim-fleet-small-2 sim-fleet-small-3)
args=()
for n in "${SIM[@]}" capture-case09 capture-case10; do args+=(--agent "$n"); done
"$SRC/deploy/pki.sh" "$DIR/pki" --collector-name localhost "${args[@]}" >"$DIR/logs/pki.log" 2>&1
READ=read-$(openssl rand -hex 12)
ADMIN=admin-$(openssl rand -hex 12) # imports an event export into capture-case09
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '%s read dash-test\n%s admin dash-test-admin\n' "$(sha "$READ")" "$(sha "$ADMIN")" >"$DIR/tokens"
AP=$(free_port)
HP=$(free_port)
"$COLL" --agents.listen=127.0.0.1:$AP --store.path="$DIR/pw.db" \
  --agents.ca_file="$DIR/pki/ca.pem" --agents.cert_file="$DIR/pki/collector.pem" \
  --agents.key_file="$DIR/pki/collector.key" --http.listen=127.0.0.1:$HP \
  --http.tokens_file="$DIR/tokens" --analysis.pooltag_file="$SRC/tests/fixtures/pooltag/pooltag_small.txt" \
  >"$DIR/logs/collector.log" 2>&1 &
echo $! >>"$DIR/pids"
for _ in $(seq 1 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$HP),0.2)" 2>/dev/null && break
  kill -0 "$(head -n1 "$DIR/pids")" 2>/dev/null || { cat "$DIR/logs/collector.log" >&2; exit 1; }
  sleep 0.1
done
agent() { # name source [flags]
  local name=$1 src=$2; shift 2
  "$AGENT" --agent.source="$src" --agent.host_name="$name" --spool.dir="$DIR/spool/$name" \
    --collector.endpoints=127.0.0.1:$AP --collector.server_name=localhost \
    --collector.ca_file="$DIR/pki/ca.pem" --collector.cert_file="$DIR/pki/agent-$name.pem" \
    --collector.key_file="$DIR/pki/agent-$name.key" "$@" >>"$DIR/logs/agent-$name.log" 2>&1 &
  echo $! >>"$DIR/pids"
}
for i in 0 1 2 3; do
  agent "sim-fleet-small-$i" "sim:fleet-small/$i" --agent.interval=10s --sim.backfill=6h
done
now_ms=$(($(date +%s) * 1000))
agent capture-case09 "replay:$SRC/tests/fixtures/poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt" \
  --replay.start=$((now_ms - 2 * 900000))ms --replay.exit_when_done --agent.interval=1s
agent capture-case10 "replay:$SRC/tests/fixtures/poolmon/case10_poolmon_2003_msdocs_session_pools_dh_space.txt" \
  --replay.start=$((now_ms - 2 * 900000))ms --replay.exit_when_done --agent.interval=1s
SPKI=$(openssl x509 -in "$DIR/pki/collector.pem" -pubkey -noout | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)
cat >"$DIR/env" <<EOT
POOLWATCH_URL=https://127.0.0.1:$HP
POOLWATCH_READ_TOKEN=$READ
POOLWATCH_ADMIN_TOKEN=$ADMIN
POOLWATCH_CA=$DIR/pki/ca.pem
POOLWATCH_SPKI=$SPKI
EOT
