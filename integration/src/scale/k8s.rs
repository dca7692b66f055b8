//! Generator of an ovn-kubernetes shaped cluster (classic mode, without interconnect), so that
//! `ovn-northd` produces the Southbound content of a real Kubernetes cluster:
//!
//! - one distributed router `ovn_cluster_router`, joined through the `join` switch to one
//!   gateway router `GR_<node>` per node (`options:chassis=<node>`,
//!   `lb_force_snat_ip=router_ip`, SNAT of the cluster network to the node IP, routes to the
//!   cluster network and a default route), each with an external switch `ext_<node>` holding
//!   a localnet port on `physnet`;
//! - per node a switch `<node>` with a /24 of pods (addresses and port security "MAC IP",
//!   `requested-chassis=<node>`), the management port `k8s-<node>` and the router port;
//! - services: TCP `Load_Balancer`s, VIPs in 172.30.0.0/16 with two or three pod backends of
//!   their namespace, all in the one `Load_Balancer_Group` `clusterLBGroup` that every node
//!   switch and every gateway router uses (this is what makes northd emit datapath groups);
//! - network policies: one address set per namespace, and per namespace with policies an
//!   ingress default-deny port group (ARP/ND allowed) plus one port group and ACL per policy;
//!   the cluster-wide `clusterPortGroup` (management ports) and `clusterRtrPortGroup`
//!   (node switches' router ports) with the multicast and hairpin ACLs;
//! - a `Chassis` and `Encap` per node (`ovn-sbctl chassis-add`, with the feature flags that
//!   ovn-controller 23.03 advertises, so that northd uses the current action vocabulary), and
//!   every pod, management port and gateway-router port bound to its node's chassis, as the
//!   ovn-controllers of a running cluster leave them.
//!
//! Addresses follow OpenShift's defaults: cluster network 10.128.0.0/14 (a /24 per node),
//! services 172.30.0.0/16, join network 100.64.0.0/16, nodes on 172.18.0.0/16; MACs of
//! OVN-managed ports are `0a:58` followed by the IPv4 address, as ovn-kubernetes derives them.
//!
//! Everything is written with one `ovn-nbctl` invocation per node (and per hundred services,
//! per ten namespaces) while northd is paused, then northd computes the whole Southbound once.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use crate::central::Central;
use crate::controller::Controller;
use crate::error::{HarnessError, Result};
use crate::lab::Lab;

pub const CLUSTER_ROUTER: &str = "ovn_cluster_router";
pub const JOIN_SWITCH: &str = "join";
pub const LB_GROUP: &str = "clusterLBGroup";
pub const CLUSTER_PORT_GROUP: &str = "clusterPortGroup";
pub const CLUSTER_RTR_PORT_GROUP: &str = "clusterRtrPortGroup";
/// `network_name` of every external switch's localnet port.
pub const PHYSNET: &str = "physnet";
pub const CLUSTER_NETWORK: &str = "10.128.0.0/14";
pub const JOIN_NETWORK: &str = "100.64.0.0/16";
/// The address that ovn-kubernetes SNATs hairpinned service traffic to.
pub const HAIRPIN_SNAT_IP: &str = "169.254.169.5";
/// The default gateway of the node network, next hop of every gateway router's default route.
pub const NODE_GATEWAY: Ipv4Addr = Ipv4Addr::new(172, 18, 0, 1);
/// How long northd may take to compute the whole Southbound database (`--wait=sb`), and a
/// controller to connect and install its flows (`--wait=hv`).
pub const LARGE_DB_TIMEOUT_SECS: u32 = 1800;

/// The feature flags that ovn-controller 23.03 puts in `Chassis.other_config`. northd only
/// uses `ct_lb_mark`, `ct_mark.*` and `ct_commit_nat` when every chassis has them.
pub const CHASSIS_FEATURES: [&str; 4] = [
    "ct-no-masked-label",
    "mac-binding-timestamp",
    "ovn-ct-lb-related",
    "port-up-notif",
];

const SERVICE_PORTS: [u16; 5] = [80, 443, 8080, 9090, 5432];
const MULTICAST_MATCH: &str =
    "(ip4.mcast || mldv1 || mldv2 || (ip6.dst[120..127] == 0xff && ip6.dst[116] == 1))";
/// Commands per `ovn-nbctl` invocation for services and namespaces.
const SERVICES_PER_BATCH: usize = 100;
const NAMESPACES_PER_BATCH: usize = 10;
/// The size of a generated cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct K8sSpec {
    pub nodes: usize,
    pub pods_per_node: usize,
    pub services: usize,
    /// Pods are spread round-robin over this many namespaces.
    pub namespaces: usize,
    /// Network policies per namespace; 0 leaves the namespaces without default deny.
    pub policies_per_namespace: usize,
    /// Set `options:hairpin_snat_ip` on the service load balancers, as ovn-kubernetes does.
    /// ovn-controller 23.03 then installs one hairpin SNAT flow per VIP per local datapath
    /// of the load balancer (table 70) instead of one per VIP.
    pub hairpin_snat_ip: bool,
}

/// The command line of a [`K8sSpec`], shared by `ovn-bench --k8s` and `ovn-sbgen`.
#[derive(clap::Args, Debug, Clone)]
pub struct K8sArgs {
    /// k8s: nodes (node0 is the measured one).
    #[arg(long, default_value_t = K8sSpec::BENCHMARK.nodes)]
    pub nodes: usize,
    /// k8s: pods per node.
    #[arg(long, default_value_t = K8sSpec::BENCHMARK.pods_per_node)]
    pub pods_per_node: usize,
    /// k8s: services (one load balancer each, all in the cluster's load balancer group).
    #[arg(long, default_value_t = K8sSpec::BENCHMARK.services)]
    pub services: usize,
    /// k8s: namespaces.
    #[arg(long, default_value_t = K8sSpec::BENCHMARK.namespaces)]
    pub namespaces: usize,
    /// k8s: network policies per namespace.
    #[arg(long, default_value_t = K8sSpec::BENCHMARK.policies_per_namespace)]
    pub policies_per_namespace: usize,
    /// k8s: leave `options:hairpin_snat_ip` off the load balancers (ovn-kubernetes sets it).
    #[arg(long)]
    pub no_hairpin_snat_ip: bool,
}

