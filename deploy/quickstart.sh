#!/usr/bin/env bash
# The main job: a poolwatch collector with agents on real data, on this machine.
#
#   ./deploy/quickstart.sh            run until Ctrl-C
#   ./deploy/quickstart.sh --detach   leave it running; writes .poolwatch-demo/env
#   ./deploy/quickstart.sh --stop     stop a detached demo
#
# POOLWATCH_POOLTAG=/path/to/pooltag.txt adds tag descriptions; POOLWATCH_DEMO_DIR,
# POOLWATCH_AGENT_PORT and POOLWATCH_HTTP_PORT move the demo.
#
# It installs dependencies, builds (release), makes a throw-away CA and certificates
# (deploy/pki.sh), starts the collector with its embedded SQLite store, an agent on this
# machine's real /proc/slabinfo (needs root: without it, it says so and goes on), one agent per
# bundled public poolmon capture (replayed as extra hosts), and a small simulated Windows fleet
# with six hours of history, one host leaking nonpaged pool, so the analysis has something to
# find. Then it prints where the API, the dashboard and the CLI are.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEMO=${POOLWATCH_DEMO_DIR:-$ROOT/.poolwatch-demo}
AGENT_PORT=${POOLWATCH_AGENT_PORT:-7070}
HTTP_PORT=${POOLWATCH_HTTP_PORT:-7443}
# shellcheck source=deploy/demo-lib.sh
. "$ROOT/deploy/demo-lib.sh"
demo_mode "$0" 2,16 "$@"

echo "==> installing dependencies"
./deploy/install-deps.sh
echo "==> building (release)"
JOBS=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build build/release -j"$JOBS" --target poolwatch-collector poolwatch-agent poolwatch >/dev/null
BIN=$ROOT/build/release
COLLECTOR=$BIN/collector/poolwatch-collector
AGENT=$BIN/agent/poolwatch-agent
CLI=$BIN/cli/poolwatch

# Ports first: a collector left running (started by hand, or by another demo directory) would
# otherwise answer for this one.
for port in "$AGENT_PORT" "$HTTP_PORT"; do
  if command -v ss >/dev/null && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
    echo "port $port is in use (another poolwatch collector? stop it, or set" \
      "POOLWATCH_AGENT_PORT / POOLWATCH_HTTP_PORT)" >&2
    exit 1
  fi
done

# The demo's files (store, keys, tokens, spools, logs) are this user's only, at every start.
umask 077

# A demo starts fresh: the simulated hosts re-create hours of history at every start, which
# would overlap what an earlier run stored (and old logs would answer the checks below).
if [ -e "$DEMO/poolwatch.db" ] || [ -e "$DEMO/poolwatch.db.alerts.json" ] || [ -d "$DEMO/spool" ] ||
  [ -e "$DEMO/poolwatch.db.suspects.json" ] || [ -d "$DEMO/logs" ]; then
  echo "==> starting fresh: removing the previous demo's store, spools and logs from $DEMO"
  rm -rf "$DEMO/poolwatch.db" "$DEMO/poolwatch.db-wal" "$DEMO/poolwatch.db-shm" \
    "$DEMO/poolwatch.db.alerts.json" "$DEMO/poolwatch.db.suspects.json" "$DEMO/spool" "$DEMO/logs"
fi
mkdir -p "$DEMO/logs" "$DEMO/spool"
: >"$DEMO/pids"

# Hosts: replayed captures (the bundled public poolmon screens with tables), a simulated fleet.
CAPTURES=()
for f in "$ROOT"/tests/fixtures/poolmon/case{02,03,05,08,09,10,11,15,16,19}_*.txt; do
  [ -f "$f" ] && CAPTURES+=("$f")
done
SIM_PRESET=fleet-small
SIM_HOSTS=8
names=(--agent "$(hostname)")
for f in "${CAPTURES[@]}"; do
  c=$(basename "$f" | cut -d_ -f1)
  names+=(--agent "capture-$c")
