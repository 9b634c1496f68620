#!/usr/bin/env bash
# The bench command: release build, then runs the benchmarks of tests/bench/ named by the given
# NAMEs (all when none). A NAME that is a benchmark's whole name runs that benchmark only
# (`detect` is bench_detect, not detect_scale too); any other NAME runs every benchmark whose
# name starts with it (`detect_` runs detect_scale, `st` store). Each prints
# `BENCH <name> <value> <unit>`. Benchmarks are measurements, not tests: they never fail on a
# figure.
set -euo pipefail
cd "$(dirname "$0")/.."
# bench_store runs Debian's VictoriaMetrics beside the store (PW_BENCH_VM=0: poolwatch only;
# PW_BENCH_SMALL=1: 4 hosts x 1 h and 2 days instead of 20 x 3 h and 7 days); bench_global
# (the global fleet view) and bench_collector's export run (PW_BENCH_FLEET_EXPORT=1) use it too.
want_vm=0
[ $# -eq 0 ] && want_vm=1
for want in "$@"; do [[ "store" == "$want"* || "global" == "$want"* ]] && want_vm=1; done
if [ $want_vm -eq 1 ] && [ "${PW_BENCH_VM:-1}" != 0 ]; then
  ./deploy/install-deps.sh --victoria-metrics
else
  ./deploy/install-deps.sh
fi
JOBS=$(nproc 2>/dev/null || echo 2)
cmake --preset release -DPW_BUILD_BENCH=ON >/dev/null
cmake --build build/release -j"$JOBS" >/dev/null
status=0
# bench_<NAME> binaries (not their object directories or sources)
is_bench() { [ -f "build/release/tests/bench/bench_$1" ] && [ -x "build/release/tests/bench/bench_$1" ]; }
for exe in build/release/tests/bench/bench_*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name=$(basename "$exe"); name=${name#bench_}
  if [ $# -gt 0 ]; then
    keep=0
    for want in "$@"; do
      if is_bench "$want"; then [[ "$name" == "$want" ]] && keep=1
      else [[ "$name" == "$want"* ]] && keep=1; fi
    done
    [ $keep -eq 1 ] || continue
  fi
  echo "# bench $name" >&2
  "$exe" || { echo "bench $name exited with $?" >&2; status=1; }
done
exit $status
