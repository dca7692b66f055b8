use std::ffi::OsString;
use std::path::Path;

use super::*;

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn daemon(args: &[&str]) -> DaemonArgs {
    match parse_invocation(&argv(args)) {
        Ok(Invocation::Daemon(args)) => *args,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn debian_dirs() -> Dirs {
    Dirs::from_lookup(|_| None)
}

fn resolve(args: &[&str]) -> DaemonConfig {
    let program = Program::from_argv0(OsString::from(args[0]).as_os_str());
    DaemonConfig::resolve(&daemon(args), program, &debian_dirs(), Path::new("/root"))
}

/// The argv ovn-ctl start_controller passes (style-and-operations B1.2).
const OVN_CTL_ARGV: &[&str] = &[
    "ovn-controller",
    "unix:/var/run/openvswitch/db.sock",
    "-vconsole:emer",
    "-vsyslog:err",
    "-vfile:info",
    "--no-chdir",
    "--log-file=/var/log/ovn/ovn-controller.log",
    "--pidfile=/var/run/ovn/ovn-controller.pid",
    "--detach",
];

#[test]
fn ovn_ctl_argv() {
    let args = daemon(OVN_CTL_ARGV);
    assert_eq!(
        args.ovs_database.as_deref(),
        Some("unix:/var/run/openvswitch/db.sock")
    );
    assert_eq!(args.verbose, ["console:emer", "syslog:err", "file:info"]);
    assert!(args.no_chdir && args.detach && !args.monitor && !args.detached_child);
    let config = resolve(OVN_CTL_ARGV);
    assert_eq!(config.program, Program::OvnController);
    assert_eq!(config.ovs_remote, "unix:/var/run/openvswitch/db.sock");
    assert_eq!(
        config.log_file.as_deref(),
        Some(Path::new("/var/log/ovn/ovn-controller.log"))
    );
    assert_eq!(
        config.pidfile.as_deref(),
        Some(Path::new("/var/run/ovn/ovn-controller.pid"))
    );
    assert!(config.detach && !config.chdir);
    assert_eq!(
        config.unixctl_path(4729),
        Path::new("/var/run/ovn/ovn-controller.4729.ctl")
    );
}

#[test]
fn ovn_ctl_argv_with_monitor_user_and_ssl() {
    let config = resolve(&[
        "/usr/bin/ovn-controller",
        "unix:/var/run/openvswitch/db.sock",
        "-vconsole:emer",
        "--monitor",
        "--user",
        "openvswitch:hugetlbfs",
        "-p",
        "/etc/ovn/key.pem",
        "--certificate=/etc/ovn/cert.pem",
        "-C",
        "/etc/ovn/ca.pem",
        "--bootstrap-ca-cert=/etc/ovn/boot.pem",
        "--pidfile",
        "--detach",
    ]);
    assert!(config.monitor);
    assert_eq!(config.user.as_deref(), Some("openvswitch:hugetlbfs"));
    assert_eq!(
        config.ssl.private_key.as_deref(),
        Some(Path::new("/etc/ovn/key.pem"))
    );
    assert_eq!(
        config.ssl.certificate.as_deref(),
        Some(Path::new("/etc/ovn/cert.pem"))
    );
    assert_eq!(
        config.ssl.ca_cert.as_deref(),
        Some(Path::new("/etc/ovn/ca.pem"))
    );
    assert_eq!(
        config.ssl.bootstrap_ca_cert.as_deref(),
        Some(Path::new("/etc/ovn/boot.pem"))
    );
    assert_eq!(
        config.pidfile.as_deref(),
        Some(Path::new("/var/run/ovn/ovn-controller.pid"))
    );
}

#[test]
fn defaults_follow_program_name_and_dirs() {
    let config = resolve(&["ovn-agent", "--pidfile", "--log-file"]);
    assert_eq!(config.program, Program::OvnAgent);
    assert_eq!(config.ovs_remote, "unix:/var/run/openvswitch/db.sock");
    assert_eq!(
        config.pidfile.as_deref(),
        Some(Path::new("/var/run/ovn/ovn-agent.pid"))
    );
    assert_eq!(
        config.log_file.as_deref(),
        Some(Path::new("/var/log/ovn/ovn-agent.log"))
    );
    assert_eq!(
        config.unixctl_path(7),
        Path::new("/var/run/ovn/ovn-agent.7.ctl")
    );
    assert!(config.chdir && !config.detach);
    let plain = resolve(&["ovn-agent"]);
    assert_eq!((plain.pidfile, plain.log_file), (None, None));

    let dirs = Dirs::from_lookup(|name| match name {
        "OVS_RUNDIR" => Some("/tmp/ovs".into()),
        "OVN_RUNDIR" => Some("run".into()),
        _ => None,
    });
    let config = DaemonConfig::resolve(
        &daemon(&[
            "ovn-controller",
            "--pidfile=sub/x.pid",
            "--log-file=logs/a.log",
            "--unixctl=c.ctl",
        ]),
        Program::OvnController,
        &dirs,
        Path::new("/home/op"),
    );
    assert_eq!(config.ovs_remote, "unix:/tmp/ovs/db.sock");
    assert_eq!(
        config.pidfile.as_deref(),
        Some(Path::new("/home/op/run/sub/x.pid"))
    );
    assert_eq!(
        config.log_file.as_deref(),
        Some(Path::new("/home/op/logs/a.log")),
        "log file: relative to cwd"
    );
    assert_eq!(config.unixctl_path(1), Path::new("/home/op/run/c.ctl"));
    assert_eq!(
        DaemonConfig::resolve(
            &daemon(&["ovn-controller"]),
            Program::OvnController,
            &dirs,
            Path::new("/h")
        )
        .unixctl_path(9),
        Path::new("/h/run/ovn-controller.9.ctl")
    );
}

#[test]
fn optional_values_must_be_attached() {
    // As with getopt, `--pidfile /x` is a bare --pidfile plus the database argument.
    let args = daemon(&["ovn-agent", "--pidfile", "unix:/x/db.sock"]);
    assert_eq!(args.pidfile, Some(None));
    assert_eq!(args.ovs_database.as_deref(), Some("unix:/x/db.sock"));
    let args = daemon(&[
        "ovn-agent",
        "-v",
        "--verbose=ofctrl:dbg",
        "-vANY:file:off",
        "--verbose",
    ]);
    assert_eq!(args.verbose, ["", "ofctrl:dbg", "ANY:file:off", ""]);
    // A separate value belongs to the option before it, even if it looks like -v.
    let args = daemon(&["ovn-agent", "-n", "-vhost", "-v"]);
    assert_eq!(args.chassis.as_deref(), Some("-vhost"));
    assert_eq!(args.verbose, [""]);
}

#[test]
fn other_options() {
    let args = daemon(&[
        "ovn-agent",
        "-n",
        "hv1",
        "--overwrite-pidfile",
        "--syslog-method=null",
        "--syslog-target=127.0.0.1:514",
        "--peer-ca-cert=/p.pem",
        "--ssl-protocols=TLSv1.2",
        "--ssl-ciphers=HIGH",
        "--enable-dummy-vif-plug",
        "--no-self-confinement",
        "--table-layout=ovn-23.03",
        "--unixctl=/tmp/a.ctl",
    ]);
    assert_eq!(args.chassis.as_deref(), Some("hv1"));
    assert!(args.overwrite_pidfile && args.enable_dummy_vif_plug && args.no_self_confinement);
    assert_eq!(args.syslog_method.as_deref(), Some("null"));
    assert_eq!(args.syslog_target.as_deref(), Some("127.0.0.1:514"));
    assert_eq!(args.ssl_ciphers.as_deref(), Some("HIGH"));
    let config = DaemonConfig::resolve(&args, Program::OvnAgent, &debian_dirs(), Path::new("/"));
    assert_eq!(config.table_layout, TableLayout::by_name("ovn-23.03"));
    assert_eq!(
        config.ssl.peer_ca_cert.as_deref(),
        Some(Path::new("/p.pem"))
    );
    assert_eq!(config.unixctl_path(3), Path::new("/tmp/a.ctl"));
    assert_eq!(
        daemon(&["ovn-agent", "--chassis=hv2"]).chassis.as_deref(),
        Some("hv2")
    );
    // getopt-style abbreviation of a long option.
    assert!(daemon(&["ovn-agent", "--overwrite"]).overwrite_pidfile);
    assert!(daemon(&["ovn-agent", "-V"]).version);
}

#[test]
fn rejected_command_lines() {
    for bad in [
        &["ovn-agent", "unix:a", "unix:b"][..],
        &["ovn-agent", "--bogus"],
        &["ovn-agent", "--table-layout=wide"],
        &["ovn-agent", "--chassis"],
    ] {
        assert!(parse_invocation(&argv(bad)).is_err(), "{bad:?}");
    }
    let error = parse_invocation(&argv(&["ovn-controller", "--bogus"])).unwrap_err();
    assert!(
        error.render().to_string().contains("ovn-controller"),
        "usage names the program"
    );
}

#[test]
fn compile_stays_a_subcommand() {
    match parse_invocation(&argv(&[
        "ovn-agent",
        "compile",
        "--sb",
        "sb.json",
        "--chassis",
        "hv1",
    ])) {
        Ok(Invocation::Compile(args)) => {
            assert_eq!(args.sb, ["sb.json"]);
            assert_eq!(args.chassis, "hv1");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        parse_invocation(&argv(&["ovn-agent", "compile"])).is_err(),
        "compile needs --sb"
    );
}

#[test]
fn metrics_takes_an_address_and_is_off_by_default() {
    assert_eq!(resolve(OVN_CTL_ARGV).metrics, None);
    let attached = resolve(&["ovn-controller", "--metrics=127.0.0.1:9476", "--monitor"]);
    assert_eq!(attached.metrics, Some("127.0.0.1:9476".parse().unwrap()));
    assert!(
        attached.monitor,
        "--monitor (and its prefix --mon) still parse"
    );
    let separate = resolve(&["ovn-controller", "--metrics", "[::1]:9476", "--mon"]);
    assert_eq!(separate.metrics, Some("[::1]:9476".parse().unwrap()));
    assert!(separate.monitor);
    assert_eq!(
        resolve(&["ovn-controller", "--metrics", "0.0.0.0:1", "unix:/db.sock"]).ovs_remote,
        "unix:/db.sock"
    );
}

#[test]
fn a_bad_metrics_address_is_a_usage_error() {
    for bad in [
        "localhost",
        "127.0.0.1",
        "127.0.0.1:http",
        ":9476",
        "1.2.3.4:99999",
    ] {
        let arg = format!("--metrics={bad}");
        let error = parse_invocation(&argv(&["ovn-controller", &arg])).unwrap_err();
        let text = error.render().to_string();
        assert!(
            error.use_stderr() && text.contains("is not ADDR:PORT"),
            "{bad}: {text}"
        );
    }
}