impl K8sArgs {
    pub fn spec(&self) -> K8sSpec {
        K8sSpec {
            nodes: self.nodes,
            pods_per_node: self.pods_per_node,
            services: self.services,
            namespaces: self.namespaces,
            policies_per_namespace: self.policies_per_namespace,
            hairpin_snat_ip: !self.no_hairpin_snat_ip,
        }
    }
}

impl K8sSpec {
    /// The shape of the benchmark in the project's issue: 200 nodes × 30 pods, 1000 services.
    pub const BENCHMARK: Self = Self {
        nodes: 200,
        pods_per_node: 30,
        services: 1000,
        namespaces: 50,
        policies_per_namespace: 3,
        hairpin_snat_ip: true,
    };

    pub fn total_pods(&self) -> usize {
        self.nodes * self.pods_per_node
    }

    /// Refuses sizes that do not fit the address plan.
    pub fn check(&self) -> Result<()> {
        let problem = if self.nodes == 0 || self.nodes > 1024 {
            "between 1 and 1024 nodes (a /24 each of 10.128.0.0/14)"
        } else if self.pods_per_node > 250 {
            "at most 250 pods per node (.3 to .252 of the node's /24)"
        } else if self.services > 65000 {
            "at most 65000 services (172.30.0.0/16)"
        } else if self.namespaces == 0 || self.namespaces > self.total_pods().max(1) {
            "between 1 namespace and one per pod"
        } else if self.services > 0 && self.total_pods() == 0 {
            "pods for the services' backends"
        } else {
            return Ok(());
        };
        Err(HarnessError::Config(format!("{self:?}: needs {problem}")))
    }
}

/// Name of node `node`, which also names its chassis, its switch and its gateway router.
pub fn node_name(node: usize) -> String {
    format!("node{node}")
}

pub fn namespace_name(namespace: usize) -> String {
    format!("ns{namespace}")
}

/// The address set of all pod IPs of a namespace.
pub fn namespace_address_set(namespace: usize) -> String {
    format!("{}_v4", namespace_name(namespace))
}

pub fn default_deny_port_group(namespace: usize) -> String {
    format!("{}_ingressDefaultDeny", namespace_name(namespace))
}

pub fn policy_port_group(namespace: usize, policy: usize) -> String {
    format!("{}_np{policy}", namespace_name(namespace))
}

pub fn gateway_router(node: usize) -> String {
    format!("GR_{}", node_name(node))
}

pub fn external_switch(node: usize) -> String {
    format!("ext_{}", node_name(node))
}

/// `/24` of node `node`'s pods: 10.128.0.0/24, 10.128.1.0/24, ... 10.131.255.0/24.
pub fn node_subnet(node: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 128 + (node / 256) as u8, (node % 256) as u8, 0)
}

/// Address `host` of node `node`'s /24 (.1 is the cluster router, .2 the management port).
pub fn node_subnet_host(node: usize, host: u8) -> Ipv4Addr {
    let [a, b, c, _] = node_subnet(node).octets();
    Ipv4Addr::new(a, b, c, host)
}

/// The node's own address on the node network, 172.18.0.2 onwards (also its tunnel endpoint).
pub fn node_ip(node: usize) -> Ipv4Addr {
    offset(Ipv4Addr::new(172, 18, 0, 0), node + 2)
}

/// The gateway router's address on the join network, 100.64.0.2 onwards (.1 is the cluster
/// router's).
pub fn join_ip(node: usize) -> Ipv4Addr {
    offset(Ipv4Addr::new(100, 64, 0, 0), node + 2)
}