done
for i in $(seq 0 $((SIM_HOSTS - 1))); do names+=(--agent "sim-$SIM_PRESET-$i"); done
names+=(--agent ddk-2003 --agent sim-pool-empty)

echo "==> certificates (throw-away CA in $DEMO/pki)"
./deploy/pki.sh "$DEMO/pki" --collector-name localhost "${names[@]}" --cli cli >"$DEMO/logs/pki.log"

# Bearer tokens: the file keeps SHA-256 hashes only.
if [ ! -f "$DEMO/tokens.secret" ]; then
  echo "read $(openssl rand -hex 24)" >"$DEMO/tokens.secret"
  echo "admin $(openssl rand -hex 24)" >>"$DEMO/tokens.secret"
fi
READ_TOKEN=$(awk '$1=="read"{print $2}' "$DEMO/tokens.secret")
ADMIN_TOKEN=$(awk '$1=="admin"{print $2}' "$DEMO/tokens.secret")
{
  echo "# sha256(token) role name"
  echo "$(printf %s "$READ_TOKEN" | sha256sum | cut -d' ' -f1) read demo-read"
  echo "$(printf %s "$ADMIN_TOKEN" | sha256sum | cut -d' ' -f1) admin demo-admin"
} >"$DEMO/tokens"

# Tag descriptions: pooltag.txt is Microsoft's file (Debugging Tools for Windows ship it in
# Debuggers\x64\triage\); poolwatch does not bundle it. POOLWATCH_POOLTAG=/path/pooltag.txt uses yours.
POOLTAG_LINE=""
if [ -n "${POOLWATCH_POOLTAG:-}" ]; then
  POOLTAG_LINE="[analysis]
pooltag_file = $(readlink -f "$POOLWATCH_POOLTAG")"
fi

cat >"$DEMO/collector.conf" <<EOF
[agents]
listen = 127.0.0.1:$AGENT_PORT
ca_file = pki/ca.pem
cert_file = pki/collector.pem
key_file = pki/collector.key

[store]
path = poolwatch.db

[http]
listen = 127.0.0.1:$HTTP_PORT
tokens_file = tokens

$POOLTAG_LINE
EOF

demo_traps

echo "==> collector on 127.0.0.1:$AGENT_PORT (agents) and https://127.0.0.1:$HTTP_PORT (API, dashboard)"
start collector "$COLLECTOR" --config "$DEMO/collector.conf"
for _ in $(seq 1 50); do
  grep -q "agents: " "$DEMO/logs/collector.log" 2>/dev/null && break
  if ! kill -0 "$(head -n1 "$DEMO/pids")" 2>/dev/null; then
    echo "the collector did not start:" >&2; tail -n 20 "$DEMO/logs/collector.log" >&2; exit 1
  fi
  sleep 0.2
done
if ! grep -q "agents: " "$DEMO/logs/collector.log" 2>/dev/null; then
  echo "the collector did not report its listeners within 10 s:" >&2
  tail -n 20 "$DEMO/logs/collector.log" >&2
  stop_demo || true
  exit 1
fi

agent() { # name, source, then extra flags
  local name=$1 src=$2; shift 2
  start "agent-$name" "$AGENT" --agent.source="$src" --agent.host_name="$name" \
    --spool.dir="$DEMO/spool/$name" --collector.endpoints=127.0.0.1:"$AGENT_PORT" \
    --collector.server_name=localhost --collector.ca_file="$DEMO/pki/ca.pem" \
    --collector.cert_file="$DEMO/pki/agent-$name.pem" --collector.key_file="$DEMO/pki/agent-$name.key" "$@"
}

LOCAL=$(hostname)
if [ -r /proc/slabinfo ]; then
  echo "==> agent on this machine's /proc/slabinfo: $LOCAL"
  agent "$LOCAL" linux --agent.interval=10s
