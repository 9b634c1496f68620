# demo-lib.sh: what the demo scripts share (sourced by quickstart.sh and scale-demo.sh, which
# set DEMO, the demo's directory): the mode from the first argument (run, --detach, --stop,
# --help), stopping what a demo started (the pids in $DEMO/pids, and a collector holding the
# demo's store, also one restarted by hand), starting a daemon with its log
# in $DEMO/logs, and the traps of a foreground run.

# demo_mode SCRIPT HELP_LINES "$@": sets MODE; --help prints the script's header lines; --stop
# stops a detached demo and exits; a demo already running is refused.
demo_mode() {
  local script=$1 help=$2
  shift 2
  MODE=run
  case "${1:-}" in
    "") ;;
    --detach) MODE=detach ;;
    --stop) MODE=stop ;;
    -h|--help) sed -n "${help}p" "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$(basename "$script"): unknown argument '$1' (use --detach, --stop or nothing)" >&2; exit 2 ;;
  esac
  if [ "$MODE" = stop ]; then
    if [ -f "$DEMO/pids" ] || [ -n "$(demo_store_holders)" ]; then
      stop_demo || { echo "demo in $DEMO stopped, not cleanly (above)." >&2; exit 1; }
      echo "demo in $DEMO stopped."
    else
      echo "no demo is running in $DEMO."
    fi
    exit 0
  fi
  local p
  if [ -f "$DEMO/pids" ]; then
    p=$(head -n1 "$DEMO/pids")
    if [ -n "$p" ] && demo_alive "$p" && demo_ours "$p"; then
      echo "a demo is already running in $DEMO ($script --stop first)" >&2
      exit 1
    fi
  fi
  p=$(demo_store_holders)
  if [ -n "$p" ]; then
    echo "a collector (PID $(echo $p)) holds the demo's store in $DEMO (started by hand?);" \
      "$script --stop stops it" >&2
    exit 1
  fi
  # The previous demo's collector is gone (stopped by hand, or it died) but its agents may
  # still run, retrying: a new start would lose their PIDs (the list is rewritten) and leave
  # them orphaned, streaming into the new collector from spools it removes. Stop them first.
  if [ -f "$DEMO/pids" ]; then
    local left=0
    while read -r p; do
      [ -n "$p" ] && demo_alive "$p" && demo_ours "$p" && left=$((left + 1))
    done <"$DEMO/pids"
    if [ "$left" -gt 0 ]; then
      echo "the previous demo's collector is gone; stopping its $left process(es) still running"
      stop_demo || echo "(not all of them exited cleanly: above)" >&2
    fi
  fi
  # A detached demo runs its daemons in their own sessions (setsid: no controlling terminal,
  # so closing the terminal sends them no SIGHUP); a foreground run keeps them in its session
  # and stops them itself when the terminal goes away (demo_traps).
  SETSID=
  if [ "$MODE" = detach ] && command -v setsid >/dev/null 2>&1; then SETSID=setsid; fi
}

