//! The generated rows decode what the real daemons write: a Southbound
//! database filled by `ovn-northd` (logical switches, a router, ACLs, a load
//! balancer, DHCP, chassis) and an Open_vSwitch database filled by `ovs-vsctl`.
//! Every table of each schema is monitored; the replica must equal
//! `ovsdb-client dump`, with no row skipped.

use std::time::Duration;

use integration::central::start_ovsdb;
use integration::host::Host;
use integration::ovsdb_cluster::{differences, dump, replica_dump, DbDump};
use integration::Central;
use sbclient::ovn_sb::{self, LogicalFlow};
use sbclient::vswitch::{self, Interface};
use sbclient::{spawn, ClientConfig, Event, Remote, Replica};

/// `ours` without the columns the server's rows lack: the model has columns of later
/// schemas (sbclient's `LATER_SB_COLUMNS`), not monitored on an older server and read as
/// their default.
fn only_server_columns(mut ours: DbDump, server: &DbDump) -> DbDump {
    for (table, rows) in &mut ours {
        let Some(theirs) = server.get(table).and_then(|t| t.values().next()) else {
            continue;
        };
        for row in rows.values_mut() {
            row.retain(|column, _| theirs.contains_key(column));
        }
    }
    ours
}

/// Monitors every table of `replica`'s database at `remote` until the replica
/// equals the dump (or 30 s pass); returns the replica.
async fn monitor_until_equal(mut replica: Replica, host: &Host, remote: &str) -> Replica {
    let db = replica.database().to_owned();
    let config =
        ClientConfig::new(Remote::parse_list(remote).unwrap(), &db).monitor_replica(&replica);
    let (client, mut events) = spawn(config);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut diff = vec!["not connected yet".to_owned()];
    while tokio::time::Instant::now() < deadline {
        while let Ok(Some(event)) =
            tokio::time::timeout(Duration::from_millis(200), events.recv()).await
        {
            event.apply(&mut replica).unwrap();
            if matches!(event, Event::Disconnected { .. }) {
                panic!("disconnected: {event:?}");
            }
        }
        let server = dump(host, remote, &db).unwrap();
        let ours = only_server_columns(replica_dump(&replica), &server);
        diff = differences(&ours, &server);
        if diff.is_empty() {
            let server: DbDump = server
                .into_iter()
                .filter(|(t, _)| ours.contains_key(t))
                .collect();
            assert_eq!(ours, server);
            break;
        }
    }
    assert_eq!(diff, Vec::<String>::new());
    assert_eq!(replica.stats().rows_skipped, 0);
    assert_eq!(replica.stats().unknown_tables, 0);
    client.shutdown().await;
    replica
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn northd_southbound_content_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let central = Central::start(dir.path()).unwrap();
    for args in [
        vec!["ls-add", "ls1"],
        vec!["lsp-add", "ls1", "vm1"],
        vec!["lsp-set-addresses", "vm1", "00:00:00:00:00:01 10.0.0.11"],
        vec![
            "lsp-set-port-security",
            "vm1",
            "00:00:00:00:00:01 10.0.0.11",
        ],
        vec!["lsp-add", "ls1", "vm2"],
        vec!["lsp-set-addresses", "vm2", "00:00:00:00:00:02 10.0.0.12"],
        vec!["ls-add", "ls2"],
        vec!["lsp-add", "ls2", "vm3"],
        vec!["lsp-set-addresses", "vm3", "00:00:00:00:00:03 20.0.0.13"],
        vec!["lr-add", "lr1"],
        vec![
            "lrp-add",
            "lr1",
            "lr1-ls1",
            "00:00:00:00:ff:01",
            "10.0.0.1/24",
        ],
        vec![
            "lrp-add",
            "lr1",
            "lr1-ls2",
            "00:00:00:00:ff:02",
            "20.0.0.1/24",
        ],
        vec!["lsp-add", "ls1", "ls1-lr1"],
        vec!["lsp-set-type", "ls1-lr1", "router"],
        vec!["lsp-set-addresses", "ls1-lr1", "router"],
        vec!["lsp-set-options", "ls1-lr1", "router-port=lr1-ls1"],
        vec!["lsp-add", "ls2", "ls2-lr1"],
        vec!["lsp-set-type", "ls2-lr1", "router"],
        vec!["lsp-set-addresses", "ls2-lr1", "router"],
        vec!["lsp-set-options", "ls2-lr1", "router-port=lr1-ls2"],
        vec![
            "acl-add",
            "ls1",
            "from-lport",
            "1000",
            "ip4 && tcp.dst == 22",
            "drop",
        ],
        vec![
            "lb-add",
            "lb1",
            "10.0.0.100:80",
            "10.0.0.11:8080,10.0.0.12:8080",
            "tcp",
        ],
        vec!["ls-lb-add", "ls1", "lb1"],
    ] {
        central.nbctl(&args).unwrap();
    }
    let dhcp = central
        .nbctl(&[
            "create",
            "DHCP_Options",
            "cidr=10.0.0.0/24",
            "options:router=10.0.0.1",
            "options:server_id=10.0.0.1",
            "options:server_mac=00:00:00:00:ff:01",
            "options:lease_time=3600",
        ])
        .unwrap();
    central
        .nbctl(&["lsp-set-dhcpv4-options", "vm1", dhcp.trim()])
        .unwrap();
    central
        .sbctl(&["chassis-add", "hv1", "geneve", "192.168.0.1"])
        .unwrap();
    central.wait_sb_sync().unwrap();

    let mut replica = Replica::new(ovn_sb::DATABASE);
    ovn_sb::register_all(&mut replica);
    let replica = monitor_until_equal(replica, central.host(), &central.sb_remote()).await;
    let flows = replica.table::<LogicalFlow>().unwrap();
    assert!(
        flows.len() > 100,
        "northd wrote {} logical flows",
        flows.len()
    );
    eprintln!(
        "{} Logical_Flow rows, {} tables, {} rows applied",
        flows.len(),
        replica.table_names().count(),
        replica.stats().rows_applied
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ovs_vsctl_content_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::create(dir.path(), "hv").unwrap();
    let _server = start_ovsdb(&host, "conf", &integration::ovs::vswitch_schema()).unwrap();
    let remote = format!("unix:{}", host.path("conf.sock").display());
    let vsctl = |args: &[&str]| {
        let mut all = vec![format!("--db={remote}"), "--no-wait".to_owned()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        host.run("ovs-vsctl", &all).unwrap();
    };
    vsctl(&["init"]);
    vsctl(&[
        "add-br",
        "br-int",
        "--",
        "set",
        "Bridge",
        "br-int",
        "fail-mode=secure",
        "datapath_type=dummy",
    ]);
    vsctl(&[
        "add-port",
        "br-int",
        "vif1",
        "--",
        "set",
        "Interface",
        "vif1",
        "type=dummy",
        "external_ids:iface-id=vm1",
        "mtu_request=1400",
        "ofport_request=7",
    ]);
    vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:system-id=hv1",
        "external_ids:ovn-encap-type=geneve",
        "external_ids:ovn-encap-ip=192.168.0.1",
        "external_ids:ovn-remote=unix:/nonexistent",
    ]);
    vsctl(&["set-controller", "br-int", "unix:/nonexistent/br-int.mgmt"]);
    vsctl(&[
        "--id=@m", "create", "Mirror", "name=m1", "--", "add", "Bridge", "br-int", "mirrors", "@m",
    ]);

    let mut replica = Replica::new(vswitch::DATABASE);
    vswitch::register_all(&mut replica);
    let replica = monitor_until_equal(replica, &host, &remote).await;
    let iface = replica
        .table::<Interface>()
        .unwrap()
        .iter()
        .map(|(_, i)| i)
        .find(|i| i.name == "vif1")
        .unwrap()
        .clone();
    assert_eq!(iface.external_ids["iface-id"], "vm1");
    assert_eq!(iface.mtu_request, Some(1400));
    assert_eq!(iface.ofport_request, Some(7));
}
