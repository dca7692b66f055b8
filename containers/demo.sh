#!/usr/bin/env bash
# Once containers/ovn.clab.yml is deployed: builds a logical topology on the central node and
# pings across the chassis. Two switches joined by a router, one VM per chassis (a network
# namespace inside the chassis container, plugged into br-int by `ovn-node vm`):
#   sw0 10.0.0.0/24: vm1 on hv1 (10.0.0.1), vm3 on hv3 (10.0.0.3)
#   sw1 10.0.1.0/24: vm2 on hv2 (10.0.1.2)
#   lr0: 10.0.0.254 on sw0, 10.0.1.254 on sw1
# Exits non-zero if a ping fails. Run it again to rebuild from scratch.
#
#   LAB                    containerlab lab name (default: the name in ovn.clab.yml, "ovn")
#   DOCKER                 container engine CLI (default docker)
#   OVN_DEMO_EXEC          command that runs "NODE CMD..." on a node instead of
#                          `$DOCKER exec clab-$LAB-NODE CMD...` (the integration test uses it)
#   OVN_DEMO_NETNS_PREFIX  prefix of the VM namespaces (default none)
set -euo pipefail

lab=${LAB:-ovn}
prefix=${OVN_DEMO_NETNS_PREFIX:-}

on() {
    local node=$1
    shift
    if [ -n "${OVN_DEMO_EXEC:-}" ]; then
        "$OVN_DEMO_EXEC" "$node" "$@"
    else
        "${DOCKER:-docker}" exec "clab-$lab-$node" "$@"
    fi
}
nbctl() { on central ovn-nbctl --timeout=60 "$@"; }

echo "waiting for the chassis to register"
for hv in hv1 hv2 hv3; do
    on central ovn-sbctl --timeout=120 wait-until Chassis "$hv" >/dev/null
done

echo "building sw0, sw1 and lr0"
for sw in sw0 sw1; do nbctl --if-exists ls-del "$sw"; done
nbctl --if-exists lr-del lr0
nbctl ls-add sw0 -- ls-add sw1 -- lr-add lr0
nbctl lsp-add sw0 vm1 -- lsp-set-addresses vm1 "50:54:00:00:00:01 10.0.0.1"
nbctl lsp-add sw0 vm3 -- lsp-set-addresses vm3 "50:54:00:00:00:03 10.0.0.3"
nbctl lsp-add sw1 vm2 -- lsp-set-addresses vm2 "50:54:00:00:01:02 10.0.1.2"
for n in 0 1; do
    nbctl lrp-add lr0 "lr0-sw$n" "00:00:00:00:ff:0$((n + 1))" "10.0.$n.254/24" \
        -- lsp-add "sw$n" "sw$n-lr0" -- lsp-set-type "sw$n-lr0" router \
        -- lsp-set-addresses "sw$n-lr0" router \
        -- lsp-set-options "sw$n-lr0" "router-port=lr0-sw$n"
done

vm() { # vm HV NAME MAC IP/PREFIX GATEWAY
    on "$1" ovn-node vm-del --netns "$prefix$2" >/dev/null 2>&1 || true
    on "$1" ovn-node vm --netns "$prefix$2" --iface-id "$2" --mac "$3" --ip "$4" --gateway "$5"
}
echo "plugging the VMs"
vm hv1 vm1 50:54:00:00:00:01 10.0.0.1/24 10.0.0.254
vm hv2 vm2 50:54:00:00:01:02 10.0.1.2/24 10.0.1.254
vm hv3 vm3 50:54:00:00:00:03 10.0.0.3/24 10.0.0.254
for port in vm1 vm2 vm3; do
    nbctl wait-until Logical_Switch_Port "$port" up=true
done
nbctl --wait=hv sync
on central ovn-sbctl show

ping_from() { # ping_from HV VM DESTINATION WHAT
    echo "$2 ($1) -> $3: $4"
    # Three replies within 30 s: the first requests may go while ARP and the tunnel
    # neighbour are still being learned.
    on "$1" ip netns exec "$prefix$2" ping -n -c 3 -i 0.5 -w 30 "$3"
}
ping_from hv1 vm1 10.0.0.3 "switched by sw0, hv1 -> hv3"
ping_from hv1 vm1 10.0.1.2 "routed by lr0, hv1 -> hv2"
ping_from hv2 vm2 10.0.0.3 "routed by lr0, hv2 -> hv3"
echo "all pings answered"
