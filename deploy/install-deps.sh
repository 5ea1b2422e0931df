#!/usr/bin/env bash
# Installs every build, test and runtime dependency of Morpheus on Debian 12
# from Debian's own packages. Idempotent: does nothing when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git curl python3
  ccache       # deploy/test.sh's compiler cache (kept between runs in ~/.cache/ccache)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev
  libglpk-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libsqlite3-dev sqlite3
  libssl-dev   # HMAC-SHA256 for container and AM tokens
  libjemalloc-dev  # morpheus-rm's allocator (CMakeLists.txt MORPHEUS_JEMALLOC says why)
  openssl      # CLI: the mutual-TLS integration test makes a throwaway CA with it
  libgtest-dev libgmock-dev libbenchmark-dev
  # sd_notify readiness of the daemons in their Type=notify systemd
  # units (common/daemon.h notifyReady/notifyStopping).
  libsystemd-dev
  systemd      # systemd-analyze: tests/package/check_deb.sh verifies the units with it
  # The Debian packages (dpkg-buildpackage; dpkg-shlibdeps computes their
  # Depends, `file` finds the binaries to strip); tests/package/check_deb.sh.
  dpkg-dev file
  # The Debian packages are made with debhelper (deploy/build-debs.sh), their
  # man pages with help2man from each binary's --help, and checked by
  # lintian in tests/package/check_deb.sh.
  debhelper help2man lintian
  libpq-dev postgresql   # PostgreSQL provenance store and its tests
  # deploy/fuzz.sh: libFuzzer targets need clang; libclang-rt-14-dev
  # holds compiler-rt's libFuzzer, ASan and UBSan runtimes (-fsanitize=fuzzer).
  clang-14 libclang-rt-14-dev
  # morpheus-sim draws its report's PNG plots with gnuplot; without
  # it the report says so and keeps the CSVs and report.gp.
  gnuplot-nox
  # Web UI test: the RM's page is loaded in headless Chromium
  # (tests/integration/web_ui_test.cc; skipped when absent).
  chromium
  # HA: etcd holds the RMs' shared state and leader lease; the tests
  # start real etcd members. The etcd StateStore's gRPC stubs are generated from
  # etcd's own .proto files (golang-etcd-server-dev) and the ones they import.
  etcd-server etcd-client
  golang-etcd-server-dev golang-github-gogo-protobuf-dev golang-github-grpc-ecosystem-grpc-gateway-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
# The postgresql package starts a cluster-wide server we do not use; tests
# start their own in a temporary directory.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet postgresql 2>/dev/null; then
  $SUDO systemctl stop postgresql || true
fi
echo "install-deps: done"