/// The MAC that ovn-kubernetes gives an OVN-managed port with this IPv4 address.
pub fn mac_for(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("0a:58:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

/// MAC of the node's external interface (`breth0`), derived from the node IP as Docker does.
pub fn external_mac(node: usize) -> String {
    let [a, b, c, d] = node_ip(node).octets();
    format!("02:42:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

/// The management port `k8s-<node>`: name, MAC, IP (.2 of the node's /24).
pub fn management_port(node: usize) -> (String, String, Ipv4Addr) {
    let ip = node_subnet_host(node, 2);
    (format!("k8s-{}", node_name(node)), mac_for(ip), ip)
}

/// A pod's logical switch port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// `<namespace>_<pod>`, as ovn-kubernetes names pod ports.
    pub lsp: String,
    pub node: usize,
    pub namespace: usize,
    pub mac: String,
    pub ip: Ipv4Addr,
}

impl Pod {
    /// The "MAC IP" of `addresses` and `port_security`.
    pub fn address(&self) -> String {
        format!("{} {}", self.mac, self.ip)
    }
}

/// Pod `index` of node `node`: address .3 onwards of the node's /24; pods are spread
/// round-robin over the namespaces by their cluster-wide number.
pub fn pod(spec: &K8sSpec, node: usize, index: usize) -> Pod {
    let global = node * spec.pods_per_node + index;
    let namespace = global % spec.namespaces.max(1);
    let ip = node_subnet_host(node, 3 + index as u8);
    Pod {
        lsp: format!(
            "{}_{}-pod{index}",
            namespace_name(namespace),
            node_name(node)
        ),
        node,
        namespace,
        mac: mac_for(ip),
        ip,
    }
}

/// The pods of a namespace, in cluster-wide order.
pub fn namespace_pods(spec: &K8sSpec, namespace: usize) -> Vec<Pod> {
    (namespace..spec.total_pods())
        .step_by(spec.namespaces.max(1))
        .map(|g| pod(spec, g / spec.pods_per_node, g % spec.pods_per_node))
        .collect()
}

/// A Kubernetes service: one TCP load balancer with one VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// `Service_<namespace>/<service>_TCP_cluster`, as ovn-kubernetes names it.
    pub name: String,
    pub namespace: usize,
    pub vip: SocketAddrV4,
    /// Two or three distinct pods of the service's namespace (fewer if it has fewer pods).
    pub backends: Vec<SocketAddrV4>,
}

/// Service `index`: VIP 172.30.0.1 onwards, in namespace `index % namespaces`.
pub fn service(spec: &K8sSpec, index: usize) -> Service {
    let namespaces = spec.namespaces.max(1);
    let namespace = index % namespaces;
    let port = SERVICE_PORTS[index % SERVICE_PORTS.len()];
    let target = if port < 1024 { port + 8000 } else { port };
    let pods = namespace_pods(spec, namespace);
    let wanted = (2 + index % 2).min(pods.len());
    // Successive services of a namespace start three pods further on, so that backends
    // spread over the namespace's pods (and so over the nodes).
    let start = (index / namespaces) * 3;
    let backends = (0..wanted)
        .map(|b| SocketAddrV4::new(pods[(start + b) % pods.len()].ip, target))
        .collect();
    Service {
        name: format!(
            "Service_{}/svc{index}_TCP_cluster",
            namespace_name(namespace)
        ),
        namespace,
        vip: SocketAddrV4::new(offset(Ipv4Addr::new(172, 30, 0, 0), index + 1), port),
        backends,
    }
}

/// The logical ports bound to node `node`'s chassis: its pods, its management port and the
/// four l3gateway ports of its gateway router (both ends of the join and external patches).
pub fn node_bound_ports(spec: &K8sSpec, node: usize) -> Vec<String> {
    let gr = gateway_router(node);
    let mut ports: Vec<String> = (0..spec.pods_per_node)
        .map(|i| pod(spec, node, i).lsp)
        .collect();
    ports.push(management_port(node).0);
    ports.extend([
        format!("rtoj-{gr}"),
        format!("jtor-{gr}"),
        format!("rtoe-{gr}"),
        format!("etor-{gr}"),
    ]);
    ports
}

/// VIFs (interface name, logical port) that node `node`'s hypervisor has on `br-int`: one
/// per pod and the management port's internal interface `ovn-k8s-mp0`.
pub fn node_vifs(spec: &K8sSpec, node: usize) -> Vec<(String, String)> {
    let mut vifs: Vec<(String, String)> = (0..spec.pods_per_node)
        .map(|i| (format!("pod{i}"), pod(spec, node, i).lsp))
        .collect();
    vifs.push(("ovn-k8s-mp0".to_owned(), management_port(node).0));
    vifs
}

/// What a controller did as the chassis of one node of the generated cluster.
#[derive(Debug, Clone)]
pub struct ControllerRun {
    /// From starting the controller to `ovn-nbctl --wait=hv sync` returning.
    pub first_sync: Duration,
    /// OpenFlow flows in `br-int` then.
    pub flows: u64,
    pub peak_rss_kib: u64,
    /// Logical ports bound to the node's chassis then, sorted.
    pub bound_ports: Vec<String>,
}

/// Adds node `node`'s hypervisor to `lab` (with VIFs for its pods and management port),
/// starts `controller` on it, which takes over the node's `Chassis` row, and waits until it
/// has installed the flows of the whole Southbound database (`--wait=hv`).
pub fn run_node_controller(
    lab: &mut Lab,
    spec: &K8sSpec,
    node: usize,
    controller: &Controller,
) -> Result<ControllerRun> {
    let name = node_name(node);
    let vifs = node_vifs(spec, node);
    let pairs: Vec<(&str, &str)> = vifs.iter().map(|(v, p)| (v.as_str(), p.as_str())).collect();
    lab.add_bare_chassis(&name)?.add_vifs(&pairs)?;
    let start = Instant::now();
    lab.start_controller(&name, controller)?;
    let central = lab.central();
    central
        .wait_for_chassis_private(&name, Duration::from_secs(u64::from(LARGE_DB_TIMEOUT_SECS)))?;
    central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &["--wait=hv", "sync"])?;
    let first_sync = start.elapsed();
    let chassis = lab.chassis(&name)?;
    let flows = chassis.flow_count("br-int")?;
    let peak_rss_kib = chassis
        .controller()
        .ok_or_else(|| HarnessError::Config(format!("no controller on {name}")))?
        .peak_rss_kib()?;
    Ok(ControllerRun {
        first_sync,
        flows,
        peak_rss_kib,
        bound_ports: central.ports_bound_to(&name)?,
    })
}

/// How the build went.
#[derive(Debug, Clone)]
pub struct K8sBuild {
    /// Name and duration of each phase, in order.
    pub phases: Vec<(&'static str, Duration)>,
    /// `ovn-nbctl` invocations that wrote the Northbound topology.
    pub nbctl_invocations: usize,
    /// Port bindings given a chassis.
    pub bound_ports: usize,
}

/// Builds the cluster: chassis, Northbound topology (northd paused meanwhile), northd's
/// Southbound (`--wait=sb sync`), then port bindings claimed for every node's chassis.
/// On return northd has processed everything.
pub fn build_k8s(central: &Central, spec: K8sSpec) -> Result<K8sBuild> {
    spec.check()?;
    let mut phases = Vec::new();
    let mut t = Instant::now();
    let mut phase = |name: &'static str, t: &mut Instant| {
        phases.push((name, t.elapsed()));
        *t = Instant::now();
    };

    // Chassis first: northd resolves `requested-chassis` and reads the chassis' features.
    central.sbctl(&chassis_commands(&spec))?;
    phase("chassis (ovn-sbctl chassis-add)", &mut t);

    central.northd_appctl(&["pause"])?;
    let written = write_northbound(central, &spec);
    let resumed = central.northd_appctl(&["resume"]);
    let nbctl_invocations = written?;
    resumed?;
    phase("northbound (ovn-nbctl)", &mut t);

    central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &["--wait=sb", "sync"])?;
    phase("northd (--wait=sb sync)", &mut t);

    // `ovn-sbctl lsp-bind` would do, but every invocation of it first downloads Logical_Flow
    // and a dozen other tables (0.9 s per invocation at 50 nodes), and a `set` that names its
    // row scans the table for it; a `set` of the same column by UUID is a hash lookup, so all
    // nodes are bound in one transaction.
    let chassis = row_uuids(central, "Chassis", "name")?;
    let ports = row_uuids(central, "Port_Binding", "logical_port")?;
    let mut bind = Vec::new();
    for node in 0..spec.nodes {
        bind.extend(bind_commands(&spec, node, &chassis, &ports)?);
    }
    let bound_ports = bind.iter().filter(|a| a.starts_with("chassis=")).count();
    central.sbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &bind)?;
    phase("bind (ovn-sbctl set Port_Binding)", &mut t);
    // northd copies `up` to the Northbound ports.
    central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &["--wait=sb", "sync"])?;
    phase("northd after bind (--wait=sb sync)", &mut t);

    Ok(K8sBuild {
        phases,
        nbctl_invocations,
        bound_ports,
    })
}

