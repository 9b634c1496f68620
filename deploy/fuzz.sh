#!/usr/bin/env bash
# Long libFuzzer runs (issue 15; the test command only replays the corpora): builds the `fuzz`
# preset (clang -fsanitize=fuzzer,address,undefined) and runs each target ONE AT A TIME under
# nice -n 19, from its committed corpus (tests/fuzz/corpus/<name>), until --runs executions or
# --max-time seconds, whichever comes first. Inputs that reached new coverage are merged,
# minimised (-merge=1: only those adding coverage to the whole corpus), into
# tests/fuzz/corpus/<name>/grown/ for a commit. Prints one line per target:
#   FUZZ <name> executions <N> seconds <S> findings <F>
# Findings (crash, leak, timeout, out-of-memory inputs) are left in build/fuzz/findings/<name>/
# and make the script exit 1; a finding's input belongs in the corpus once the bug is fixed.
# Usage: deploy/fuzz.sh [--runs N] [--max-time SECONDS] [TARGET ...]
#   (default: every target of tests/fuzz, 10,000,000 runs, 1,500 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=10000000
MAX_TIME=1500
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    -*) echo "usage: deploy/fuzz.sh [--runs N] [--max-time SECONDS] [TARGET ...]" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
if [ ${#TARGETS[@]} -eq 0 ]; then
  for c in tests/fuzz/fuzz_*.c; do n=${c#tests/fuzz/fuzz_}; TARGETS+=("${n%.c}"); done
fi
cmake --preset fuzz >/dev/null
nice -n 19 cmake --build build/fuzz --target pw_fuzzers -j2 >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${TARGETS[@]}"; do
  bin=build/fuzz/tests/fuzz/fuzz_$t
  corpus=tests/fuzz/corpus/$t
  [ -x "$bin" ] && [ -d "$corpus" ] || { echo "deploy/fuzz.sh: no target or corpus for '$t'" >&2; exit 2; }
  work=build/fuzz/run/$t
  findings=build/fuzz/findings/$t
  rm -rf "$work"
  mkdir -p "$work/new" "$work/base" "$findings"
  start=$(date +%s)
  rc=0
  nice -n 19 "$bin" -runs="$RUNS" -max_total_time="$MAX_TIME" -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$work/new" "$corpus" >"$work/log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
  found=$(find "$findings" -type f | wc -l)
  # the whole committed corpus, by content, as the base; what the merge adds to it is new
  find "$corpus" -type f -exec sh -c 'cp "$1" "$2/$(sha1sum <"$1" | cut -c1-40)"' _ {} "$work/base" \;
  ls "$work/base" | sort >"$work/before"
  nice -n 19 "$bin" -merge=1 -timeout=25 "$work/base" "$work/new" >>"$work/log" 2>&1
  ls "$work/base" | sort | comm -13 "$work/before" - | while read -r f; do
    mkdir -p "$corpus/grown"
    cp "$work/base/$f" "$corpus/grown/$f"
  done
  added=$(ls "$work/base" | sort | comm -13 "$work/before" - | wc -l)
  echo "FUZZ $t executions ${execs:-?} seconds $secs findings $found (exit $rc; $added inputs added to $corpus/grown)"
  if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
    status=1
    tail -n 40 "$work/log" >&2
  fi
done
exit $status
