#!/usr/bin/env bash
# Makes the Morpheus Debian packages (morpheus-common, -rm, -nm, -inference,
# -client; deploy/debian) from the binaries of a built CMake tree: nothing is
# compiled (debian/rules installs the tree with `cmake --install`). The
# packaging directory is copied as debian/ into a scratch directory, so the
# checkout is left as it was.
#
# Usage: deploy/build-debs.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a tree built by deploy/build.sh (or the test suite's build-test)
#   OUT_DIR    receives the .deb files (created if missing)
# Environment: DEB_BUILD_OPTIONS as for any Debian build (e.g. noautodbgsym:
# no -dbgsym packages).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: BUILD_DIR '$1' does not exist" >&2; exit 2; }
out=$2
if [ ! -x "$build/bin/morpheus-rm" ] || [ ! -f "$build/cmake_install.cmake" ]; then
  echo "$0: BUILD_DIR '$1' is not a built Morpheus tree (no bin/morpheus-rm); build it first" >&2
  exit 2
fi
# The package version (deploy/debian/changelog) is the project's.
project=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
package=$(dpkg-parsechangelog -l "$src/deploy/debian/changelog" -S Version)
if [ "$project" != "$package" ]; then
  echo "$0: deploy/debian/changelog is at version $package but the project (CMakeLists.txt) at" \
    "$project: add a changelog entry (dch -v $project)" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/morpheus-debs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/morpheus"
cp -r "$src/deploy/debian" "$stage/morpheus/debian"
(cd "$stage/morpheus" && MORPHEUS_BUILD_DIR=$build dpkg-buildpackage -b -nc --no-sign)
mv "$stage"/*.deb "$out"/
ls "$out"/*.deb
