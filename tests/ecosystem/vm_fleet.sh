#!/usr/bin/env bash
# vm_fleet.sh start|stop WORKDIR [COLLECTOR AGENT SOURCE_DIR]: the ctest fixture "vmfleet"
# (tests/CMakeLists.txt), started once for the tests that query a real collector's
# series in VictoriaMetrics (test_vmalert_rules, test_grafana_dashboard).
#
# start: on free loopback ports, with a throw-away PKI (deploy/pki.sh),
#   - Debian's victoria-metrics (single node; -search.latencyOffset=1s so that an instant
#     query sees the newest samples, the default hides the last 30 s),
#   - collector A remote-writing to it every second, with the agents
#       ddk-2003          sim:ddk-2003, 14 days of history (128 MB limit, Ddk leaking, about
#                         92 % full: critical, one leak suspect, an ETA)
#       sim-fleet-small-N sim:fleet-small/0..2, 6 h of history (tags across hosts)
#       gone-1            sim:fleet-small/5, SIGKILLed once its samples reached VictoriaMetrics
#                         (a host gone silent: no goodbye)
#       bye-1             sim:fleet-small/4, stopped with SIGTERM at the same time (a clean
#                         stop: its agent says goodbye, poolwatch_host_stopped 1, no HostSilent)
#   - collector B with one agent (sim-b) whose remote write goes to a port nothing listens
#     on (every request is retried, none delivered), its /metrics scraped by VictoriaMetrics
#     every 2 s (job "poolwatch": the poolwatch_remote_write_* series are on /metrics only).
# It returns once VictoriaMetrics holds ddk-2003's pool, limit, ETA and suspect series (two of
# its samples, a minute apart: a range query's grid, aligned down to its step, then meets
# one), tags of the fleet-small hosts and B's retries. WORKDIR/env has VM_URL, COLLECTOR_A_URL, TOKEN
# (read), CA, GONE_HOST; WORKDIR/pids the daemons.
# stop: ends the daemons of WORKDIR/pids (each by its PID) and removes WORKDIR.
set -uo pipefail
cmd=$1 DIR=$2
if [ "$cmd" = stop ]; then
  if [ -f "$DIR/pids" ]; then
    for p in $(cat "$DIR/pids"); do kill "$p" 2>/dev/null; done
    sleep 0.5
    for p in $(cat "$DIR/pids"); do kill -9 "$p" 2>/dev/null; done
  fi
  [ -n "${KEEP:-}" ] && { echo "kept $DIR"; exit 0; }
  rm -rf "$DIR"
  exit 0
fi
COLL=$3 AGENT=$4 SRC=$5
command -v victoria-metrics >/dev/null ||
  { echo "FAIL victoria-metrics is missing (deploy/install-deps.sh --victoria-metrics)"; exit 1; }
# a previous run's daemons, if it was interrupted before its stop
[ -f "$DIR/pids" ] && "$0" stop "$DIR"
rm -rf "$DIR"
mkdir -p "$DIR/logs" "$DIR/spool"
: >"$DIR/pids"
t0=$(date +%s)
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# daemon LOG CMD...: in its own session, output to LOG (ctest does not wait for it)
daemon() {
  local log=$1; shift
  setsid "$@" >"$log" 2>&1 </dev/null &
  echo $! >>"$DIR/pids"
}
HOSTS=(ddk-2003 sim-fleet-small-0 sim-fleet-small-1 sim-fleet-small-2 gone-1 bye-1 sim-b)
args=()
for n in "${HOSTS[@]}"; do args+=(--agent "$n"); done
"$SRC/deploy/pki.sh" "$DIR/pki" --collector-name localhost "${args[@]}" >"$DIR/logs/pki.log" 2>&1 ||
  { cat "$DIR/logs/pki.log"; exit 1; }
TOKEN=rd-$(openssl rand -hex 12)
printf '%s read vm-fleet\n' "$(printf '%s' "$TOKEN" | sha256sum | cut -d' ' -f1)" >"$DIR/tokens"
printf '%s' "$TOKEN" >"$DIR/token"

VMP=$(free_port)
BHP=$(free_port)
cat >"$DIR/scrape.yml" <<EOT
scrape_configs:
  - job_name: poolwatch
    scrape_interval: 2s
    scheme: https
    bearer_token_file: $DIR/token
    tls_config:
      ca_file: $DIR/pki/ca.pem
      server_name: localhost
    static_configs:
      - targets: ['127.0.0.1:$BHP']
EOT
daemon "$DIR/logs/vm.log" victoria-metrics -storageDataPath="$DIR/vm" -httpListenAddr=127.0.0.1:$VMP \
  -retentionPeriod=1y -search.latencyOffset=1s -promscrape.config="$DIR/scrape.yml"

