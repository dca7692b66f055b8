#!/usr/bin/env bash
# Installs what ovn-agent's lab and tests need on Debian 12 or later: the real OVS and OVN
# daemons (the test oracle), tcpdump, systemd-analyze (systemd), cargo-deb, and ping and
# ethtool (the containerlab lab test). Does nothing when they are already there.
set -euo pipefail

packages=(openvswitch-switch ovn-central ovn-host tcpdump systemd iputils-ping ethtool)
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "installing: ${missing[*]}"
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
    echo "cargo not found: install a Rust toolchain (rustup, or Debian's cargo package)" >&2
    exit 1
fi

# The Debian package test (integration/tests/packaging.rs) builds the package with cargo-deb;
# building cargo-deb itself takes about 1.5 minutes on 2 cores.
if ! cargo deb --version >/dev/null 2>&1; then
    echo "installing cargo-deb"
    cargo install cargo-deb --locked --version '^3'
fi