fn write_northbound(central: &Central, spec: &K8sSpec) -> Result<usize> {
    let group = central.nbctl(&["create", "Load_Balancer_Group", &format!("name={LB_GROUP}")])?;
    let group = group.trim().to_owned();
    let batches = northbound_batches(spec, &group);
    for batch in &batches {
        let mut args = vec!["--no-leader-only".to_owned()];
        args.extend(batch.iter().cloned());
        central.nbctl(&args)?;
    }
    Ok(batches.len() + 1)
}

/// `ovn-sbctl` arguments that add every node's chassis with its Geneve encap and features.
pub fn chassis_commands(spec: &K8sSpec) -> Vec<String> {
    let mut b = Batch::default();
    for node in 0..spec.nodes {
        let name = node_name(node);
        b.cmd(["chassis-add", &name, "geneve", &node_ip(node).to_string()]);
        let mut set = vec![
            "set".to_owned(),
            "Chassis".to_owned(),
            name.clone(),
            format!("hostname={}", quoted(&name)),
        ];
        set.extend(
            CHASSIS_FEATURES
                .iter()
                .map(|f| format!("other_config:{f}=\"true\"")),
        );
        b.cmd(set);
    }
    b.0
}

/// `ovn-sbctl` arguments that bind node `node`'s ports to its chassis, as `ovn-sbctl
/// lsp-bind` does; pods and the management port are also marked up, as their controller does
/// once their flows are installed. `chassis` and `ports` map `Chassis` names and
/// `Port_Binding` logical ports to row UUIDs.
pub fn bind_commands<S: BuildHasher>(
    spec: &K8sSpec,
    node: usize,
    chassis: &HashMap<String, String, S>,
    ports: &HashMap<String, String, S>,
) -> Result<Vec<String>> {
    let missing = |what: &str| HarnessError::Config(format!("no {what} in the Southbound"));
    let name = node_name(node);
    let chassis = chassis
        .get(&name)
        .ok_or_else(|| missing(&format!("chassis {name}")))?;
    let mut b = Batch::default();
    let vifs = spec.pods_per_node + 1;
    for (i, port) in node_bound_ports(spec, node).iter().enumerate() {
        let uuid = ports
            .get(port)
            .ok_or_else(|| missing(&format!("port binding {port}")))?;
        let mut set = vec![
            "set".to_owned(),
            "Port_Binding".to_owned(),
            uuid.clone(),
            format!("chassis={chassis}"),
        ];
        if i < vifs {
            set.push("up=true".to_owned());
        }
        b.cmd(set);
    }
    Ok(b.0)
}

/// UUIDs of the rows of Southbound `table` by the value of its string column `key`.
fn row_uuids(central: &Central, table: &str, key: &str) -> Result<HashMap<String, String>> {
    let out = central.sbctl(&[
        "--format=csv",
        "--no-headings",
        "--data=bare",
        &format!("--columns={key},_uuid"),
        "list",
        table,
    ])?;
    Ok(out
        .lines()
        .filter_map(|l| l.rsplit_once(','))
        .map(|(k, u)| (k.trim_matches('"').to_owned(), u.to_owned()))
        .collect())
}

/// The `ovn-nbctl` invocations (each a list of `-- command` arguments) that write the
/// topology; `group` is the UUID of the `Load_Balancer_Group`.
pub fn northbound_batches(spec: &K8sSpec, group: &str) -> Vec<Vec<String>> {
    let mut batches = vec![cluster_batch()];
    batches.extend((0..spec.nodes).map(|n| node_batch(spec, n, group)));
    let services: Vec<usize> = (0..spec.services).collect();
    batches.extend(
        services
            .chunks(SERVICES_PER_BATCH)
            .map(|chunk| service_batch(spec, chunk, group)),
    );
    let namespaces: Vec<usize> = (0..spec.namespaces).collect();
    batches.extend(
        namespaces
            .chunks(NAMESPACES_PER_BATCH)
            .map(|chunk| namespace_batch(spec, chunk)),
    );
    batches.push(cluster_port_groups_batch(spec));
    batches
}

