#!/usr/bin/env bash
# ctest DebPackageTest: builds the Debian packages (deploy/build-debs.sh,
# debhelper) from an existing build tree, whose binaries are packaged as
# they are (nothing is compiled), and checks them:
#   - each package's files, control data, conffiles and maintainer scripts;
#   - lintian (Debian's checker): no error or warning;
#   - the unpacked morpheus-rm runs; the units' ExecStart, credentials and
#     hardening; systemd-analyze verify (and its man check against the
#     generated pages) and systemd-analyze security --offline;
#   - postinst/postrm in a private mount namespace over a copy of /etc,
#     /var/lib and /var/log: remove keeps state, purge removes state, tokens
#     and the morpheus account. Nothing on this machine changes.
# Without lintian or systemd-analyze (deploy/install-deps.sh installs both)
# every other check runs and the test ends SKIPPED (exit 77, ctest's
# SKIP_RETURN_CODE) naming what was not checked.
# Usage: check_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/morpheus-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
skipped=()
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

t0=$(date +%s%N)
# gzip -1 and no -dbgsym packages: far cheaper than the defaults for
# packages thrown away at once; parallel=2 strips and scans the binaries of
# several packages at once.
if ! DPKG_DEB_COMPRESSOR_TYPE=gzip DPKG_DEB_COMPRESSOR_LEVEL=1 \
    DEB_BUILD_OPTIONS="noautodbgsym parallel=2" \
    "$source/deploy/build-debs.sh" "$build" "$work/out" >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log" >&2
  fail "deploy/build-debs.sh could not build the packages"
