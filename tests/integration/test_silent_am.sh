#!/usr/bin/env bash
# test_silent_am.sh COLLECTOR AGENT SOURCE_DIR: HostSilent end to end, through a real
# Alertmanager (Debian's prometheus-alertmanager on a loopback port, as test_notify starts it).
# A collector with [alerts] silent_after = 5s sends to it; two simulated agents stream every
# second. One is killed (SIGKILL: no goodbye), the other stopped (SIGTERM: it says Goodbye).
#  - the killed host fires HostSilent: read back from Alertmanager's GET /api/v2/alerts with its
#    labels (alertname, host, pool "silent", severity) and the collector's /api/v1/alerts; the
#    API says connection "silent";
#  - the stopped host never does: connection "stopped", stop_reason "SIGTERM", its agent logged
#    the goodbye and the collector the stop; /metrics has poolwatch_host_stopped 1 for it, 0 for
#    the killed one;
#  - the killed agent started again: the alert resolves (endsAt in Alertmanager, state resolved
#    in the API) and the host is "streaming".
# The analysis runs every 30 s: about 70 s in all.
set -u
COLL=$1 AGENT=$2 SRC=$3
# shellcheck source=../check.sh
. "$SRC/tests/check.sh"
AM=
for b in /usr/bin/prometheus-alertmanager /usr/local/bin/alertmanager /usr/bin/alertmanager; do
    [ -x "$b" ] && AM=$b && break