/// Cluster router, join switch, the cluster-wide router policies and port groups with their
/// ACLs (members are added once the nodes exist).
fn cluster_batch() -> Vec<String> {
    let mut b = Batch::default();
    let rtoj = format!("rtoj-{CLUSTER_ROUTER}");
    let jtor = format!("jtor-{CLUSTER_ROUTER}");
    let join_router_ip = Ipv4Addr::new(100, 64, 0, 1);
    b.cmd(["lr-add", CLUSTER_ROUTER]);
    b.cmd(["ls-add", JOIN_SWITCH]);
    b.cmd([
        "lrp-add",
        CLUSTER_ROUTER,
        &rtoj,
        &mac_for(join_router_ip),
        &format!("{join_router_ip}/16"),
    ]);
    b.router_lsp(JOIN_SWITCH, &jtor, &rtoj, "router");
    for dst in [CLUSTER_NETWORK, JOIN_NETWORK] {
        b.cmd([
            "lr-policy-add",
            CLUSTER_ROUTER,
            "102",
            &format!("ip4.src == {CLUSTER_NETWORK} && ip4.dst == {dst}"),
            "allow",
        ]);
    }
    b.cmd(["pg-add", CLUSTER_PORT_GROUP]);
    b.cmd(["pg-add", CLUSTER_RTR_PORT_GROUP]);
    // Multicast: denied to and from pods, allowed through the node switches' router ports.
    b.pg_acl(
        CLUSTER_PORT_GROUP,
        "from-lport",
        1011,
        MULTICAST_MATCH,
        "drop",
        true,
    );
    b.pg_acl(
        CLUSTER_PORT_GROUP,
        "to-lport",
        1011,
        MULTICAST_MATCH,
        "drop",
        false,
    );
    b.pg_acl(
        CLUSTER_RTR_PORT_GROUP,
        "from-lport",
        1012,
        &format!("inport == @{CLUSTER_RTR_PORT_GROUP} && {MULTICAST_MATCH}"),
        "allow",
        true,
    );
    b.pg_acl(
        CLUSTER_RTR_PORT_GROUP,
        "to-lport",
        1012,
        &format!("outport == @{CLUSTER_RTR_PORT_GROUP} && {MULTICAST_MATCH}"),
        "allow",
        false,
    );
    // Hairpinned service traffic (pod -> service -> same pod) passes network policies.
    let hairpin = format!("ip4.src == {HAIRPIN_SNAT_IP}");
    b.pg_acl(
        CLUSTER_PORT_GROUP,
        "to-lport",
        1001,
        &hairpin,
        "allow-related",
        false,
    );
    b.pg_acl(
        CLUSTER_PORT_GROUP,
        "from-lport",
        1001,
        &hairpin,
        "allow-related",
        true,
    );
    b.0
}

/// Node switch with pods and management port, gateway router with join and external
/// switch ports, routes, SNAT and the cluster router's per-node route and policy.
fn node_batch(spec: &K8sSpec, node: usize, group: &str) -> Vec<String> {
    let mut b = Batch::default();
    let name = node_name(node);
    let gr = gateway_router(node);
    let ext = external_switch(node);
    let router_ip = node_subnet_host(node, 1);
    let (mgmt, mgmt_mac, mgmt_ip) = management_port(node);
    let subnet = format!("{}/24", node_subnet(node));
    let node_ip = node_ip(node).to_string();
    let join_ip = join_ip(node);

    // The node switch.
    b.cmd(["ls-add", &name]);
    b.cmd([
        "set",
        "Logical_Switch",
        &name,
        &format!("other_config:subnet={}", quoted(&subnet)),
    ]);
    b.cmd(["add", "Logical_Switch", &name, "load_balancer_group", group]);
    let rtos = format!("rtos-{name}");
    b.cmd([
        "lrp-add",
        CLUSTER_ROUTER,
        &rtos,
        &mac_for(router_ip),
        &format!("{router_ip}/24"),
    ]);
    b.router_lsp(&name, &format!("stor-{name}"), &rtos, "router");
    b.cmd(["lsp-add", &name, &mgmt]);
    b.cmd(["lsp-set-addresses", &mgmt, &format!("{mgmt_mac} {mgmt_ip}")]);
    // The node itself (through its management port) may reach every pod of the node.
    b.cmd([
        "acl-add",
        &name,
        "to-lport",
        "1001",
        &format!("ip4.src=={mgmt_ip}"),
        "allow-related",
    ]);
    for index in 0..spec.pods_per_node {
        let p = pod(spec, node, index);
        let address = p.address();
        b.cmd(["lsp-add", &name, &p.lsp]);
        b.cmd(["lsp-set-addresses", &p.lsp, &address]);
        b.cmd(["lsp-set-port-security", &p.lsp, &address]);
        b.cmd([
            "lsp-set-options",
            &p.lsp,
            &format!("requested-chassis={name}"),
        ]);
    }

    // The cluster router sends the node's pods out through its gateway router, and traffic
    // for the node itself to the management port.
    b.cmd([
        "--policy=src-ip",
        "lr-route-add",
        CLUSTER_ROUTER,
        &subnet,
        &join_ip.to_string(),
    ]);
    b.cmd([
        "lr-policy-add",
        CLUSTER_ROUTER,
        "1004",
        &format!("inport == \"{rtos}\" && ip4.dst == {node_ip} /* {name} */"),
        "reroute",
        &mgmt_ip.to_string(),
    ]);

    // The gateway router.
    b.cmd(["lr-add", &gr]);
    b.cmd([
        "set",
        "Logical_Router",
        &gr,
        &format!("options:chassis={}", quoted(&name)),
        "options:lb_force_snat_ip=router_ip",
        "options:snat-ct-zone=0",
        "options:always_learn_from_arp_request=false",
        "options:dynamic_neigh_routers=true",
        &format!("external_ids:physical_ip={}", quoted(&node_ip)),
    ]);
    b.cmd(["add", "Logical_Router", &gr, "load_balancer_group", group]);
    let rtoj = format!("rtoj-{gr}");
    b.cmd([
        "lrp-add",
        &gr,
        &rtoj,
        &mac_for(join_ip),
        &format!("{join_ip}/16"),
    ]);
    b.router_lsp(JOIN_SWITCH, &format!("jtor-{gr}"), &rtoj, "router");
    b.cmd(["lr-route-add", &gr, CLUSTER_NETWORK, "100.64.0.1"]);

    // The external switch with the node's uplink.
    b.cmd(["ls-add", &ext]);
    let rtoe = format!("rtoe-{gr}");
    let ext_mac = external_mac(node);
    b.cmd(["lrp-add", &gr, &rtoe, &ext_mac, &format!("{node_ip}/16")]);
    b.router_lsp(&ext, &format!("etor-{gr}"), &rtoe, &ext_mac);
    let localnet = format!("breth0_{name}");
    b.cmd(["lsp-add", &ext, &localnet]);
    b.cmd(["lsp-set-type", &localnet, "localnet"]);
    b.cmd(["lsp-set-addresses", &localnet, "unknown"]);
    b.cmd([
        "lsp-set-options",
        &localnet,
        &format!("network_name={PHYSNET}"),
    ]);
    b.cmd([
        "lr-route-add",
        &gr,
        "0.0.0.0/0",
        &NODE_GATEWAY.to_string(),
        &rtoe,
    ]);
    b.cmd(["lr-nat-add", &gr, "snat", &node_ip, CLUSTER_NETWORK]);
    b.0
}

