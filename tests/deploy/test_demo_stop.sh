#!/usr/bin/env bash
# test_demo_stop.sh COLLECTOR SOURCE_DIR: how the demo scripts stop what they started
# (deploy/demo-lib.sh, sourced by quickstart.sh and scale-demo.sh; `quickstart.sh --stop`).
# A demo directory with the quickstart's collector configuration (store poolwatch.db, TLS
# from deploy/pki.sh, loopback ports from the OS), the real collector started through the
# library's `start`:
#  1. stop_demo waits for a clean exit: the collector exits 0 on its SIGTERM (logged) with its
#     WAL checkpointed (no -wal left, or an empty one), and a daemon of the demo that needs
#     3 s to exit (more than the 1 s the library used to give before kill -9) exits 0 too,
#     not killed; a PID of $DEMO/pids that now belongs to another program (a `sleep`, its
#     command line not naming the demo) is left alone and said so.
#  2. a collector restarted by hand (not in $DEMO/pids, whose PID is stale): a new demo start
#     is refused, naming the PID that holds the store; `--stop` stops that collector
#     (exit 0: SIGTERM, not SIGKILL) and says so.
#  3. a daemon of the demo that ignores SIGTERM is killed after POOLWATCH_STOP_TIMEOUT (1 s
#     here), said, and stop_demo returns 1.
#  4. the user stops the collector by hand (it logs that it stopped) and starts a demo again:
#     the previous demo's agents still running are stopped first and said, not orphaned.
#  5. a foreground demo (demo_foreground) whose collector is stopped by hand ends, says so and
#     stops its agents.
set -u
COLL=$1 SRC=$2
# shellcheck source=../check.sh
. "$SRC/tests/check.sh"
[ -r /proc/locks ] || { echo "FAIL /proc/locks is not readable (the demo library needs Linux /proc)"; exit 1; }
dir=$(mktemp -d /tmp/pw-demo-stop-XXXXXX)
bg=()
cleanup() {
    for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ "$fail" != 0 ]; then
        for f in "$dir"/demo/logs/*.log "$dir"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done
    fi
    [ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

DEMO=$dir/demo
mkdir -p "$DEMO/logs"
"$SRC/deploy/pki.sh" "$DEMO/pki" --collector-name localhost >"$dir/pki.out" 2>&1 ||
    { echo "FAIL pki.sh"; exit 1; }
TOKEN=$(openssl rand -hex 16)
printf '%s read demo-read\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" >"$DEMO/tokens"
cat >"$DEMO/collector.conf" <<EOF
[agents]
listen = 127.0.0.1:$(free_port)
ca_file = pki/ca.pem
cert_file = pki/collector.pem
key_file = pki/collector.key

[store]
path = poolwatch.db

[http]
listen = 127.0.0.1:$(free_port)
tokens_file = tokens
EOF

# shellcheck source=../../deploy/demo-lib.sh
. "$SRC/deploy/demo-lib.sh"
MODE=detach
SETSID=
: >"$DEMO/pids"
listening() { grep -q "agents: " "$DEMO/logs/collector.log" 2>/dev/null; }

# --- 1. a clean stop of what the demo started ---
start collector "$COLL" --config "$DEMO/collector.conf"
C1=$(tail -n1 "$DEMO/pids")
wait_for "the collector's listeners" 30 listening || exit 1
# a daemon of the demo (its command line names the demo directory) that takes 3 s to exit
start slow bash -c 'trap "sleep 3; exit 0" TERM; while :; do sleep 0.1; done' slow "$DEMO/slow"
SLOW=$(tail -n1 "$DEMO/pids")
# a PID of the file that is now another program's
sleep 300 &
OTHER=$!
bg+=("$OTHER")
echo "$OTHER" >>"$DEMO/pids"
sleep 0.5
stop_demo >"$dir/stop1.out" 2>&1
check "stop_demo: clean" 0 $?
wait "$C1"
check "the collector exited 0 on SIGTERM (not killed)" 0 $?
check "the collector logged SIGTERM" 1 "$(grep -c 'SIGTERM: stopping' "$DEMO/logs/collector.log")"
wal=0
[ -f "$DEMO/poolwatch.db-wal" ] && wal=$(stat -c %s "$DEMO/poolwatch.db-wal")
check "no WAL left by the collector's clean exit" 0 "$wal"
wait "$SLOW"
check "a daemon that needs 3 s to exit exits 0 (waited for, not killed)" 0 $?
kill -0 "$OTHER" 2>/dev/null
check "a PID that is not the demo's is left alone" 0 $?
check "and said so" 1 "$(grep -c "PID $OTHER of $DEMO/pids is not one of this demo's processes now: left alone" "$dir/stop1.out")"
check "nothing killed" 0 "$(grep -c 'killed' "$dir/stop1.out")"
check "the pids file is gone" no "$([ -e "$DEMO/pids" ] && echo yes || echo no)"

# --- 2. a collector restarted by hand ---
: >"$DEMO/pids"
start collector "$COLL" --config "$DEMO/collector.conf"
C1=$(tail -n1 "$DEMO/pids")
wait_for "the collector's listeners" 30 listening || exit 1
kill -TERM "$C1"
wait "$C1"
: >"$DEMO/logs/collector.log"
(cd "$DEMO" && exec "$COLL" --config collector.conf >>logs/collector.log 2>&1) &
C2=$!
bg+=("$C2")
wait_for "the hand-started collector's listeners" 30 listening || exit 1
check "the pids file names the old collector only" "$C1" "$(cat "$DEMO/pids")"
(demo_mode "$SRC/deploy/quickstart.sh" 2,16) >"$dir/start.out" 2>&1
check "a new start is refused while a collector holds the store" 1 $?
check "naming its PID" 1 "$(grep -c "a collector (PID $C2) holds the demo's store" "$dir/start.out")"
(demo_mode "$SRC/deploy/quickstart.sh" 2,16 --stop) >"$dir/stop2.out" 2>&1
check "--stop exits 0" 0 $?
check "--stop says it stops the hand-started collector" 1 \
    "$(grep -c "stopping the collector that holds the demo's store (PID $C2, not started by this demo)" "$dir/stop2.out")"
check "--stop: demo stopped" 1 "$(grep -c "demo in $DEMO stopped." "$dir/stop2.out")"
wait "$C2"
check "the hand-started collector exited 0 on SIGTERM (not killed)" 0 $?
(demo_mode "$SRC/deploy/quickstart.sh" 2,16 --stop) >"$dir/stop3.out" 2>&1
check "--stop again: nothing running" 1 "$(grep -c "no demo is running in $DEMO." "$dir/stop3.out")"

# --- 3. a daemon that ignores SIGTERM ---
: >"$DEMO/pids"
start stubborn bash -c 'trap "" TERM; while :; do sleep 0.1; done' stubborn "$DEMO/stubborn"
ST=$(tail -n1 "$DEMO/pids")
sleep 0.3
POOLWATCH_STOP_TIMEOUT=1 stop_demo >"$dir/stop4.out" 2>&1
check "stop_demo says when it had to kill" 1 $?
{ wait "$ST"; } 2>/dev/null
check "the daemon that ignored SIGTERM was killed" 137 $?
check "and said so" 1 "$(grep -c "PID $ST (bash -c .*) did not exit within 1 s of SIGTERM: killed" "$dir/stop4.out")"

# --- 4. a new start after the user stopped the collector by hand ---
: >"$DEMO/pids"
: >"$DEMO/logs/collector.log"
start collector "$COLL" --config "$DEMO/collector.conf"
C1=$(tail -n1 "$DEMO/pids")
wait_for "the collector's listeners" 30 listening || exit 1
# two of the demo's agents (their command lines name the demo directory), retrying for ever
agent_loop='trap "exit 0" TERM; while :; do sleep 0.1; done'
start agent-a bash -c "$agent_loop" agent "$DEMO/spool/a"
A1=$(tail -n1 "$DEMO/pids")
start agent-b bash -c "$agent_loop" agent "$DEMO/spool/b"
A2=$(tail -n1 "$DEMO/pids")
kill -TERM "$C1"
wait "$C1"
check "the collector stopped by hand exits 0" 0 $?
check "it logged that it stopped, last" 1 \
    "$(tail -n 1 "$DEMO/logs/collector.log" | grep -c "\] stopped: store .*poolwatch.db closed$")"
(demo_mode "$SRC/deploy/quickstart.sh" 2,16 --detach) >"$dir/start2.out" 2>&1
check "a new --detach start goes on" 0 $?
check "it says it stops the previous demo's agents" 1 \
    "$(grep -c "^the previous demo's collector is gone; stopping its 2 process(es) still running$" "$dir/start2.out")"
bg+=("$A1" "$A2") # killed by the cleanup if still running
orphans_gone() { ! demo_alive "$A1" && ! demo_alive "$A2"; }
if orphans_gone; then
    wait "$A1"
    check "the first orphan agent was stopped (SIGTERM, exit 0)" 0 $?
    wait "$A2"
    check "the second orphan agent was stopped (SIGTERM, exit 0)" 0 $?
else
    check "the previous demo's agents were stopped" "stopped" "still running"
fi
check "the pids file is gone, for the new demo's list" no "$([ -e "$DEMO/pids" ] && echo yes || echo no)"

# --- 5. a foreground demo whose collector is stopped by hand ---
# demo_foreground (the quickstart without --detach) waits on the collector; stopped by hand, it
# ends the demo: it says so, with the collector's last log line and --detach for a restart by
# hand, stops the agents (SIGTERM, exit 0) and returns 1.
MODE=run
: >"$DEMO/pids"
: >"$DEMO/logs/collector.log"
start collector "$COLL" --config "$DEMO/collector.conf"
C1=$(tail -n1 "$DEMO/pids")
wait_for "the collector's listeners" 30 listening || exit 1
start agent-a bash -c "$agent_loop" agent "$DEMO/spool/a"
A1=$(tail -n1 "$DEMO/pids")
bg+=("$A1")
(demo_foreground) >"$dir/fg.out" 2>&1 &
FG=$!
bg+=("$FG")
sleep 1.5
kill -TERM "$C1"
wait "$C1"
wait "$FG"
check "a foreground demo whose collector was stopped ends (exit 1)" 1 $?
check "it says the demo ends with the collector and its agents are stopped" 1 \
    "$(grep -c "^the collector (PID $C1) exited: the demo ends with it, its agents are stopped now.$" "$dir/fg.out")"
check "with the collector's last log line" 1 \
    "$(grep -c "(last line: .*stopped: store .*poolwatch.db closed)$" "$dir/fg.out")"
check "and --detach for a restart by hand" 1 "$(grep -c "with --detach the agents keep" "$dir/fg.out")"
check "and that the demo stopped" 1 "$(grep -c "^demo in $DEMO stopped.$" "$dir/fg.out")"
if demo_alive "$A1"; then
    check "the agent was stopped" "stopped" "still running"
else
    wait "$A1"
    check "the agent was stopped (SIGTERM, exit 0)" 0 $?
fi

if [ "$fail" = 0 ]; then echo "all checks passed"; fi
finish
