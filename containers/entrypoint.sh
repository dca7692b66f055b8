#!/bin/sh
# Container entrypoint: turns this node into the OVN central node or a chassis from
# environment variables, by exec'ing ovn-node (the same node set-up code as the one-machine
# lab). The integration test tests/containerlab.rs runs this script too, in network namespaces.
#
#   OVN_ROLE            central | chassis (required)
#   OVN_NODE_DIR        databases, sockets, logs (default /var/run/ovn-node; the image points
#                       OVS_RUNDIR/OVN_RUNDIR there so ovs-vsctl, ovn-nbctl ... work as is)
# central:
#   OVN_UNDERLAY_PORTS  links to the chassis, bridged together (e.g. "eth1 eth2 eth3")
#   OVN_UNDERLAY_IP     address of that bridge, ADDRESS/PREFIX (the chassis' OVN_CENTRAL)
# chassis:
#   OVN_CENTRAL         underlay address of the central node (SB at tcp:OVN_CENTRAL:6642)
#   OVN_ENCAP_IFACE     underlay interface (default eth1)
#   OVN_ENCAP_IP        this chassis' Geneve address, ADDRESS/PREFIX
#   SYSTEM_ID           chassis name (default: the host name)
#   OVN_CONTROLLER      ovn-agent (default) | ovn-controller
set -eu

die() {
    echo "entrypoint: $*" >&2
    exit 2
}

dir=${OVN_NODE_DIR:-/var/run/ovn-node}
case "${OVN_ROLE:-}" in
central)
    set -- central --dir "$dir" --nb-listen ptcp:6641 --sb-listen ptcp:6642
    if [ -n "${OVN_UNDERLAY_PORTS:-}" ]; then
        [ -n "${OVN_UNDERLAY_IP:-}" ] || die "OVN_UNDERLAY_PORTS needs OVN_UNDERLAY_IP"
        for port in $OVN_UNDERLAY_PORTS; do
            set -- "$@" --underlay-port "$port"
        done
        set -- "$@" --underlay-ip "$OVN_UNDERLAY_IP"
    fi
    ;;
chassis)
    [ -n "${OVN_CENTRAL:-}" ] || die "a chassis needs OVN_CENTRAL"
    [ -n "${OVN_ENCAP_IP:-}" ] || die "a chassis needs OVN_ENCAP_IP (ADDRESS/PREFIX)"
    set -- chassis --dir "$dir" \
        --name "${SYSTEM_ID:-$(hostname)}" \
        --sb-remote "tcp:${OVN_CENTRAL}:6642" \
        --encap-iface "${OVN_ENCAP_IFACE:-eth1}" \
        --encap-ip "$OVN_ENCAP_IP" \
        --controller "${OVN_CONTROLLER:-ovn-agent}"
    ;;
*)
    die "OVN_ROLE must be central or chassis, not '${OVN_ROLE:-}'"
    ;;
esac
exec ovn-node "$@"