/// One load balancer per service, each added to the group.
fn service_batch(spec: &K8sSpec, services: &[usize], group: &str) -> Vec<String> {
    let mut b = Batch::default();
    for &index in services {
        let s = service(spec, index);
        let id = format!("@lb{index}");
        let backends = s
            .backends
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let owner = format!("{}/svc{index}", namespace_name(s.namespace));
        let mut create = vec![
            format!("--id={id}"),
            "create".to_owned(),
            "Load_Balancer".to_owned(),
            format!("name={}", quoted(&s.name)),
            "protocol=tcp".to_owned(),
            format!("vips:{}={}", quoted(&s.vip.to_string()), quoted(&backends)),
            "options:reject=\"true\"".to_owned(),
            "options:event=\"false\"".to_owned(),
            "options:skip_snat=\"false\"".to_owned(),
            "external_ids:\"k8s.ovn.org/kind\"=Service".to_owned(),
            format!("external_ids:\"k8s.ovn.org/owner\"={}", quoted(&owner)),
        ];
        if spec.hairpin_snat_ip {
            create.push(format!(
                "options:hairpin_snat_ip={}",
                quoted(&format!("{HAIRPIN_SNAT_IP} fd69::5"))
            ));
        }
        b.cmd(create);
        b.cmd(["add", "Load_Balancer_Group", group, "load_balancer", &id]);
    }
    b.0
}

/// Address sets of the namespaces, and for those with policies the default-deny port group
/// and one port group per policy with its ACL. Policy 0 allows ingress from the namespace
/// itself; policy p > 0 allows TCP port 8080+p from namespace (n + p) mod namespaces.
fn namespace_batch(spec: &K8sSpec, namespaces: &[usize]) -> Vec<String> {
    let mut b = Batch::default();
    for &ns in namespaces {
        let pods = namespace_pods(spec, ns);
        let ips: Vec<String> = pods.iter().map(|p| quoted(&p.ip.to_string())).collect();
        let set = namespace_address_set(ns);
        let mut create = vec![
            "create".to_owned(),
            "Address_Set".to_owned(),
            format!("name={set}"),
            format!("external_ids:name={}", quoted(&namespace_name(ns))),
        ];
        if !ips.is_empty() {
            create.push(format!("addresses={}", ips.join(",")));
        }
        b.cmd(create);
        if spec.policies_per_namespace == 0 {
            continue;
        }
        let members: Vec<&str> = pods.iter().map(|p| p.lsp.as_str()).collect();
        let deny = default_deny_port_group(ns);
        b.cmd(["pg-add", &deny].into_iter().chain(members.iter().copied()));
        b.pg_acl(
            &deny,
            "to-lport",
            1001,
            &format!("outport == @{deny} && (arp || nd)"),
            "allow",
            false,
        );
        b.pg_acl(
            &deny,
            "to-lport",
            1000,
            &format!("outport == @{deny}"),
            "drop",
            false,
        );
        for policy in 0..spec.policies_per_namespace {
            let pg = policy_port_group(ns, policy);
            b.cmd(["pg-add", &pg].into_iter().chain(members.iter().copied()));
            let mtch = if policy == 0 {
                format!("ip4.src == {{${set}}} && outport == @{pg}")
            } else {
                let from = namespace_address_set((ns + policy) % spec.namespaces);
                format!(
                    "ip4.src == {{${from}}} && tcp && tcp.dst == {} && outport == @{pg}",
                    8080 + policy
                )
            };
            b.pg_acl(&pg, "to-lport", 1001, &mtch, "allow-related", false);
        }
    }
    b.0
}

fn cluster_port_groups_batch(spec: &K8sSpec) -> Vec<String> {
    let mut b = Batch::default();
    b.cmd(
        ["pg-set-ports".to_owned(), CLUSTER_PORT_GROUP.to_owned()]
            .into_iter()
            .chain((0..spec.nodes).map(|n| management_port(n).0)),
    );
    b.cmd(
        ["pg-set-ports".to_owned(), CLUSTER_RTR_PORT_GROUP.to_owned()]
            .into_iter()
            .chain((0..spec.nodes).map(|n| format!("stor-{}", node_name(n)))),
    );
    b.0
}

