#!/bin/sh
# test_deb.sh SOURCE_DIR: the Debian packages (cmake/DebianPackages.cmake), end to end.
#   1. builds them: the `deb` preset (release, prefix /usr) in SOURCE_DIR/build/deb, cpack -G DEB;
#   2. lintian: no error (warnings are printed);
#   3. a clean Debian 12 root made by mmdebstrap (variant apt) from the machine's own apt
#      sources, cached as a tarball in $PW_DEB_ROOT_CACHE (default /var/cache/poolwatch-test):
#      made once per machine (and again when the apt sources change), unpacked for each run;
#      the .debs that apt fetches for the packages' dependencies are cached beside it;
#   4. `apt-get install ./poolwatch*.deb` in that root (chroot), then in it: each binary's
#      --version; the README's install steps (the packaged /usr/share/poolwatch/pki.sh into
#      /etc/poolwatch/pki, --new-token into /etc/poolwatch/tokens); --check-config of the
#      collector with the packaged collector.conf as it is (as root, then as the package's user
#      "poolwatch" with the key as LoadCredential= hands it over) and of the agent;
#      the CLI's parse of a fixture; the conffiles, man pages, units, user and directories the
#      packages declare, their copyright file (LICENSE's text) and Maintainer; then dpkg
#      --purge removes them and their directories.
# Needs root (chroot). Installs mmdebstrap, lintian, dpkg-dev when missing
# (deploy/install-deps.sh --packages). KEEP=1 keeps the root.
SRC=$(cd "$1" && pwd)
. "$SRC/tests/check.sh"
if [ "$(id -u)" -ne 0 ]; then
    skip_part "the package test needs root (chroot, mmdebstrap)"
    finish
