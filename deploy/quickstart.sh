#!/usr/bin/env bash
# README command (1): install dependencies, build (Release), start a local
# cluster on loopback (RM + inference + 3 NMs) and show its nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
echo "quickstart: building (Release) into build-release/ ..."
./deploy/build.sh build-release Release -DMORPHEUS_BUILD_TESTS=OFF -DMORPHEUS_BUILD_BENCH=OFF
./deploy/local-cluster.sh start
echo
./build-release/bin/morpheusctl --token-file var/operator.token cluster status
echo
echo "The cluster keeps running in the background (data and logs under ./var)."
echo "  status:  ./deploy/local-cluster.sh status"
echo "  CLI:     export MORPHEUS_TOKEN=\$(cat var/operator.token); ./build-release/bin/morpheusctl --help"
echo "  stop:    ./deploy/local-cluster.sh stop"
