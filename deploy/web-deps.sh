#!/usr/bin/env bash
# Installs the dashboard's npm packages (web/package.json, exact versions from
# web/package-lock.json) into web/node_modules with `npm ci`: uPlot, whose dist files the
# collector embeds (collector/CMakeLists.txt), and playwright-core, which drives Debian's
# chromium in tests/web (no browser download: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD, --ignore-scripts).
# Fast and silent when node_modules already matches the lock file; safe to run from parallel
# builds (flock). Called by deploy/install-deps.sh and by the build when node_modules is missing.
# `web-deps.sh DIR` does the same for another package of the repository (DIR relative to its
# top, e.g. tests/grafana: @grafana/schema and typescript for the Grafana dashboard's test).
set -euo pipefail
WEB=$(cd "$(dirname "$0")/../${1:-web}" && pwd)
LOCK=$WEB/package-lock.json
STAMP=$WEB/node_modules/.poolwatch-lock.sha256
want=$(sha256sum "$LOCK" | cut -d' ' -f1)
up_to_date() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] &&
  { [ -n "${1:-}" ] || [ -f "$WEB/node_modules/uplot/dist/uPlot.iife.min.js" ]; }; }
up_to_date "${1:-}" && exit 0
command -v npm >/dev/null || { echo "web-deps.sh: npm is missing (deploy/install-deps.sh installs nodejs npm)" >&2; exit 1; }
exec 9>"$WEB/.npm.lock"
flock 9
up_to_date "${1:-}" && exit 0
echo "web-deps.sh: npm ci in $WEB" >&2
cd "$WEB"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
echo "$want" >"$STAMP"
