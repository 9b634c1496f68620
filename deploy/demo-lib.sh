# demo-lib.sh: what the demo scripts share (sourced by quickstart.sh and scale-demo.sh, which
# set DEMO, the demo's directory): the mode from the first argument (run, --detach, --stop,
# --help), stopping what a demo started (the pids in $DEMO/pids), starting a daemon with its log
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
    if [ -f "$DEMO/pids" ]; then stop_demo; echo "demo in $DEMO stopped."; else echo "no demo is running in $DEMO."; fi
    exit 0
  fi
  if [ -f "$DEMO/pids" ] && kill -0 "$(head -n1 "$DEMO/pids")" 2>/dev/null; then
    echo "a demo is already running in $DEMO ($script --stop first)" >&2
    exit 1
  fi
  # A detached demo runs its daemons in their own sessions (setsid: no controlling terminal,
  # so closing the terminal sends them no SIGHUP); a foreground run keeps them in its session
  # and stops them itself when the terminal goes away (demo_traps).
  SETSID=
  if [ "$MODE" = detach ] && command -v setsid >/dev/null 2>&1; then SETSID=setsid; fi
}

stop_demo() {
  [ -f "$DEMO/pids" ] || return 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$DEMO/pids"
  sleep 1
  while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$DEMO/pids"
  rm -f "$DEMO/pids"
}

start() { # name, then the command: its output in $DEMO/logs/NAME.log, its pid in $DEMO/pids
  local name=$1
  shift
  $SETSID "$@" >>"$DEMO/logs/$name.log" 2>&1 </dev/null &
  echo $! >>"$DEMO/pids"
}

# The terminal went away (SIGHUP) or the run was interrupted while starting: stop what was
# started. Nothing is printed on HUP: there is no terminal to print to.
demo_traps() {
  [ "$MODE" = run ] || return 0
  trap 'stop_demo; exit 129' HUP
  trap 'echo; echo "stopping..."; stop_demo; exit 130' INT
  trap 'stop_demo; exit 143' TERM
}