done
[ -n "$AM" ] || { echo "FAIL prometheus-alertmanager not installed (deploy/install-deps.sh --alertmanager)"; exit 1; }
dir=$(mktemp -d /tmp/pw-silent-am-XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ "$fail" != 0 ]; then
        echo "--- collector log"; tail -n 30 "$dir/collector.log"
    fi
    [ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Alertmanager: a null receiver, its own storage, no cluster.
AMP=$(free_port)
mkdir -p "$dir/am"
printf "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n" >"$dir/am.yml"
"$AM" --config.file="$dir/am.yml" --web.listen-address=127.0.0.1:$AMP --storage.path="$dir/am" \
    --cluster.listen-address= >"$dir/am.log" 2>&1 &
pids+=($!)
am_ready() { curl -fsS "http://127.0.0.1:$AMP/-/ready" >/dev/null 2>&1; }
wait_for "alertmanager ready" 30 am_ready || exit 1

"$SRC/deploy/pki.sh" "$dir/pki" --collector-name localhost --agent silent-a --agent silent-b \
    >"$dir/pki.log" 2>&1 || { echo "FAIL pki.sh"; exit 1; }
READ=read-$(openssl rand -hex 12)
printf '%s read silent-test\n' "$(printf '%s' "$READ" | sha256sum | cut -d' ' -f1)" >"$dir/tokens"
AP=$(free_port)
HP=$(free_port)
"$COLL" --agents.listen=127.0.0.1:$AP --store.path="$dir/pw.db" \
    --agents.ca_file="$dir/pki/ca.pem" --agents.cert_file="$dir/pki/collector.pem" \
    --agents.key_file="$dir/pki/collector.key" --http.listen=127.0.0.1:$HP \
    --http.tokens_file="$dir/tokens" --alerts.alertmanager_url=http://127.0.0.1:$AMP \
    --alerts.silent_after=5s >"$dir/collector.log" 2>&1 &
pids+=($!)
api() { curl -fsS --cacert "$dir/pki/ca.pem" -H "Authorization: Bearer $READ" "https://localhost:$HP$1" --resolve "localhost:$HP:127.0.0.1"; }
api_up() { api /api/v1/hosts >/dev/null 2>&1; }
wait_for "collector API" 30 api_up || exit 1

agent() { # name sim-host: starts it in the background, its pid in $last
    "$AGENT" --agent.source="sim:fleet-small/$2" --agent.host_name="$1" --spool.dir="$dir/spool-$1" \
        --collector.endpoints=127.0.0.1:$AP --collector.server_name=localhost \
        --collector.ca_file="$dir/pki/ca.pem" --collector.cert_file="$dir/pki/agent-$1.pem" \
        --collector.key_file="$dir/pki/agent-$1.key" --agent.interval=1s >>"$dir/agent-$1.log" 2>&1 &
    last=$!
    pids+=("$last")
}
agent silent-a 0
A=$last
agent silent-b 1
B=$last
# jq-free reads of the API: python's json
host_field() { # name field
    api /api/v1/hosts | python3 -c "import json,sys; h=[x for x in json.load(sys.stdin)['hosts'] if x['name']=='$1']; print(h[0].get('$2') if h else '')"
}
both_streaming() { [ "$(host_field silent-a connection)" = streaming ] && [ "$(host_field silent-b connection)" = streaming ] &&
    [ "$(host_field silent-a samples)" -ge 3 ] && [ "$(host_field silent-b samples)" -ge 3 ]; }
wait_for "both agents streaming" 60 both_streaming || exit 1

kill -KILL "$A"
{ wait "$A"; } 2>/dev/null # (bash would report the kill)
kill -TERM "$B"
wait "$B"
check "SIGTERM: the agent exits 0" 0 $?
check "the stopped agent said goodbye" 1 "$(grep -c 'goodbye sent to .* (SIGTERM)' "$dir/agent-silent-b.log")"
stopped() { [ "$(host_field silent-b connection)" = stopped ]; }
wait_for "silent-b stopped" 10 stopped
check "collector logged the stop" 1 "$(grep -c 'silent-b: agent stopped (SIGTERM): goodbye' "$dir/collector.log")"
check "stop reason in the API" SIGTERM "$(host_field silent-b stop_reason)"
# /metrics: what the Prometheus rules' HostSilent reads (poolwatch_host_stopped: 1 for the
# clean stop only)
metric() { api /metrics | grep -F "$1 " | cut -d' ' -f2; }
check "/metrics: silent-b stopped" 1 "$(metric 'poolwatch_host_stopped{host="silent-b"}')"
check "/metrics: silent-a (killed) not stopped" 0 "$(metric 'poolwatch_host_stopped{host="silent-a"}')"
check "/metrics: silent-b not connected" 0 "$(metric 'poolwatch_host_connected{host="silent-b"}')"

# Alertmanager's view: HostSilent of silent-a, labels as the collector sends them.
am_alert() { # host -> "alertname host pool severity state endsAt" of its HostSilent, or nothing
    curl -fsS "http://127.0.0.1:$AMP/api/v2/alerts" | python3 -c "
import json,sys
for a in json.load(sys.stdin):
    l=a['labels']
    if l.get('alertname')=='HostSilent' and l.get('host')=='$1':
        print(l['alertname'], l['host'], l.get('pool'), l.get('severity'), a['status']['state'], a['endsAt'])"
}
am_has_a() { [ -n "$(am_alert silent-a)" ]; }
wait_for "HostSilent of silent-a in Alertmanager" 75 am_has_a
read -r an ah ap asev ast _ <<<"$(am_alert silent-a)"
check "Alertmanager: alertname, host, pool" "HostSilent silent-a silent" "$an $ah $ap"
check "Alertmanager: severity (the sim's pool is far below warn)" warning "$asev"
check "Alertmanager: active" active "$ast"
check "Alertmanager: no HostSilent for the host that said goodbye" "" "$(am_alert silent-b)"
check "API: silent-a is silent" silent "$(host_field silent-a connection)"
check "API: silent-b is still stopped" stopped "$(host_field silent-b connection)"
alerts_of() { # host -> "name state" of its HostSilent alerts in /api/v1/alerts
    api /api/v1/alerts | python3 -c "
import json,sys
for a in json.load(sys.stdin)['alerts']:
    if a['name']=='HostSilent' and a['labels']['host']=='$1': print(a['name'], a['state'])"
}
check "API alerts: silent-a firing" "HostSilent firing" "$(alerts_of silent-a)"
check "API alerts: nothing for silent-b" "" "$(alerts_of silent-b)"

# silent-a comes back: resolved at the next pass, Alertmanager gets endsAt.
agent silent-a 0
resolved() { [ "$(alerts_of silent-a)" = "HostSilent resolved" ]; }
wait_for "HostSilent of silent-a resolved" 75 resolved
check "API: silent-a streaming again" streaming "$(host_field silent-a connection)"
am_resolved() { # endsAt set and not after now: Alertmanager lists it resolved or not at all
    s=$(am_alert silent-a)
    [ -z "$s" ] || python3 -c "
import sys,datetime
e=datetime.datetime.fromisoformat(sys.argv[1].replace('Z','+00:00'))
sys.exit(0 if e <= datetime.datetime.now(datetime.timezone.utc) else 1)" "$(echo "$s" | cut -d' ' -f6)"
}
wait_for "Alertmanager: silent-a resolved" 20 am_resolved
check "Alertmanager got the resolution" 1 "$(grep -c 'alert silent-a silent warning: firing -> resolved' "$dir/collector.log")"
if [ "$fail" = 0 ]; then echo "all checks passed"; fi
finish
