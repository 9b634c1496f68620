#!/bin/sh
# test_dashboard.sh COLLECTOR AGENT SOURCE_DIR OUT_DIR: the web dashboard end to end. Starts a
# collector and agents (fleet.sh), then drives Debian's chromium with playwright-core
# (test_dashboard.js). Screenshots go to OUT_DIR (dashboard_*.png). KEEP=1 keeps the work dir.
set -u
COLL=$1 AGENT=$2 SRC=$3 OUT=$4
command -v node >/dev/null || { echo "FAIL node is missing (deploy/install-deps.sh --browser)"; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "FAIL chromium is missing (deploy/install-deps.sh --browser)"; exit 1; }
"$SRC/deploy/web-deps.sh" || exit 1
dir=$(mktemp -d /tmp/pw-dash-test-XXXXXX)
cleanup() {
    [ -f "$dir/pids" ] && for p in $(cat "$dir/pids"); do kill "$p" 2>/dev/null; done
    if [ -n "${KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
bash "$SRC/tests/web/fleet.sh" "$COLL" "$AGENT" "$SRC" "$dir" || { echo "FAIL fleet.sh"; exit 1; }
mkdir -p "$OUT"
NODE_EXTRA_CA_CERTS=$dir/pki/ca.pem node "$SRC/tests/web/test_dashboard.js" "$dir/env" "$OUT"
rc=$?
[ $rc -eq 0 ] || { echo "--- collector log"; tail -n 20 "$dir/logs/collector.log"; }
exit $rc