/// Arguments of one `ovn-nbctl`/`ovn-sbctl` invocation, each command led by `--`.
#[derive(Debug, Default)]
struct Batch(Vec<String>);

impl Batch {
    fn cmd<S: AsRef<str>>(&mut self, args: impl IntoIterator<Item = S>) {
        self.0.push("--".to_owned());
        self.0
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
    }

    /// A switch port of type router peered with router port `peer`.
    fn router_lsp(&mut self, switch: &str, lsp: &str, peer: &str, addresses: &str) {
        self.cmd(["lsp-add", switch, lsp]);
        self.cmd(["lsp-set-type", lsp, "router"]);
        self.cmd(["lsp-set-addresses", lsp, addresses]);
        self.cmd(["lsp-set-options", lsp, &format!("router-port={peer}")]);
    }

    /// An ACL on port group `pg` (`apply-after-lb` for the egress ACLs, as ovn-kubernetes
    /// applies policies after load balancing).
    fn pg_acl(
        &mut self,
        pg: &str,
        direction: &str,
        priority: u16,
        mtch: &str,
        action: &str,
        after_lb: bool,
    ) {
        let id = format!("@acl{}", self.0.len());
        let mut create = vec![
            format!("--id={id}"),
            "create".to_owned(),
            "ACL".to_owned(),
            format!("direction={direction}"),
            format!("priority={priority}"),
            format!("match={}", quoted(mtch)),
            format!("action={action}"),
        ];
        if after_lb {
            create.push("options:apply-after-lb=\"true\"".to_owned());
        }
        self.cmd(create);
        self.cmd(["add", "Port_Group", pg, "acls", &id]);
    }
}

