#!/usr/bin/env bash
# Installs every Debian package that poolwatch's build, tests, benchmarks and demo need.
# Idempotent and quiet when everything is present. Needs root (or sudo) only when
# something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev clang-format
  libuv1-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev openssl
  libcmocka-dev libsqlite3-dev sqlite3 libinih-dev libjansson-dev libzstd-dev libexpat1-dev
  libhttp-parser-dev libncurses-dev zlib1g-dev libsnappy-dev
  curl ca-certificates procps python3 tmux
  faketime # libfaketime: tests/fault steps agents' wall clocks back and ahead
  nodejs npm # the dashboard's npm packages (deploy/web-deps.sh, run by the build)
)
# Extra groups, asked for by the scripts that need them.
for arg in "$@"; do
  case "$arg" in
    --alertmanager) PKGS+=(prometheus-alertmanager) ;;
    --prometheus) PKGS+=(prometheus) ;; # test_remote_write_prom: a real remote write receiver
    --victoria-metrics) PKGS+=(victoria-metrics) ;; # bench_store beside the store; test_remote_write_vm, the scale-out demo
    --browser) PKGS+=(chromium nodejs npm) ;;
    --packages) PKGS+=(dpkg-dev file lintian mmdebstrap) ;; # tests/deb: cpack's shlibdeps, lintian, the Debian 12 root
    --windows) PKGS+=(gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 libz-mingw-w64-dev wine wine64 dpkg-dev zip tcl) ;; # tcl: SQLite's amalgamation
    *) echo "install-deps.sh: unknown group '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  # Some nodejs builds (NodeSource) bring npm and conflict with Debian's npm package.
  [ "$p" = npm ] && command -v npm >/dev/null && continue
  [[ "$st" == ii* ]] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists of a fresh machine may be missing or stale: refresh once, then retry.
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/pw-apt.log 2>&1; then
  $SUDO apt-get update -qq >>/tmp/pw-apt.log 2>&1
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/pw-apt.log 2>&1 ||
    { tail -n 30 /tmp/pw-apt.log >&2; echo "install-deps.sh: apt-get failed (log: /tmp/pw-apt.log)" >&2; exit 1; }
fi