# demo_alive PID: the process exists and has not exited (a zombie, a child of this shell that
# exited and was not reaped yet, counts as exited).
demo_alive() {
  local st
  [ -r "/proc/$1/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# demo_cmdline PID: the process' command line, arguments separated by spaces.
demo_cmdline() {
  { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true
}

# demo_ours PID: a process this demo started: every daemon the demo scripts start names the
# demo's directory in its arguments (--config, --spool.dir, -storageDataPath). A PID of
# $DEMO/pids that is now another program's (the demo ended, the PID was reused) is not ours.
demo_ours() {
  case " $(demo_cmdline "$1")" in
    *"$DEMO/"*) return 0 ;;
  esac
  return 1
}

# demo_has_open PID FILE: the process has FILE open (an inode number alone could be another
# file system's).
demo_has_open() {
  local fd want
  want=$(readlink -f "$2") || return 1
  for fd in /proc/"$1"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$want" ] && return 0
  done
  return 1
}

# demo_store_holders: the PIDs of the poolwatch collectors that hold a store lock in $DEMO
# (<store.path>.lock, a POSIX record lock: /proc/locks names the holder by the lock file's
# inode), including a collector the user restarted by hand, whose PID $DEMO/pids does not have.
demo_store_holders() {
  local f ino pid
  [ -r /proc/locks ] || return 0
  for f in "$DEMO"/*.db.lock "$DEMO"/*/*.db.lock; do
    [ -f "$f" ] || continue
    ino=$(stat -c %i "$f" 2>/dev/null) || continue
    for pid in $(awk -v ino="$ino" '$2 == "POSIX" { n = split($6, a, ":"); if (a[n] == ino) print $5 }' /proc/locks | sort -u); do
      case "$(demo_cmdline "$pid")" in
        *poolwatch-collector*) if demo_has_open "$pid" "$f"; then echo "$pid"; fi ;;
      esac
    done
  done
  return 0
}

# stop_demo: stops what the demo started (the PIDs of $DEMO/pids still running that are ours)
# and any collector holding the demo's store: SIGTERM, then waits up to
# POOLWATCH_STOP_TIMEOUT seconds (15) for them to exit cleanly (a collector checkpoints its
# store's WAL, agents say goodbye); only what is still running then, and still ours, is
# killed (SIGKILL), and said. A PID that is not ours is left alone. Returns 1 when something
# had to be killed or could not be stopped.
stop_demo() {
  local pid pids="" holders left="" rc=0 i timeout=${POOLWATCH_STOP_TIMEOUT:-15}
  if [ -f "$DEMO/pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] || continue
      demo_alive "$pid" || continue
      if demo_ours "$pid"; then
        pids="$pids $pid"
      else
        echo "PID $pid of $DEMO/pids is not one of this demo's processes now: left alone" >&2
      fi
    done <"$DEMO/pids"
  fi
  holders=$(demo_store_holders)
  for pid in $holders; do
    case " $pids " in
      *" $pid "*) ;;
      *) echo "stopping the collector that holds the demo's store (PID $pid, not started by this demo)"
        pids="$pids $pid" ;;
    esac
  done
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < timeout * 10; i++)); do
    left=""
    for pid in $pids; do demo_alive "$pid" && left="$left $pid"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for pid in $left; do
    if demo_alive "$pid" && { demo_ours "$pid" || case " $holders " in *" $pid "*) true ;; *) false ;; esac; }; then
      echo "PID $pid ($(demo_cmdline "$pid" | cut -c1-80)) did not exit within ${timeout} s of SIGTERM: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rc=1
    fi
  done
  rm -f "$DEMO/pids"
  return $rc
}

start() { # name, then the command: its output in $DEMO/logs/NAME.log, its pid in $DEMO/pids
  local name=$1
  shift
  $SETSID "$@" >>"$DEMO/logs/$name.log" 2>&1 </dev/null &
  echo $! >>"$DEMO/pids"
}

# A foreground demo lives with its collector (the first PID of $DEMO/pids): Ctrl-C or the
# terminal going away stops everything; a collector that exits (stopped by hand, or failed)
# ends the demo too, and that is said, with what is stopped and how to restart a collector by
# hand (--detach). Returns 1 when the collector exited.
demo_foreground() {
  local coll
  coll=$(head -n1 "$DEMO/pids")
  echo "Press Ctrl-C to stop the demo (the collector and every agent). To stop and restart the"
  echo "collector by hand while the agents keep running, start the demo with --detach instead."
  trap 'echo; echo "stopping..."; stop_demo || true; exit 0' INT TERM
  trap 'stop_demo || true; exit 0' HUP
  while kill -0 "$coll" 2>/dev/null; do sleep 1; done
  echo "the collector (PID $coll) exited: the demo ends with it, its agents are stopped now." >&2
  echo "  its log: $DEMO/logs/collector.log (last line: $(tail -n 1 "$DEMO/logs/collector.log" 2>/dev/null))" >&2
  echo "  a collector stopped by hand ends a foreground demo; with --detach the agents keep" >&2
  echo "  running and wait for a collector restarted by hand (README, \"Set-up commands\")." >&2
  stop_demo || true
  echo "demo in $DEMO stopped." >&2
  return 1
}

# The terminal went away (SIGHUP) or the run was interrupted while starting: stop what was
# started. Nothing is printed on HUP: there is no terminal to print to.
demo_traps() {
  [ "$MODE" = run ] || return 0
  trap 'stop_demo || true; exit 129' HUP
  trap 'echo; echo "stopping..."; stop_demo || true; exit 130' INT
  trap 'stop_demo || true; exit 143' TERM
}
