#!/usr/bin/env bash
# ctest DebPackageTest: builds the Debian package from an existing
# build tree with cpack (its binaries are reused, nothing is rebuilt), checks
# the package's file list, control data and conffiles, unpacks it into a
# throwaway root (dpkg -x, no installation on this machine) and runs the
# unpacked morpheus-rm. Usage: check_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/morpheus-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

t0=$(date +%s%N)
# gzip: much cheaper than the default xz for a package thrown away at once.
if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" \
    -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log" >&2
  fail "cpack could not build the package"
fi
t1=$(date +%s%N)
shopt -s nullglob
debs=("$work"/out/*.deb)
[ ${#debs[@]} -eq 1 ] || fail "expected one .deb in $work/out, got ${#debs[@]}"
deb=${debs[0]}
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) in $(((t1 - t0) / 1000000)) ms"

dpkg-deb -c "$deb" | awk '{print $6}' >"$work/files"
for f in ./usr/bin/morpheus-rm ./usr/bin/morpheus-nm ./usr/bin/morpheus-container-launch \
    ./usr/bin/morpheus-inference ./usr/bin/morpheusctl ./usr/bin/morpheus-dag-am \
    ./usr/bin/morpheus-sim \
    ./etc/morpheus/rm.yaml ./etc/morpheus/nm.yaml ./etc/morpheus/inference.yaml \
    ./lib/systemd/system/morpheus-rm.service ./lib/systemd/system/morpheus-nm.service \
    ./lib/systemd/system/morpheus-inference.service \
    ./usr/share/bash-completion/completions/morpheusctl ./usr/share/zsh/site-functions/_morpheusctl \
    ./usr/share/fish/vendor_completions.d/morpheusctl.fish ./usr/share/doc/morpheus/README.md \
    ./usr/share/doc/morpheus/docs/operator/README.md \
    ./usr/share/doc/morpheus/docs/reference/config-rm.md; do
  grep -qxF "$f" "$work/files" || fail "the package lacks $f; it has:$(printf '\n  %s' $(cat "$work/files"))"
done
if grep -E '_tests$|/build-|/include/|/docs/tools/' "$work/files"; then fail "test binaries, headers or the docs generator packaged"; fi

dpkg-deb -e "$deb" "$work/control"
for c in /etc/morpheus/rm.yaml /etc/morpheus/nm.yaml /etc/morpheus/inference.yaml; do
  grep -qxF "$c" "$work/control/conffiles" || fail "$c is not a conffile (local edits would be overwritten)"
done
[ -x "$work/control/postinst" ] || fail "no executable postinst (creates the morpheus user)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
echo "$depends" | grep -q libgrpc || fail "Depends lacks the gRPC runtime: '$depends'"

dpkg -x "$deb" "$work/root"
version=$("$work/root/usr/bin/morpheus-rm" --version)
echo "$version"
echo "$version" | grep -Eq '^morpheus-rm [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-zA-Z.-]+\)$' ||
  fail "unexpected --version line: '$version'"
# Built from a git checkout, --version names a commit of it (the one of the
# last build: HEAD unless committed since); a tarball (no .git) says "unknown".
if git -C "$source" rev-parse --git-dir >/dev/null 2>&1; then
  rev=$(echo "$version" | sed -E 's/.*\(git (.*-g)?([0-9a-f]{7,})(-dirty)?\)$/\2/')
  git -C "$source" cat-file -e "$rev^{commit}" 2>/dev/null ||
    fail "--version names no commit of $source: '$version'"
fi
for d in rm nm inference; do
  grep -qxF "data-dir: \"/var/lib/morpheus/$d\"" "$work/root/etc/morpheus/$d.yaml" ||
    fail "the packaged $d.yaml does not put data-dir in /var/lib/morpheus/$d (the unit's StateDirectory)"
done
for d in rm nm inference; do
  unit="$work/root/lib/systemd/system/morpheus-$d.service"
  grep -qxF 'Type=notify' "$unit" || fail "morpheus-$d.service is not Type=notify"
  grep -qxF "ExecStart=/usr/bin/morpheus-$d --config /etc/morpheus/$d.yaml$([ $d = nm ] && echo ' --set nm.cgroup-parent=own')" "$unit" ||
    fail "morpheus-$d.service does not start /usr/bin/morpheus-$d with /etc/morpheus/$d.yaml"
done
grep -qxF 'Delegate=yes' "$work/root/lib/systemd/system/morpheus-nm.service" ||
  fail "morpheus-nm.service lacks Delegate=yes"
# systemd's own parser on the units (pointed at the unpacked binaries): any
# complaint (unknown key, bad value) fails. deploy/install-deps.sh installs
# systemd-analyze (package systemd); without it every other check still runs
# and the test ends as SKIPPED (exit 77, ctest's SKIP_RETURN_CODE), naming
# what was not checked, rather than passing.
if command -v systemd-analyze >/dev/null; then
  mkdir "$work/units"
  for u in "$work"/root/lib/systemd/system/*.service; do
    sed "s|/usr/bin/|$work/root/usr/bin/|" "$u" >"$work/units/$(basename "$u")"
  done
  complaints=$(systemd-analyze verify "$work"/units/*.service 2>&1 || true)
  [ -z "$complaints" ] || fail "systemd-analyze verify: $complaints"
  echo "systemd-analyze verify: units clean"
else
  echo "OK: package contents, conffiles and the unpacked morpheus-rm"
  echo "SKIPPED: systemd-analyze not installed (package systemd, deploy/install-deps.sh):" \
    "the systemd units were not verified"
  exit 77
fi
echo "OK: package contents, conffiles, units and the unpacked morpheus-rm"
