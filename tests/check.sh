# check.sh: sourced by the shell tests. check NAME EXPECTED ACTUAL prints ok/FAIL and sets
# fail=1 on a mismatch; the test ends with `finish`: exit 1 on a failure, 77 when nothing failed
# but a part was skipped (ctest's SKIP_RETURN_CODE: reported as skipped, not passed), else 0.
fail=0
skipped=
check() {
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: expected [$2] got [$3]"
        fail=1
    else
        echo "ok   $1"
    fi
}

# skip_part WHY: a part of the test cannot run here. With CI=true that is a failure.
skip_part() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL skipped under CI=true (a skip is a failure in CI): $*"
        fail=1
    else
        echo "SKIPPED: $*"
        skipped=1
    fi
}

# wait_for WHAT TIMEOUT_S COMMAND...: runs COMMAND every 0.1 s until it succeeds; after
# TIMEOUT_S seconds prints "FAIL timed out after N s waiting for WHAT", sets fail=1, returns 1.
wait_for() {
    _what=$1 _limit=$(($2 * 10)) _i=0
    shift 2
    until "$@"; do
        _i=$((_i + 1))
        if [ $_i -ge $_limit ]; then
            echo "FAIL timed out after $((_limit / 10)) s waiting for $_what"
            fail=1
            return 1
        fi
        sleep 0.1
    done
}

finish() {
    [ "$fail" -ne 0 ] && exit 1
    [ -n "$skipped" ] && exit 77
    exit 0
}

# check_stops NAME PID LOG: the daemon PID is still running, then stops on SIGTERM with exit 0,
# logs "SIGTERM: stopping" in LOG and, as its last line, that it stopped ("[agent] stopped",
# "[collector] stopped: store ... closed").
check_stops() {
    kill -0 "$2" 2>/dev/null
    check "$1 still running" 0 $?
    kill -TERM "$2"
    wait "$2"
    check "$1 stops on SIGTERM" 0 $?
    check "$1 logged SIGTERM" 1 "$(grep -c 'SIGTERM: stopping' "$3")"
    check "$1 logged that it stopped, last" 1 "$(tail -n 1 "$3" | grep -cE '\] stopped(: store .* closed)?$')"
}