else
  echo "==> NOTE: /proc/slabinfo is readable by root only; run as root to add this machine ($LOCAL)."
  echo "         Going on with the replayed and simulated hosts."
fi

now_ms=$(($(date +%s) * 1000))
for f in "${CAPTURES[@]}"; do
  c=$(basename "$f" | cut -d_ -f1)
  # Screens are 15 minutes apart (the documented procedure), ending about now.
  screens=$(grep -c -E '^ *Memory:|^ *Tag +Type' "$f" || true)
  agent "capture-$c" "replay:$f" --replay.start=$((now_ms - screens * 900000))ms \
    --replay.exit_when_done --agent.interval=1s
done
echo "==> replaying ${#CAPTURES[@]} saved poolmon captures as hosts capture-caseNN"

for i in $(seq 0 $((SIM_HOSTS - 1))); do
  agent "sim-$SIM_PRESET-$i" "sim:$SIM_PRESET/$i" --agent.interval=10s --sim.backfill=6h
done
echo "==> simulated fleet: $SIM_HOSTS Windows hosts ($SIM_PRESET: host sim-$SIM_PRESET-3 leaks nonpaged pool), 6 h of history"
# The seed story: Windows Server 2003 /3GB (128 MB nonpaged limit) whose nonpaged pool climbs
# from ~30 MB because of tag 'Ddk ' over 14 days.
agent ddk-2003 sim:ddk-2003 --agent.interval=60s --sim.backfill=14d
echo "==> host ddk-2003: Windows Server 2003 /3GB, 128 MB nonpaged limit, Ddk leaking, 14 days of history"
# A pool that ran out: the fleet's leaking host again, its nonpaged limit set to 430 MiB, which
# the leak reaches about 5 h into the history: its agent sends srv 2019 ("the pool was empty"),
# then one an hour, as Windows logs them; PoolEmpty fires (agent/source_sim.h).
agent sim-pool-empty "sim:$SIM_PRESET/3" --agent.interval=60s --sim.backfill=6h --limits.nonpaged=430MiB
echo "==> host sim-pool-empty: the same leak with a 430 MiB nonpaged limit: ran out, srv 2019 events, PoolEmpty"

URL="https://127.0.0.1:$HTTP_PORT"
cat >"$DEMO/env" <<EOF
POOLWATCH_URL=$URL
POOLWATCH_TOKEN=$ADMIN_TOKEN
POOLWATCH_READ_TOKEN=$READ_TOKEN
POOLWATCH_CA=$DEMO/pki/ca.pem
POOLWATCH_AGENT_PORT=$AGENT_PORT
export POOLWATCH_URL POOLWATCH_TOKEN POOLWATCH_CA
EOF

cat <<EOF

poolwatch is running.
  dashboard   $URL/#token=$READ_TOKEN
              (logs in with the read token, kept in that tab only; the certificate is from the
              demo CA $DEMO/pki/ca.pem: import it or accept the browser's warning)
  ddk-2003    $URL/#/host/ddk-2003?range=7d&token=$READ_TOKEN
              (its host page, 7 days; "loading history" while its 14 days stream in, ~1 min)
  API         $URL/api/v1/hosts   (Authorization: Bearer <token>; OpenAPI: $URL/api/v1/openapi.json)
  metrics     $URL/metrics
  agents      127.0.0.1:$AGENT_PORT (mutual TLS)
  logs        $DEMO/logs/
  tag names   ${POOLWATCH_POOLTAG:-none: set POOLWATCH_POOLTAG=/path/to/pooltag.txt (Debugging Tools for Windows) for driver descriptions}
  CLI         . $DEMO/env
              $CLI hosts
              $CLI leaks --host ddk-2003
              $CLI top ddk-2003            (the seed story: Ddk  leaks towards its 128 MB limit)
EOF

if [ "$MODE" = detach ]; then
  echo "  stop with  ./deploy/quickstart.sh --stop"
  exit 0
fi
demo_foreground || exit 1
