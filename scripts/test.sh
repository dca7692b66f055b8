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

# OVN 25.03 / OVS 3.5 (Debian 13), unpacked beside the system's 23.03.1: the scenarios,
# pinctrl (ARP/ND, DNS/RA) and gateway HA with 25.03's own ovn-controller and with ovn-agent
# (table layout auto) in one run; `ovn-agent compile --table-layout ovn-25.03` against 25.03's
# ovn-controller, lflow by lflow; the physical stage in 25.03's forms against the flows
# 25.03's ovn-controller installs. (--no-fail-fast as above.)
./scripts/ovn-stack.sh 25.03 >/dev/null
OVN_STACK=25.03 OVN_STACK_AGENT=1 cargo test --no-fail-fast -p integration --test stacks --test scenarios --test pinctrl --test pinctrl_dns_ra --test gateway_ha --test lflow_differential --test physical_differential --test bfd --test prefix_delegation --test live_migration --test mirror -- --skip mixed

# OVN 26.03 / OVS 4.0 (Debian sid), the same way with 26.03's ovn-controller and the
# ovn-26.03 layout.
./scripts/ovn-stack.sh 26.03 >/dev/null
OVN_STACK=26.03 OVN_STACK_AGENT=1 cargo test --no-fail-fast -p integration --test stacks --test scenarios --test pinctrl --test pinctrl_dns_ra --test gateway_ha --test lflow_differential --test physical_differential --test bfd --test prefix_delegation --test live_migration --test mirror -- --skip mixed

# Every daemon a test started must be gone: the harness stops them by pid.
leftover=$(pgrep -af 'ovn-lab-' || true)
if [ -n "$leftover" ]; then
    echo "daemons left behind by the tests:" >&2
    echo "$leftover" >&2
    exit 1
fi
echo "no daemons left behind"
