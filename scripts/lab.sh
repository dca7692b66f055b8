#!/usr/bin/env bash
# Sets up everything and runs the main job: a multi-chassis OVN lab on this machine with a
# controller on every chassis, pinging across chassis. Arguments go to ovn-lab (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
exec cargo run --quiet -p integration --bin ovn-lab -- "$@"
