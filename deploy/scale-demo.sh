#!/usr/bin/env bash
# Scale-out demo: one shared store, three collectors, one fleet view (docs/scale-out.md).
#
#   ./deploy/scale-demo.sh            run until Ctrl-C
#   ./deploy/scale-demo.sh --detach   leave it running; writes .poolwatch-scale/env
#   ./deploy/scale-demo.sh --stop     stop a detached demo
#
# Starts Debian's VictoriaMetrics (the shared Prometheus-compatible store), three
# poolwatch-collectors that remote-write every host's series into it, each naming itself
# ([fleet] self_url) and each able to serve the whole fleet from the store ([fleet] query_url),
# and a simulated Windows fleet split among them (POOLWATCH_SCALE_HOSTS per collector, default
# 4: sim:fleet-small hosts, one leaking, with three hours of history). Then it prints each
# collector's dashboard and the global API. POOLWATCH_SCALE_DIR and POOLWATCH_SCALE_PORT (the
# first of 8 consecutive ports, default 7600) move it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEMO=${POOLWATCH_SCALE_DIR:-$ROOT/.poolwatch-scale}
BASE=${POOLWATCH_SCALE_PORT:-7600}
PER=${POOLWATCH_SCALE_HOSTS:-4}
NC=3
VM_PORT=$BASE
# shellcheck source=deploy/demo-lib.sh
. "$ROOT/deploy/demo-lib.sh"
demo_mode "$0" 2,14 "$@"

echo "==> installing dependencies (victoria-metrics)"
./deploy/install-deps.sh --victoria-metrics
echo "==> building (release)"
cmake --preset release >/dev/null
cmake --build build/release -j"$(nproc 2>/dev/null || echo 2)" --target poolwatch-collector poolwatch-agent >/dev/null
COLLECTOR=$ROOT/build/release/collector/poolwatch-collector
AGENT=$ROOT/build/release/agent/poolwatch-agent
for port in $(seq "$BASE" $((BASE + 2 * NC + 1))); do
  if command -v ss >/dev/null && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
    echo "port $port is in use: set POOLWATCH_SCALE_PORT" >&2
    exit 1
  fi
done
rm -rf "$DEMO/vm" "$DEMO/c"* "$DEMO/spool" "$DEMO/logs"
mkdir -p "$DEMO/logs" "$DEMO/spool"
: >"$DEMO/pids"

names=()
for c in $(seq 0 $((NC - 1))); do
  for i in $(seq 0 $((PER - 1))); do names+=(--agent "c$c-sim-$i"); done
done
echo "==> certificates (throw-away CA in $DEMO/pki)"
./deploy/pki.sh "$DEMO/pki" --collector-name localhost "${names[@]}" >"$DEMO/logs/pki.log"
TOKEN=$(openssl rand -hex 24)
echo "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1) read scale-demo" >"$DEMO/tokens"

demo_traps
wait_log() { # file, text
  for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
  echo "timed out waiting for '$2' in $1:" >&2; tail -n 20 "$1" >&2; stop_demo; exit 1
}

echo "==> VictoriaMetrics on 127.0.0.1:$VM_PORT (the shared store)"
start vm /usr/bin/victoria-metrics -storageDataPath="$DEMO/vm" -httpListenAddr=127.0.0.1:"$VM_PORT" \
  -retentionPeriod=1 -loggerLevel=ERROR
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$VM_PORT/health" && break; sleep 0.2; done

for c in $(seq 0 $((NC - 1))); do
  ap=$((BASE + 1 + 2 * c)) hp=$((BASE + 2 + 2 * c))
  mkdir -p "$DEMO/c$c"
  cat >"$DEMO/c$c/collector.conf" <<EOF
[agents]
listen = 127.0.0.1:$ap
ca_file = $DEMO/pki/ca.pem
cert_file = $DEMO/pki/collector.pem
key_file = $DEMO/pki/collector.key

[store]
path = $DEMO/c$c/poolwatch.db

[http]
listen = 127.0.0.1:$hp
tokens_file = $DEMO/tokens

[remote_write]
url = http://127.0.0.1:$VM_PORT/api/v1/write
interval = 5s
queue_dir = $DEMO/c$c/rw-queue

[fleet]
query_url = http://127.0.0.1:$VM_PORT
self_url = https://localhost:$hp
refresh = 5s
EOF
  start "collector$c" "$COLLECTOR" --config "$DEMO/c$c/collector.conf"
  wait_log "$DEMO/logs/collector$c.log" "agents: "
  for i in $(seq 0 $((PER - 1))); do
    n="c$c-sim-$i"
    start "agent-$n" "$AGENT" --agent.source="sim:fleet-small/$(((c * PER + i) % 8))" \
      --agent.host_name="$n" --spool.dir="$DEMO/spool/$n" --collector.endpoints=127.0.0.1:"$ap" \
      --collector.server_name=localhost --collector.ca_file="$DEMO/pki/ca.pem" \
      --collector.cert_file="$DEMO/pki/agent-$n.pem" --collector.key_file="$DEMO/pki/agent-$n.key" \
      --agent.interval=10s --sim.backfill=3h
  done
  echo "==> collector $c: agents 127.0.0.1:$ap, https://localhost:$hp ($PER hosts c$c-sim-*)"
done
{
  echo "POOLWATCH_TOKEN=$TOKEN"
  echo "POOLWATCH_CA=$DEMO/pki/ca.pem"
  echo "POOLWATCH_VM=http://127.0.0.1:$VM_PORT"
  for c in $(seq 0 $((NC - 1))); do echo "POOLWATCH_URL_$c=https://localhost:$((BASE + 2 + 2 * c))"; done
} >"$DEMO/env"
cat <<EOF

poolwatch scale-out demo: $NC collectors, $((NC * PER)) hosts, one store (VictoriaMetrics)
  dashboards   https://localhost:$((BASE + 2))/#token=$TOKEN   (and :$((BASE + 4)), :$((BASE + 6)))
  global API   curl --cacert $DEMO/pki/ca.pem -H 'Authorization: Bearer $TOKEN' https://localhost:$((BASE + 2))/api/v1/hosts
               (each host names its "collector"; ?scope=local: that collector's own hosts;
               the first snapshot comes after the first remote writes, ~10 s)
  store        http://127.0.0.1:$VM_PORT/vmui/
  env          $DEMO/env      logs $DEMO/logs
EOF
if [ "$MODE" = detach ]; then
  echo "  stop         ./deploy/scale-demo.sh --stop"
  exit 0
fi
echo "Ctrl-C stops everything."
while true; do sleep 3600; done