collector() { # NAME REMOTE_WRITE_URL HTTP_PORT
  local ap
  ap=$(free_port)
  daemon "$DIR/logs/collector-$1.log" "$COLL" --agents.listen=127.0.0.1:$ap --store.path="$DIR/$1.db" \
    --agents.ca_file="$DIR/pki/ca.pem" --agents.cert_file="$DIR/pki/collector.pem" \
    --agents.key_file="$DIR/pki/collector.key" --http.listen=127.0.0.1:$3 \
    --http.tokens_file="$DIR/tokens" --remote_write.url="$2" --remote_write.interval=1s \
    --analysis.pooltag_file="$SRC/tests/fixtures/pooltag/pooltag_small.txt"
  echo "$ap" >"$DIR/agents-port-$1"
}
agent() { # COLLECTOR NAME SOURCE [flags]
  local ap name=$2 src=$3
  ap=$(cat "$DIR/agents-port-$1")
  shift 3
  daemon "$DIR/logs/agent-$name.log" "$AGENT" --agent.source="$src" --agent.host_name="$name" \
    --spool.dir="$DIR/spool/$name" --collector.endpoints=127.0.0.1:$ap \
    --collector.server_name=localhost --collector.ca_file="$DIR/pki/ca.pem" \
    --collector.cert_file="$DIR/pki/agent-$name.pem" --collector.key_file="$DIR/pki/agent-$name.key" "$@"
  echo $! >"$DIR/agent-$name.pid"
}
AHP=$(free_port)
collector a "http://127.0.0.1:$VMP/api/v1/write" "$AHP"
collector b "http://127.0.0.1:$(free_port)/api/v1/write" "$BHP"
for c in a b; do
  for _ in $(seq 1 100); do
    grep -q 'query API on' "$DIR/logs/collector-$c.log" 2>/dev/null && break
    sleep 0.1
  done
done
agent a ddk-2003 sim:ddk-2003 --agent.interval=60s --sim.backfill=14d
for i in 0 1 2; do
  agent a "sim-fleet-small-$i" "sim:fleet-small/$i" --agent.interval=10s --sim.backfill=6h
done
agent a gone-1 sim:fleet-small/5 --agent.interval=2s
agent a bye-1 sim:fleet-small/4 --agent.interval=2s
agent b sim-b sim:fleet-small/6 --agent.interval=2s

# q QUERY: the number of series VictoriaMetrics returns for an instant query
q() {
  curl -s -G --data-urlencode "query=$1" "http://127.0.0.1:$VMP/api/v1/query" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null || echo 0
}
ready() {
  [ "$(q 'poolwatch_pool_limit_bytes{host="ddk-2003",pool="nonpaged"}')" = 1 ] &&
    [ "$(q 'poolwatch_pool_exhaustion_seconds{host="ddk-2003",pool="nonpaged"}')" = 1 ] &&
    [ "$(q 'poolwatch_host_suspects{host="ddk-2003"} > 0')" = 1 ] &&
    [ "$(q 'count_over_time(poolwatch_pool_bytes{host="ddk-2003",pool="nonpaged"}[10m]) >= 2')" = 1 ] &&
    [ "$(q 'count(poolwatch_tag_bytes{host=~"sim-fleet-small-.*"} > 0)')" = 1 ] &&
    [ "$(q 'rate(poolwatch_remote_write_retries_total{job="poolwatch"}[1m]) > 0')" = 1 ] &&
    [ "$(q 'last_over_time(poolwatch_host_stopped{host="bye-1"}[10m]) == 1')" = 1 ]
}
# gone-1 dies without a word once VictoriaMetrics has its samples (a host that reported and
# went quiet); bye-1 is stopped cleanly (its agent says goodbye)
for _ in $(seq 1 600); do
  [ "$(q 'poolwatch_host_connected{host="gone-1"}')" = 1 ] &&
    [ "$(q 'poolwatch_host_connected{host="bye-1"}')" = 1 ] && break
  sleep 0.5
done
kill -9 "$(cat "$DIR/agent-gone-1.pid")"
kill "$(cat "$DIR/agent-bye-1.pid")"
for _ in $(seq 1 600); do
  ready && break
  sleep 1
done
cat >"$DIR/env" <<EOT
VM_URL=http://127.0.0.1:$VMP
COLLECTOR_A_URL=https://127.0.0.1:$AHP
TOKEN=$TOKEN
CA=$DIR/pki/ca.pem
GONE_HOST=gone-1
BYE_HOST=bye-1
EOT
if ! ready; then
  echo "FAIL VictoriaMetrics did not get the fleet's series within 600 s"
  for f in "$DIR"/logs/collector-*.log "$DIR/logs/vm.log"; do echo "--- $f"; tail -n 15 "$f"; done
  exit 1
fi
echo "ok   VictoriaMetrics holds the fleet's series ($(($(date +%s) - t0)) s)"
exit 0