/// `s` as an OVSDB string in the database commands' syntax (a JSON string).
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn offset(base: Ipv4Addr, n: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base) + n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: K8sSpec = K8sSpec {
        nodes: 3,
        pods_per_node: 4,
        services: 7,
        namespaces: 5,
        policies_per_namespace: 2,
        hairpin_snat_ip: true,
    };

    #[test]
    fn addresses_follow_the_openshift_plan() {
        assert_eq!(node_subnet(0), Ipv4Addr::new(10, 128, 0, 0));
        assert_eq!(node_subnet(255), Ipv4Addr::new(10, 128, 255, 0));
        assert_eq!(node_subnet(256), Ipv4Addr::new(10, 129, 0, 0));
        assert_eq!(node_subnet(1023), Ipv4Addr::new(10, 131, 255, 0));
        assert_eq!(node_ip(0), Ipv4Addr::new(172, 18, 0, 2));
        assert_eq!(node_ip(254), Ipv4Addr::new(172, 18, 1, 0));
        assert_eq!(join_ip(1), Ipv4Addr::new(100, 64, 0, 3));
        assert_eq!(mac_for(Ipv4Addr::new(10, 128, 2, 3)), "0a:58:0a:80:02:03");
        assert_eq!(external_mac(0), "02:42:ac:12:00:02");
        assert_eq!(
            management_port(2),
            (
                "k8s-node2".to_owned(),
                "0a:58:0a:80:02:02".to_owned(),
                Ipv4Addr::new(10, 128, 2, 2)
            )
        );
    }

    #[test]
    fn pods_are_spread_over_namespaces() {
        let p = pod(&SMALL, 1, 2);
        assert_eq!(p.lsp, "ns1_node1-pod2");
        assert_eq!((p.node, p.namespace), (1, 6 % 5));
        assert_eq!(p.address(), "0a:58:0a:80:01:05 10.128.1.5");
        let all: Vec<Pod> = (0..SMALL.namespaces)
            .flat_map(|ns| namespace_pods(&SMALL, ns))
            .collect();
        assert_eq!(all.len(), SMALL.total_pods());
        let mut names: Vec<&str> = all.iter().map(|p| p.lsp.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SMALL.total_pods(), "every pod exactly once");
        assert!(namespace_pods(&SMALL, 3).iter().all(|p| p.namespace == 3));
        assert_eq!(namespace_pods(&SMALL, 0).len(), 3); // pods 0, 5, 10
    }

    #[test]
    fn services_balance_over_pods_of_their_namespace() {
        for index in 0..SMALL.services {
            let s = service(&SMALL, index);
            assert_eq!(s.namespace, index % SMALL.namespaces);
            let ns_ips: Vec<Ipv4Addr> = namespace_pods(&SMALL, s.namespace)
                .iter()
                .map(|p| p.ip)
                .collect();
            assert!(!s.backends.is_empty() && s.backends.len() <= 3);
            assert!(s.backends.iter().all(|b| ns_ips.contains(b.ip())));
            let mut ips: Vec<_> = s.backends.iter().map(|b| *b.ip()).collect();
            ips.dedup();
            assert_eq!(ips.len(), s.backends.len(), "distinct backends");
        }
        let s = service(&K8sSpec::BENCHMARK, 999);
        assert_eq!(s.vip, "172.30.3.232:5432".parse().unwrap());
        assert_eq!(s.name, "Service_ns49/svc999_TCP_cluster");
        assert_eq!(s.backends.len(), 3);
        assert_eq!(service(&SMALL, 1).vip.port(), 443);
        assert_eq!(service(&SMALL, 1).backends[0].port(), 8443);
    }

    #[test]
    fn limits_are_checked() {
        assert!(K8sSpec::BENCHMARK.check().is_ok());
        assert!(SMALL.check().is_ok());
        for bad in [
            K8sSpec { nodes: 0, ..SMALL },
            K8sSpec {
                nodes: 1025,
                ..SMALL
            },
            K8sSpec {
                pods_per_node: 251,
                ..SMALL
            },
            K8sSpec {
                namespaces: 0,
                ..SMALL
            },
            K8sSpec {
                namespaces: 13,
                ..SMALL
            },
            K8sSpec {
                pods_per_node: 0,
                namespaces: 1,
                ..SMALL
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        // The last pod of a full node and the last node still get addresses in their /24.
        let last = pod(
            &K8sSpec {
                nodes: 1024,
                pods_per_node: 250,
                ..SMALL
            },
            1023,
            249,
        );
        assert_eq!(last.ip, Ipv4Addr::new(10, 131, 255, 252));
    }

    #[test]
    fn strings_are_quoted_for_the_database_commands() {
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(
            quoted("inport == \"x\" && a\\b"),
            "\"inport == \\\"x\\\" && a\\\\b\""
        );
        assert_eq!(quoted("\n"), "\"\\u000a\"");
    }

    #[test]
    fn batches_name_every_object_once() {
        let batches = northbound_batches(&SMALL, "uuid-of-group");
        // cluster + nodes + one service batch + one namespace batch + cluster port groups.
        assert_eq!(batches.len(), 1 + 3 + 1 + 1 + 1);
        let all: Vec<&String> = batches.iter().flatten().collect();
        let count = |cmd: &str| all.iter().filter(|a| a.as_str() == cmd).count();
        // Node switches, external switches and join.
        assert_eq!(count("ls-add"), 3 + 3 + 1);
        assert_eq!(count("lr-add"), 1 + 3);
        // Pods, management ports, stor-, jtor-, etor-, localnet ports, jtor-cluster router.
        assert_eq!(count("lsp-add"), 12 + 3 * 5 + 1);
        assert_eq!(count("lsp-set-port-security"), 12);
        assert_eq!(count("Load_Balancer"), 7);
        let without = northbound_batches(
            &K8sSpec {
                hairpin_snat_ip: false,
                ..SMALL
            },
            "g",
        );
        let hairpin = |b: &Vec<Vec<String>>| {
            b.iter()
                .flatten()
                .filter(|a| a.starts_with("options:hairpin_snat_ip="))
                .count()
        };
        assert_eq!((hairpin(&batches), hairpin(&without)), (7, 0));
        assert_eq!(count("load_balancer_group"), 3 + 3, "node switches and GRs");
        // Default deny + one per policy for each namespace, and the two cluster groups.
        assert_eq!(count("pg-add"), 5 * (1 + 2) + 2);
        // 6 cluster-wide, 2 default deny and 1 per policy per namespace.
        assert_eq!(count("ACL"), 6 + 5 * (2 + 2));
        assert_eq!(
            count("acl-add"),
            3,
            "one management-port ACL per node switch"
        );
        let node1 = &batches[2];
        assert!(node1.contains(&"requested-chassis=node1".to_owned()));
        assert!(node1.contains(&"options:chassis=\"node1\"".to_owned()));
        assert!(node1.contains(&"network_name=physnet".to_owned()));
        assert!(node1
            .contains(&"inport == \"rtos-node1\" && ip4.dst == 172.18.0.3 /* node1 */".to_owned()));
        // Every command is introduced by "--" and no argument is empty.
        for batch in &batches {
            assert_eq!(batch[0], "--");
            assert!(batch.iter().all(|a| !a.is_empty()));
        }
    }

    #[test]
    fn vifs_are_the_pods_and_the_management_port() {
        let vifs = node_vifs(&SMALL, 2);
        assert_eq!(vifs.len(), 5);
        assert_eq!(vifs[0], ("pod0".to_owned(), pod(&SMALL, 2, 0).lsp));
        assert_eq!(vifs[4], ("ovn-k8s-mp0".to_owned(), "k8s-node2".to_owned()));
        let bound = node_bound_ports(&SMALL, 2);
        assert!(vifs.iter().all(|(_, lsp)| bound.contains(lsp)));
    }

    #[test]
    fn every_node_binds_its_ports_and_marks_vifs_up() {
        let chassis: HashMap<String, String> = (0..SMALL.nodes)
            .map(|n| (node_name(n), format!("uuid{n}")))
            .collect();
        // Port binding UUIDs named after the port, to read the commands back.
        let ports: HashMap<String, String> = (0..SMALL.nodes)
            .flat_map(|n| node_bound_ports(&SMALL, n))
            .map(|p| (p.clone(), format!("pb-{p}")))
            .collect();
        let bind: Vec<String> = (0..SMALL.nodes)
            .flat_map(|n| bind_commands(&SMALL, n, &chassis, &ports).unwrap())
            .collect();
        let binds: Vec<(&str, &str)> = bind
            .windows(4)
            .filter(|w| w[0] == "set" && w[1] == "Port_Binding")
            .map(|w| (w[2].as_str(), w[3].as_str()))
            .collect();
        assert_eq!(binds.len(), 3 * (4 + 1 + 4));
        assert!(binds.contains(&("pb-ns1_node1-pod2", "chassis=uuid1")));
        assert!(binds.contains(&("pb-k8s-node2", "chassis=uuid2")));
        assert!(binds.contains(&("pb-rtoj-GR_node0", "chassis=uuid0")));
        assert!(!binds.contains(&("pb-rtoj-GR_node0", "chassis=uuid1")));
        let mut partial = ports.clone();
        partial.remove("k8s-node2");
        let err = bind_commands(&SMALL, 2, &chassis, &partial).unwrap_err();
        assert!(err.to_string().contains("port binding k8s-node2"), "{err}");
        assert!(
            bind_commands(&SMALL, 3, &chassis, &ports).is_err(),
            "no chassis node3"
        );
        assert_eq!(bind.iter().filter(|a| *a == "up=true").count(), 3 * 5);
        let chassis = chassis_commands(&SMALL);
        assert_eq!(chassis.iter().filter(|a| *a == "chassis-add").count(), 3);
        assert!(chassis.contains(&"172.18.0.4".to_owned()));
        assert!(chassis.contains(&"other_config:ct-no-masked-label=\"true\"".to_owned()));
    }
}
