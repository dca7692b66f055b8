#!/usr/bin/env bash
# Installs everything the tests need, then runs formatting and lint checks and all tests
# (unit, golden, and the integration tests against the real OVS/OVN daemons).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# --no-fail-fast: one run shows every failing test binary, not only the first.
cargo test --workspace --no-fail-fast

# Every daemon a test started must be gone: the harness stops them by pid.
leftover=$(pgrep -af 'ovn-lab-' || true)
if [ -n "$leftover" ]; then
    echo "daemons left behind by the tests:" >&2
    echo "$leftover" >&2
    exit 1
fi
echo "no daemons left behind"