fi
echo "built the packages in $(ms "$t0") ms:"
version=$(dpkg-parsechangelog -l "$source/deploy/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
declare -A deb
for p in morpheus-common morpheus-rm morpheus-nm morpheus-inference morpheus-client; do
  a=$arch
  [ $p = morpheus-common ] && a=all
  deb[$p]=$work/out/${p}_${version}_$a.deb
  [ -f "${deb[$p]}" ] || fail "no ${p}_${version}_$a.deb in: $(ls "$work/out")"
  echo "  $(basename "${deb[$p]}") ($(du -k "${deb[$p]}" | cut -f1) KiB)"
done
[ "$(ls "$work"/out/*.deb | wc -l)" -eq 5 ] || fail "unexpected packages: $(ls "$work/out")"

# Files: each binary, config, unit and man page in its package.
has() {  # has PACKAGE PATH...
  local p=$1 f
  shift
  dpkg-deb -c "${deb[$p]}" | awk '{print $6}' >"$work/files"
  for f in "$@"; do
    grep -qxF ".$f" "$work/files" ||
      fail "$p lacks $f; it has:$(printf '\n  %s' $(grep -v '/$' "$work/files"))"
  done
  if grep -E '_tests$|/build-|/include/|/docs/tools/|\.a$' "$work/files"; then
    fail "$p packages test binaries, headers, libraries or the docs generator"
  fi
}
for d in rm nm inference; do
  has morpheus-$d /usr/bin/morpheus-$d /etc/morpheus/$d.yaml \
    /lib/systemd/system/morpheus-$d.service /usr/share/man/man8/morpheus-$d.8.gz \
    /usr/share/doc/morpheus-$d/copyright
done
has morpheus-nm /usr/bin/morpheus-container-launch /usr/share/man/man8/morpheus-container-launch.8.gz
has morpheus-client /usr/bin/morpheusctl /usr/bin/morpheus-dag-am /usr/bin/morpheus-sim \
  /usr/share/man/man1/morpheusctl.1.gz /usr/share/man/man1/morpheus-dag-am.1.gz \
  /usr/share/man/man1/morpheus-sim.1.gz /usr/share/bash-completion/completions/morpheusctl \
  /usr/share/zsh/site-functions/_morpheusctl /usr/share/fish/vendor_completions.d/morpheusctl.fish
# The Markdown stays uncompressed: its links and the units' Documentation= name .md files.
has morpheus-common /usr/share/doc/morpheus/README.md /usr/share/doc/morpheus/docs/operator/install.md \
  /usr/share/doc/morpheus/docs/reference/config-rm.md /usr/share/doc/morpheus-common/copyright

# Control data.
for d in rm nm inference; do
  p=morpheus-$d
  mkdir -p "$work/control/$p"
  dpkg-deb -e "${deb[$p]}" "$work/control/$p"
  grep -qxF "/etc/morpheus/$d.yaml" "$work/control/$p/conffiles" ||
    fail "/etc/morpheus/$d.yaml is not a conffile of $p (local edits would be overwritten)"
  depends=$(dpkg-deb -f "${deb[$p]}" Depends)
  echo "$depends" | grep -q libgrpc || fail "$p: Depends lacks the gRPC runtime: '$depends'"
  echo "$depends" | grep -qF "morpheus-common (= $version)" || fail "$p: Depends lacks morpheus-common: '$depends'"
  [ -x "$work/control/$p/postrm" ] || fail "$p has no postrm (purge must remove its state)"
done
mkdir -p "$work/control/morpheus-common"
dpkg-deb -e "${deb[morpheus-common]}" "$work/control/morpheus-common"
[ -x "$work/control/morpheus-common/postinst" ] || fail "no morpheus-common postinst (creates the morpheus user)"

# The unpacked binaries and units.
for p in "${!deb[@]}"; do dpkg -x "${deb[$p]}" "$work/root"; done
root=$work/root
ver=$("$root/usr/bin/morpheus-rm" --version)
echo "$ver"
echo "$ver" | grep -Eq '^morpheus-rm [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-zA-Z.-]+\)$' ||
  fail "unexpected --version line: '$ver'"
# Built from a git checkout, --version names a commit of it (the one of the
# last build: HEAD unless committed since); a tarball (no .git) says "unknown".
if git -C "$source" rev-parse --git-dir >/dev/null 2>&1; then
  rev=$(echo "$ver" | sed -E 's/.*\(git (.*-g)?([0-9a-f]{7,})(-dirty)?\)$/\2/')
  git -C "$source" cat-file -e "$rev^{commit}" 2>/dev/null ||
    fail "--version names no commit of $source: '$ver'"
fi
file "$root/usr/bin/morpheus-rm" | grep -q ', stripped' || fail "morpheus-rm is not stripped"
zcat "$root/usr/share/man/man8/morpheus-rm.8.gz" | grep -q 'rm.token-file' ||
  fail "the morpheus-rm man page has no CONFIGURATION section from --print-config"
for d in rm nm inference; do
  grep -qxF "data-dir: \"/var/lib/morpheus/$d\"" "$root/etc/morpheus/$d.yaml" ||
    fail "the packaged $d.yaml does not put data-dir in /var/lib/morpheus/$d (the unit's StateDirectory)"
done
unit_has() {  # unit_has DAEMON LINE...: each LINE is a line of morpheus-DAEMON.service
  local u=$root/lib/systemd/system/morpheus-$1.service l
  shift
  for l in "$@"; do grep -qxF -- "$l" "$u" || fail "$(basename "$u") lacks '$l'"; done
}
unit_lacks() {
  local u=$root/lib/systemd/system/morpheus-$1.service l
  shift
  for l in "$@"; do ! grep -q -- "^$l" "$u" || fail "$(basename "$u") has '$l'"; done
}
for d in rm nm inference; do
  unit_has $d Type=notify NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes \
    "StateDirectory=morpheus/$d" "LogsDirectory=morpheus/$d"
done
for d in rm inference; do
  unit_has $d User=morpheus ProtectHome=yes CapabilityBoundingSet= PrivateDevices=yes \
    ProtectControlGroups=yes MemoryDenyWriteExecute=yes SystemCallFilter=@system-service
done
unit_has rm 'LoadCredential=rm-tokens:/etc/morpheus/credentials/rm-tokens' \
  'ExecStart=/usr/bin/morpheus-rm --config /etc/morpheus/rm.yaml --set rm.token-file=${CREDENTIALS_DIRECTORY}/rm-tokens' \
  'ExecReload=/bin/kill -HUP $MAINPID'
unit_has inference 'LoadCredential=inference-tokens:/etc/morpheus/credentials/inference-tokens' \
  'LoadCredential=inference-rm-token:/etc/morpheus/credentials/inference-rm-token' \
  'ExecStart=/usr/bin/morpheus-inference --config /etc/morpheus/inference.yaml --set inference.token-file=${CREDENTIALS_DIRECTORY}/inference-tokens --set inference.rm-token-file=${CREDENTIALS_DIRECTORY}/inference-rm-token'
# The NM keeps what running containers as other accounts in its delegated
# cgroup needs (root, the cgroup tree writable, devices).
unit_has nm User=root Delegate=yes ProtectHome=read-only \
  'LoadCredential=nm-token:/etc/morpheus/credentials/nm-token' \
  'ExecStart=/usr/bin/morpheus-nm --config /etc/morpheus/nm.yaml --set nm.cgroup-parent=own --set nm.token-file=${CREDENTIALS_DIRECTORY}/nm-token'
unit_lacks nm ProtectControlGroups=yes ProtectKernelTunables=yes PrivateDevices=yes MemoryDenyWriteExecute=yes \
  'CapabilityBoundingSet=$'
# The unpacked RM with its packaged config starts on a token file given as
# the unit gives it (--set rm.token-file=<credentials dir>/rm-tokens) with
# the owner and mode systemd gives credentials (the daemon's account, 0400).
cred=$work/credentials
mkdir -p "$cred"
echo "tok-0123456789abcdef-0123 alice" >"$cred/rm-tokens"
chmod 0400 "$cred/rm-tokens"
"$root/usr/bin/morpheus-rm" --config "$root/etc/morpheus/rm.yaml" --data-dir "$work/rm-data" \
  --grpc-port 0 --http-port 0 --set "rm.token-file=$cred/rm-tokens" >"$work/rm.log" 2>&1 &
rm_pid=$!
for _ in $(seq 100); do
  [ -f "$work/rm-data/rm.endpoints.json" ] || ! kill -0 $rm_pid 2>/dev/null && break
  sleep 0.1
done
started=0
[ -f "$work/rm-data/rm.endpoints.json" ] && started=1
kill $rm_pid 2>/dev/null || true
wait $rm_pid 2>/dev/null || true
[ $started = 1 ] || fail "the unpacked morpheus-rm did not start on its credential: $(cat "$work/rm.log")"
echo "the unpacked morpheus-rm started with rm.token-file in a credentials directory"

# systemd's own parser on the units, pointed at the unpacked binaries, with
# man looking in the unpacked pages (Documentation=man:...): any complaint
# fails. Then its exposure analysis, summarised.
if command -v systemd-analyze >/dev/null; then
  mkdir "$work/units"
  for u in "$root"/lib/systemd/system/*.service; do
    sed "s|/usr/bin/|$root/usr/bin/|" "$u" >"$work/units/$(basename "$u")"
  done
  complaints=$(MANPATH=$root/usr/share/man systemd-analyze verify "$work"/units/*.service 2>&1 || true)
  [ -z "$complaints" ] || fail "systemd-analyze verify: $complaints"
  echo "systemd-analyze verify: units clean (man pages found)"
  for d in rm inference nm; do
    # The RM and the inference service must stay at "OK" (<= 2.0); the NM,
    # root with containers, at most "MEDIUM" (<= 6.0).
    limit=20
    [ $d = nm ] && limit=60
    out=$(systemd-analyze security --offline=yes --threshold=$limit "$work/units/morpheus-$d.service" 2>&1) ||
      fail "systemd-analyze security: morpheus-$d.service above $limit: $(echo "$out" | tail -1)"
    echo "systemd-analyze security: $(echo "$out" | tail -1 | sed 's/→ //')"
  done
else
  skipped+=("systemd-analyze not installed (package systemd): the units were not verified")
fi

# Maintainer scripts, run for real in a private mount namespace whose /etc,
# /var/lib and /var/log are throwaway copies: configure creates the account and the
# credentials directory; remove keeps state and tokens; purge removes them
# and, for morpheus-common, the account.
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  cat >"$work/scripts.sh" <<'EOF'
set -eu
c=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# /etc copied whole (adduser needs its configuration); of /var/lib only
# systemd's state (deb-systemd-helper); /var/log empty.
mkdir -p "$c/copy/etc" "$c/copy/var/lib/systemd" "$c/copy/var/log"
cp -a /etc/. "$c/copy/etc/"
[ ! -d /var/lib/systemd ] || cp -a /var/lib/systemd/. "$c/copy/var/lib/systemd/"
for d in /etc /var/lib /var/log; do mount --bind "$c/copy$d" "$d"; done
! getent passwd morpheus >/dev/null || userdel morpheus 2>/dev/null || true
"$c/morpheus-common/postinst" configure ""
getent passwd morpheus >/dev/null || fail "postinst configure did not create the morpheus account"
[ "$(stat -c %a /etc/morpheus/credentials)" = 700 ] || fail "/etc/morpheus/credentials is not mode 0700"
mkdir -p /var/lib/morpheus/rm /var/log/morpheus/rm
echo state >/var/lib/morpheus/rm/state.db
echo token >/etc/morpheus/credentials/rm-tokens
echo token >/etc/morpheus/credentials/nm-token
"$c/morpheus-rm/postrm" remove
[ -f /var/lib/morpheus/rm/state.db ] && [ -f /etc/morpheus/credentials/rm-tokens ] ||
  fail "morpheus-rm postrm remove deleted state or tokens (only purge may)"
"$c/morpheus-rm/postrm" purge
[ ! -e /var/lib/morpheus/rm ] && [ ! -e /var/log/morpheus/rm ] || fail "morpheus-rm purge left /var/lib/morpheus/rm or /var/log/morpheus/rm"
[ ! -e /etc/morpheus/credentials/rm-tokens ] || fail "morpheus-rm purge left its token file"
[ -f /etc/morpheus/credentials/nm-token ] || fail "morpheus-rm purge removed the NM's token"
"$c/morpheus-common/postrm" remove
getent passwd morpheus >/dev/null || fail "morpheus-common postrm remove deleted the account (only purge may)"
"$c/morpheus-common/postrm" purge
! getent passwd morpheus >/dev/null || fail "morpheus-common purge left the morpheus account"
[ ! -e /etc/morpheus/credentials ] || fail "morpheus-common purge left /etc/morpheus/credentials"
echo "maintainer scripts: configure creates the account, remove keeps state, purge removes it"
EOF
  unshare -m bash "$work/scripts.sh" "$work/control" >"$work/scripts.log" 2>&1 ||
    { cat "$work/scripts.log" >&2; fail "maintainer scripts (above)"; }
  grep '^maintainer scripts:' "$work/scripts.log"
else
  skipped+=("no private mount namespace (unshare -m): the maintainer scripts were not run")
fi

# lintian, Debian's own checker: no error and no warning; its informational
# tags are listed (the binaries' compile flags: no _FORTIFY_SOURCE, no
# -z now, which deploy/test.sh's build does not set).
if command -v lintian >/dev/null; then
  t1=$(date +%s%N)
  if ! lintian --fail-on error,warning --display-info "$work"/out/*.deb >"$work/lintian.log" 2>&1; then
    grep -E '^[EW]:' "$work/lintian.log" >&2 || cat "$work/lintian.log" >&2
    fail "lintian found errors or warnings (above)"
  fi
  echo "lintian: no error or warning ($(ms "$t1") ms); informational tags:"
  grep -E '^[IE]:' "$work/lintian.log" | awk '{print "  " $3}' | sort | uniq -c || true
else
  skipped+=("lintian not installed: the packages were not checked by lintian")
fi

echo "DebPackageTest took $(ms "$t0") ms"
if [ ${#skipped[@]} -gt 0 ]; then
  echo "OK: every other check"
  printf 'SKIPPED: %s\n' "${skipped[@]}"
  exit 77
fi
echo "OK: packages, lintian, units and maintainer scripts"
