#!/usr/bin/env bash
# Builds the node image that containers/ovn.clab.yml runs (tests/containerlab.rs checks that
# the topology names this tag). ovn-agent and ovn-node are built here on the host, then
# copied in with the entrypoint as the whole build context (see the Containerfile).
#
#   PROFILE     cargo profile of the binaries (default release; "dev" for a quick debug image)
#   BASE_IMAGE  base image (default debian:12-slim). If it can be neither found nor pulled
#               and mmdebstrap is installed, a minimal Debian 12 base is made from the Debian
#               archive and imported as localhost/debian:bookworm-minbase.
#   DOCKER      container engine CLI (default docker; podman is untested)
set -euo pipefail
cd "$(dirname "$0")/.."

image=localhost/ovn-agent-lab:latest
profile=${PROFILE:-release}
base=${BASE_IMAGE:-debian:12-slim}
docker=${DOCKER:-docker}

target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
case "$profile" in
dev) bin_dir=$target_dir/debug ;;
*) bin_dir=$target_dir/$profile ;;
esac
cargo build --profile "$profile" -p agent --bin ovn-agent -p integration --bin ovn-node

if ! "$docker" image inspect "$base" >/dev/null 2>&1 && ! "$docker" pull "$base"; then
    if ! command -v mmdebstrap >/dev/null; then
        echo "build.sh: base image $base is not available; set BASE_IMAGE or install mmdebstrap" >&2
        exit 1
    fi
    base=localhost/debian:bookworm-minbase
    if ! "$docker" image inspect "$base" >/dev/null 2>&1; then
        echo "build.sh: making $base from the Debian archive"
        mmdebstrap --variant=minbase --quiet bookworm - | "$docker" import - "$base"
    fi
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$bin_dir/ovn-agent" "$bin_dir/ovn-node" containers/entrypoint.sh "$context/"
"$docker" build -f containers/Containerfile --build-arg "BASE_IMAGE=$base" -t "$image" "$context"
echo "built $image"