fi
"$SRC/deploy/install-deps.sh" --packages || { echo "FAIL deploy/install-deps.sh --packages"; exit 1; }
t0=$(date +%s)
work=$(mktemp -d /tmp/pw-deb-test-XXXXXX)
root=$work/root
cleanup() {
    mountpoint -q "$root/proc" 2>/dev/null && umount "$root/proc"
    if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

# 1. the packages
B=$SRC/build/deb
rm -f "$B"/*.deb
if ! (cd "$SRC" && cmake --preset deb >"$work/build.log" 2>&1 &&
      cmake --build build/deb -j2 >>"$work/build.log" 2>&1 &&
      cd build/deb && cpack -G DEB >>"$work/build.log" 2>&1); then
    tail -n 30 "$work/build.log"
    echo "FAIL the packages did not build (log above)"
    exit 1
fi
V=$(sed -n 's/^project(poolwatch VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
for p in poolwatch-agent poolwatch-collector poolwatch; do
    check "$p package built" 1 "$(ls "$B"/${p}_${V}_*.deb 2>/dev/null | wc -l)"
done
t_build=$(date +%s)

# 2. lintian
lintian --fail-on error --tag-display-limit 0 "$B"/*.deb >"$work/lintian.log" 2>&1
rc=$?
cat "$work/lintian.log"
check "lintian: no error" 0 $rc
check "lintian: error tags" 0 "$(grep -c '^E:' "$work/lintian.log")"
t_lintian=$(date +%s)

# 3. the Debian 12 root
CACHE=${PW_DEB_ROOT_CACHE:-/var/cache/poolwatch-test}
mkdir -p "$CACHE/apt-archives"
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
MMDEB_ARGS="--variant=apt --skip=cleanup/apt/lists bookworm"
key=$( (cat "$sources"; echo "$MMDEB_ARGS") | sha256sum | cut -c1-12)
tarball=$CACHE/debian12-apt-$key.tar
(
    flock 9
    if [ ! -f "$tarball" ]; then
        echo "making the Debian 12 root (once per machine): $tarball"
        # shellcheck disable=SC2086
        mmdebstrap --quiet --format=tar $MMDEB_ARGS "$tarball.tmp" "$sources" \
            >"$work/mmdebstrap.log" 2>&1 || { tail -n 20 "$work/mmdebstrap.log"; exit 1; }
        mv "$tarball.tmp" "$tarball"
    fi
) 9>"$CACHE/.lock" || { echo "FAIL mmdebstrap"; exit 1; }
mkdir "$root"
tar -C "$root" -xf "$tarball" || { echo "FAIL unpacking $tarball"; exit 1; }
t_root=$(date +%s)

# 4. install in the root
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mkdir -p "$root/tmp/debs"
cp "$B"/*.deb "$root/tmp/debs/"
cp "$CACHE"/apt-archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
# openssl: the collector package recommends it for pki.sh
if ! in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/debs/*.deb openssl' \
    >"$work/install.log" 2>&1; then
    # lists of the cached root are older than the archive: refresh them once, then again
    in_root apt-get update -q >>"$work/install.log" 2>&1
    in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/debs/*.deb openssl' \
        >>"$work/install.log" 2>&1
fi
check "apt-get install ./poolwatch*.deb in Debian 12" 0 $?
cp -n "$root"/var/cache/apt/archives/*.deb "$CACHE/apt-archives/" 2>/dev/null
# archives of versions no longer in the root's lists go: the cache keeps what it uses
for f in "$CACHE"/apt-archives/*.deb; do
    [ -e "$root/var/cache/apt/archives/$(basename "$f")" ] || rm -f "$f"
done
grep -E '^(Setting up|Unpacking) poolwatch' "$work/install.log" | sed 's/^/     /'
for p in poolwatch-agent poolwatch-collector poolwatch; do
    check "$p installed" "install ok installed $V" "$(in_root dpkg-query -W -f='${Status} ${Version}' $p 2>&1)"
done
for b in poolwatch-agent poolwatch-collector poolwatch; do
    out=$(in_root $b --version 2>&1)
    check "$b --version" "$b $V" "$(echo "$out" | cut -d' ' -f1-2)"
    echo "     $out"
    check "$b(1) man page" 1 "$(in_root sh -c "zcat /usr/share/man/man1/$b.1.gz | grep -c '^\.TH $(echo $b | tr a-z A-Z) 1'")"
done
# the man pages carry the option tables and the command list
check "poolwatch-agent(1) documents --spool.dir" 1 \
    "$(in_root sh -c 'zcat /usr/share/man/man1/poolwatch-agent.1.gz | grep -c "^\.B \\\\-\\\\-spool.dir$"')"
check "poolwatch(1) documents the top command" 1 \
    "$(in_root sh -c 'zcat /usr/share/man/man1/poolwatch.1.gz | grep -c "^\.SS top$"')"
# the copyright file says what LICENSE says (holder, and the text after it, line for line);
# Maintainer is PW_DEB_MAINTAINER
lic="$(sed -n 's/^Copyright (c) //p' "$SRC/LICENSE") $(sed '1,/^Copyright (c) /d' "$SRC/LICENSE" | sed '/./,$!d' | md5sum | cut -c1-32)"
maint=$(sed -n 's/^PW_DEB_MAINTAINER:STRING=//p' "$B/CMakeCache.txt")
for p in poolwatch-agent poolwatch-collector poolwatch; do
    c=$root/usr/share/doc/$p/copyright
    check "$p's copyright is LICENSE's (MIT)" "$lic" \
        "$(sed -n 's/^Copyright: //p' "$c") $(sed '1,/^License: MIT$/d' "$c" | sed 's/^ //; s/^\.$//' | md5sum | cut -c1-32)"
    check "$p's Maintainer" "$maint" "$(dpkg-deb -f "$B"/${p}_${V}_*.deb Maintainer)"
done
check "agent.conf is a conffile" 1 \
    "$(in_root dpkg-query -W -f='${Conffiles}' poolwatch-agent | grep -c '/etc/poolwatch/agent.conf ')"
check "collector.conf is a conffile" 1 \
    "$(in_root dpkg-query -W -f='${Conffiles}' poolwatch-collector | grep -c '/etc/poolwatch/collector.conf ')"
check "poolwatch-collector.service runs /usr/bin/poolwatch-collector as poolwatch" "ExecStart=/usr/bin/poolwatch-collector User=poolwatch" \
    "$(in_root sh -c 'grep -o "^ExecStart=/usr/bin/poolwatch-collector" /lib/systemd/system/poolwatch-collector.service; grep "^User=" /lib/systemd/system/poolwatch-collector.service' | tr '\n' ' ' | sed 's/ $//')"
check "poolwatch-agent.service runs /usr/bin/poolwatch-agent" 1 \
    "$(grep -c '^ExecStart=/usr/bin/poolwatch-agent --config /etc/poolwatch/agent.conf$' "$root/lib/systemd/system/poolwatch-agent.service")"
check "system user poolwatch" "poolwatch:/var/lib/poolwatch-collector:/usr/sbin/nologin" \
    "$(in_root getent passwd poolwatch | cut -d: -f1,6,7)"
check "its uid is a system uid" 1 "$(in_root getent passwd poolwatch | awk -F: '{print ($3 < 1000)}')"
check "/var/lib/poolwatch-collector" "poolwatch:poolwatch 750" "$(in_root stat -c '%U:%G %a' /var/lib/poolwatch-collector)"
check "/var/lib/poolwatch-agent" "root:root 700" "$(in_root stat -c '%U:%G %a' /var/lib/poolwatch-agent)"
check "/etc/poolwatch/pki" "root:poolwatch 750" "$(in_root stat -c '%U:%G %a' /etc/poolwatch/pki)"

# the install steps of the README, in the root: the packaged pki.sh makes the PKI where the
# packaged collector.conf looks for it, --new-token the tokens file it names
check "pki.sh packaged" "-rwxr-xr-x root" "$(in_root stat -c '%A %U' /usr/share/poolwatch/pki.sh)"
check "the collector package recommends openssl" "openssl" \
    "$(in_root dpkg-query -W -f='${Recommends}' poolwatch-collector)"
in_root /usr/share/poolwatch/pki.sh /etc/poolwatch/pki --collector-name collector.example --agent testhost >"$work/pki.log" 2>&1
check "/usr/share/poolwatch/pki.sh /etc/poolwatch/pki in the root" 0 $?
in_root sh -c 'poolwatch-collector --new-token read alice >>/etc/poolwatch/tokens' 2>"$work/token.txt"
check "poolwatch-collector --new-token read alice >> /etc/poolwatch/tokens" 0 $?
check "  one token line" 1 "$(grep -c '^[0-9a-f]\{64\} read alice$' "$root/etc/poolwatch/tokens")"
install -m 0400 -o "$(in_root id -u poolwatch)" "$root/etc/poolwatch/pki/collector.key" "$root/tmp/collector.key" # as LoadCredential= hands it over
P=/etc/poolwatch/pki
# the packaged conffile as it is: every file it names exists
in_root poolwatch-collector --check-config --config /etc/poolwatch/collector.conf >"$work/collector-check-root.txt" 2>&1
check "poolwatch-collector --check-config with the packaged collector.conf alone" 0 $?
check "  its TLS files and tokens file" "ca_file = $P/ca.pem cert_file = $P/collector.pem key_file = $P/collector.key tokens_file = /etc/poolwatch/tokens" \
    "$(grep -E '^(ca_file = /etc|cert_file = /etc|key_file = /etc|tokens_file = )' "$work/collector-check-root.txt" | tr '\n' ' ' | sed 's/ $//')"
in_root poolwatch-agent --check-config --config /etc/poolwatch/agent.conf --agent.source=sim:steady/0 \
    --agent.host_name=testhost --collector.endpoints=collector.example:7070 --collector.ca_file=$P/ca.pem \
    --collector.cert_file=$P/agent-testhost.pem --collector.key_file=$P/agent-testhost.key >"$work/agent-check.txt" 2>&1
check "poolwatch-agent --check-config" 0 $?
check "  its spool dir is the package's" 1 "$(grep -c '^dir = /var/lib/poolwatch-agent/spool$' "$work/agent-check.txt")"
in_root poolwatch-agent --check-config --config /etc/poolwatch/agent.conf --agent.source=sim:steady/0 \
    --agent.interval=1y --collector.endpoints=collector.example:7070 --collector.ca_file=$P/ca.pem \
    --collector.cert_file=$P/agent-testhost.pem --collector.key_file=$P/agent-testhost.key >/dev/null 2>&1
check "poolwatch-agent --check-config refuses an interval of 1y" 2 $?
# as the unit runs it: user poolwatch, the key handed over by LoadCredential=
chroot --userspec=poolwatch:poolwatch "$root" env -i PATH=/usr/bin:/bin poolwatch-collector --check-config \
    --config /etc/poolwatch/collector.conf --agents.key_file=/tmp/collector.key >"$work/collector-check.txt" 2>&1
check "poolwatch-collector --check-config as user poolwatch, as the unit runs it" 0 $?
check "  its store is the package's" 1 "$(grep -c '^path = /var/lib/poolwatch-collector/poolwatch.db$' "$work/collector-check.txt")"
cp "$SRC/tests/fixtures/poolmon/case02"*.txt "$root/tmp/capture.txt" 2>/dev/null
in_root poolwatch --json --compact parse /tmp/capture.txt >"$work/parse.json" 2>&1
check "poolwatch parse in the root" 0 $?
check "  a poolmon capture with case02's Io row" '"format":"poolmon" {"tag":"Io  ","type":"nonpaged","allocs":1021112' \
    "$(grep -o '"format":"poolmon"' "$work/parse.json" | head -n1) $(grep -o '{"tag":"Io  ","type":"nonpaged","allocs":[0-9]*' "$work/parse.json" | head -n1)"

# purge
in_root dpkg --purge poolwatch-agent poolwatch-collector poolwatch >"$work/purge.log" 2>&1
check "dpkg --purge" 0 $?
for f in /usr/bin/poolwatch-agent /etc/poolwatch/collector.conf /var/lib/poolwatch-collector /var/lib/poolwatch-agent /lib/systemd/system/poolwatch-agent.service; do
    check "purged: $f" no "$([ -e "$root$f" ] && echo yes || echo no)"
done
t_end=$(date +%s)
echo "     times: build $((t_build - t0)) s, lintian $((t_lintian - t_build)) s, root $((t_root - t_lintian)) s, install and checks $((t_end - t_root)) s"
[ "$fail" -ne 0 ] && for f in install.log agent-check.txt collector-check.txt; do echo "--- $f"; tail -n 15 "$work/$f"; done
finish
