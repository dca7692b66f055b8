//! The containerlab lab in containers/: the topology file checked against containerlab's
//! documented format (typed parse of the fields it uses), and the whole lab run without a
//! container engine: every node of the topology becomes a network namespace, every link a
//! veth pair, every node runs containers/entrypoint.sh with its `env` (so the same ovn-node
//! set-up code the image runs), and containers/demo.sh then pings across the chassis. When a
//! docker daemon answers, the image is built too.

mod clab;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clab::{Endpoint, Kind, Topology};
use integration::cargo::{build, Artifact};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn lab_topology() -> Topology {
    Topology::parse(&read("containers/ovn.clab.yml")).expect("containers/ovn.clab.yml")
}

/// The node directory the image's `ENV` sets (containers/Containerfile).
const NODE_DIR: &str = "/var/run/ovn-node";

/// The variables every node of a role must set: those containers/entrypoint.sh requires, and
/// SYSTEM_ID, so that chassis names do not depend on host names.
fn required_env(role: &str) -> &'static [&'static str] {
    match role {
        "central" => &["OVN_ROLE"],
        "chassis" => &["OVN_ROLE", "OVN_CENTRAL", "OVN_ENCAP_IP", "SYSTEM_ID"],
        other => panic!("OVN_ROLE={other}: the entrypoint knows central and chassis"),
    }
}

/// The tag containers/build.sh gives the image it builds.
fn built_image_tag() -> String {
    read("containers/build.sh")
        .lines()
        .find_map(|l| l.strip_prefix("image="))
        .expect("containers/build.sh sets image=")
        .trim()
        .to_owned()
}

#[test]
fn topology_file_is_valid_containerlab() {
    let topo = lab_topology();
    assert_eq!(topo.name, "ovn");
    let problems = topo.problems();
    assert!(problems.is_empty(), "{problems:#?}");

    let image = built_image_tag();
    assert!(read("containers/Containerfile").contains(&format!("OVN_NODE_DIR={NODE_DIR}")));
    let entrypoint = read("containers/entrypoint.sh");
    let mut roles = Vec::new();
    for (name, node) in &topo.topology.nodes {
        assert_eq!(
            node.kind,
            Kind::Linux,
            "{name}: the image is a plain Linux container"
        );
        assert_eq!(node.image.as_deref(), Some(image.as_str()), "{name}: image");
        // The image's entrypoint is what turns the environment into a node.
        assert_eq!((&node.cmd, &node.entrypoint), (&None, &None), "{name}");
        let check = node
            .healthcheck
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: healthcheck"));
        assert!(
            check.test.iter().any(|a| a == &format!("{NODE_DIR}/ready")),
            "{name}: the healthcheck waits for ovn-node's ready file: {:?}",
            check.test
        );
        let role = node
            .env_value("OVN_ROLE")
            .unwrap_or_else(|| panic!("{name}: OVN_ROLE"));
        for var in required_env(&role) {
            assert!(node.env_value(var).is_some(), "{name} ({role}) lacks {var}");
        }
        for var in node.env.keys() {
            assert!(
                entrypoint.contains(var.as_str()),
                "{name}: the entrypoint ignores {var}"
            );
        }
        roles.push(role);
    }
    roles.sort();
    assert_eq!(roles, ["central", "chassis", "chassis", "chassis"]);

    // Every chassis reaches the central node's underlay address over a link to it, and the
    // central node bridges exactly the interfaces its links use.
    let (central_name, central) = topo
        .topology
        .nodes
        .iter()
        .find(|(_, n)| n.env_value("OVN_ROLE").as_deref() == Some("central"))
        .unwrap();
    let underlay_ip = central.env_value("OVN_UNDERLAY_IP").unwrap();
    let central_ip = underlay_ip.split('/').next().unwrap();
    let bridged: BTreeSet<String> = central
        .env_value("OVN_UNDERLAY_PORTS")
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut linked = BTreeSet::new();
    for link in &topo.topology.links {
        let [a, b] = link.endpoints.as_slice() else {
            panic!("{link:?}: a veth link has two endpoints")
        };
        let (central_end, chassis_end) = if &a.node == central_name {
            (a, b)
        } else {
            (b, a)
        };
        assert_eq!(
            &central_end.node, central_name,
            "{link:?}: links go to the central node"
        );
        linked.insert(central_end.interface.clone());
        let chassis = &topo.topology.nodes[&chassis_end.node];
        assert_eq!(
            chassis.env_value("OVN_CENTRAL").as_deref(),
            Some(central_ip)
        );
        let encap_iface = chassis
            .env_value("OVN_ENCAP_IFACE")
            .unwrap_or("eth1".into());
        assert_eq!(chassis_end.interface, encap_iface, "{}", chassis_end.node);
    }
    assert_eq!(bridged, linked);
}

#[test]
fn topology_checks_catch_mistakes() {
    let good = read("containers/ovn.clab.yml");
    // An unknown kind, a misspelt key and a malformed endpoint are parse errors.
    for (from, to) in [
        ("kind: linux", "kind: linuxx"),
        ("    env:", "    evn:"),
        ("\"hv1:eth1\"", "\"hv1-eth1\""),
    ] {
        let bad = good.replacen(from, to, 1);
        assert!(Topology::parse(&bad).is_err(), "{to:?} accepted");
    }
    // A link to a node that is not defined parses, and is reported.
    let bad = Topology::parse(&good.replacen("\"hv2:eth1\"", "\"hv9:eth1\"", 1)).unwrap();
    let problems = bad.problems();
    assert!(problems.iter().any(|p| p.contains("hv9")), "{problems:?}");
    let endpoint: Endpoint = serde_saphyr::from_str("\"hv1:eth1\"").unwrap();
    assert_eq!(
        (endpoint.node.as_str(), endpoint.interface.as_str()),
        ("hv1", "eth1")
    );
}

/// One node of the topology as a network namespace running the entrypoint.
struct NamespaceNode {
    netns: String,
    dir: PathBuf,
    process: Option<Child>,
}

impl NamespaceNode {
    fn stop(&mut self) {
        let Some(mut child) = self.process.take() else {
            return;
        };
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        // ovn-node stops its daemons (each up to 5 s) before it exits.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The namespaces of a run; dropping it stops the nodes by pid and deletes every namespace
/// whose name starts with the run's prefix (the nodes' and the VMs' the demo made).
struct NamespaceLab {
    prefix: String,
    nodes: Vec<NamespaceNode>,
    dir: Option<tempfile::TempDir>,
}

impl Drop for NamespaceLab {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        if let Ok(entries) = std::fs::read_dir("/run/netns") {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&self.prefix) {
                    let _ = run("ip", &["netns", "delete", &name]);
                }
            }
        }
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!("lab directory kept: {}", dir.keep().display());
            }
        }
    }
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {args:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The directories the image's `ENV` points the OVS and OVN tools at.
const NODE_DIR_VARS: [&str; 9] = [
    "OVN_NODE_DIR",
    "OVS_RUNDIR",
    "OVS_LOGDIR",
    "OVS_DBDIR",
    "OVS_SYSCONFDIR",
    "OVN_RUNDIR",
    "OVN_LOGDIR",
    "OVN_DBDIR",
    "OVN_SYSCONFDIR",
];

#[test]
fn lab_runs_in_network_namespaces_and_pings_across_chassis() {
    // /proc/self belongs to the effective user.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    if uid != 0 {
        println!("skipped: creating network namespaces and veth pairs needs root");
        return;
    }
    let topo = lab_topology();
    assert!(topo.problems().is_empty());
    let node_bin = build("integration", Artifact::Bin("ovn-node")).unwrap();
    let agent_bin = build("agent", Artifact::Bin("ovn-agent")).unwrap();
    let mut path =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    for bin in [&node_bin, &agent_bin] {
        path.insert(0, bin.parent().unwrap().to_path_buf());
    }
    let path = std::env::join_paths(path).unwrap();

    // Short: the VM namespaces are <prefix>vmN and their br-int ports <prefix>vmN-p (15 bytes).
    let prefix = format!("c{}-", std::process::id() % 100_000);
    let dir = tempfile::Builder::new()
        .prefix("ovn-lab-clab-")
        .tempdir()
        .unwrap();
    let mut lab = NamespaceLab {
        prefix: prefix.clone(),
        nodes: Vec::new(),
        dir: None,
    };
    for name in topo.topology.nodes.keys() {
        let netns = format!("{prefix}{name}");
        run("ip", &["netns", "add", &netns]).unwrap();
        lab.nodes.push(NamespaceNode {
            netns,
            dir: dir.path().join(name),
            process: None,
        });
    }
    lab.dir = Some(dir);
    for link in &topo.topology.links {
        let [a, b] = link.endpoints.as_slice() else {
            panic!("{link:?}")
        };
        let (ns_a, ns_b) = (format!("{prefix}{}", a.node), format!("{prefix}{}", b.node));
        run(
            "ip",
            &[
                "link",
                "add",
                &a.interface,
                "netns",
                &ns_a,
                "type",
                "veth",
                "peer",
                "name",
                &b.interface,
                "netns",
                &ns_b,
            ],
        )
        .unwrap();
    }

    let entrypoint = repo_file("containers/entrypoint.sh");
    for (node, (name, spec)) in lab.nodes.iter_mut().zip(&topo.topology.nodes) {
        std::fs::create_dir_all(&node.dir).unwrap();
        let log = std::fs::File::create(node.dir.join("entrypoint.log")).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &node.netns, "sh"])
            .arg(&entrypoint)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        for var in NODE_DIR_VARS {
            cmd.env(var, &node.dir);
        }
        for (key, value) in &spec.env {
            cmd.env(key, value.to_string());
        }
        node.process = Some(cmd.spawn().unwrap_or_else(|e| panic!("start {name}: {e}")));
    }
    for node in &mut lab.nodes {
        let deadline = Instant::now() + Duration::from_secs(90);
        while !node.dir.join("ready").exists() {
            let exited = node.process.as_mut().unwrap().try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "{} not ready ({exited:?}); its log:\n{}",
                node.netns,
                std::fs::read_to_string(node.dir.join("entrypoint.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // demo.sh reaches a node through this instead of `docker exec`.
    let root = lab.dir.as_ref().unwrap().path().to_path_buf();
    let exec = root.join("node-exec");
    let mut script = vec![
        "#!/bin/sh".to_owned(),
        "node=$1".to_owned(),
        "shift".to_owned(),
        format!("dir={}/$node", root.display()),
    ];
    script.extend(
        NODE_DIR_VARS
            .iter()
            .map(|var| format!("export {var}=\"$dir\"")),
    );
    // nsenter keeps the mount namespace, so VM namespaces the demo adds are visible to all.
    script.push(format!(
        "exec nsenter --net=/run/netns/{prefix}$node \"$@\"\n"
    ));
    let script = script.join("\n");
    std::fs::write(&exec, script).unwrap();
    run("chmod", &["+x", &exec.display().to_string()]).unwrap();

    let demo = Command::new("bash")
        .arg(repo_file("containers/demo.sh"))
        .env("PATH", &path)
        .env("OVN_DEMO_EXEC", &exec)
        .env("OVN_DEMO_NETNS_PREFIX", &prefix)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&demo.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&demo.stderr));
    assert!(demo.status.success(), "demo.sh failed: {}", demo.status);
    assert!(stdout.contains("all pings answered"));
    // ping -c 3 -w 30 succeeds only on three replies; the first request of a routed ping may
    // be lost while the router resolves the destination's MAC.
    assert_eq!(stdout.matches(" 3 received").count(), 3, "{stdout}");
    for (node, spec) in lab.nodes.iter_mut().zip(topo.topology.nodes.values()) {
        let exited = node.process.as_mut().unwrap().try_wait().unwrap();
        assert!(exited.is_none(), "{} exited: {exited:?}", node.netns);
        // A healthy run of the agent logs no warnings or errors.
        if spec.env_value("OVN_CONTROLLER").as_deref() == Some("ovn-agent") {
            let log = std::fs::read_to_string(node.dir.join("ovn-agent.log")).unwrap();
            let bad: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("|WARN|") || l.contains("|ERR|"))
                .collect();
            assert!(bad.is_empty(), "{}: {bad:#?}", node.netns);
        }
    }
}

/// Containers of a run, removed when it is dropped.
struct DockerLab {
    docker: String,
    containers: Vec<String>,
}

impl Drop for DockerLab {
    fn drop(&mut self) {
        for name in &self.containers {
            if std::thread::panicking() {
                if let Ok(logs) = run(&self.docker, &["logs", name]) {
                    eprintln!("{name}:\n{logs}");
                }
            }
            let _ = run(&self.docker, &["rm", "-f", name]);
        }
    }
}

/// When a docker daemon answers (otherwise says why not and passes): builds the image with
/// containers/build.sh, then deploys ovn.clab.yml from it as containerlab does (privileged
/// containers named clab-LAB-NODE with the topology's `env`, veth pairs for the links) and
/// runs containers/demo.sh, unchanged, against it.
#[test]
fn image_builds_and_runs_the_lab_when_a_docker_daemon_answers() {
    let docker = std::env::var("DOCKER").unwrap_or_else(|_| "docker".into());
    if let Err(reason) = run(&docker, &["info", "--format", "{{.ServerVersion}}"]) {
        println!("skipped: no container engine answers `{docker} info`: {reason}");
        return;
    }
    let out = Command::new("bash")
        .arg(repo_file("containers/build.sh"))
        .env("PROFILE", "dev")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let image = built_image_tag();
    let versions = run(
        &docker,
        &[
            "run",
            "--rm",
            "--entrypoint",
            "ovn-controller",
            &image,
            "--version",
        ],
    )
    .unwrap();
    assert!(versions.contains("23.03"), "{versions}");

    let topo = lab_topology();
    let lab_name = format!("ovnt{}", std::process::id());
    let mut lab = DockerLab {
        docker: docker.clone(),
        containers: Vec::new(),
    };
    let mut pids = std::collections::BTreeMap::new();
    for (name, node) in &topo.topology.nodes {
        let container = format!("clab-{lab_name}-{name}");
        let mut args = vec![
            "run".to_owned(),
            "-d".to_owned(),
            // What containerlab's privileged mode grants, less CAP_SYS_RESOURCE, which some
            // sandboxes (this project's test machines) do not have to give.
            "--cap-add=ALL".to_owned(),
            "--cap-drop=SYS_RESOURCE".to_owned(),
            "--security-opt=seccomp=unconfined".to_owned(),
            "--security-opt=apparmor=unconfined".to_owned(),
            "--device=/dev/net/tun".to_owned(),
            "--network".to_owned(),
            "none".to_owned(),
            "--name".to_owned(),
            container.clone(),
            "--hostname".to_owned(),
            name.clone(),
        ];
        for (key, value) in &node.env {
            args.extend(["-e".to_owned(), format!("{key}={value}")]);
        }
        args.push(node.image.clone().unwrap());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Removed on drop even if it was created but failed to start.
        lab.containers.push(container.clone());
        run(&docker, &args).unwrap();
        let pid = run(&docker, &["inspect", "-f", "{{.State.Pid}}", &container]).unwrap();
        pids.insert(name.clone(), pid.trim().to_owned());
    }
    for link in &topo.topology.links {
        let [a, b] = link.endpoints.as_slice() else {
            panic!("{link:?}")
        };
        run(
            "ip",
            &[
                "link",
                "add",
                &a.interface,
                "netns",
                &pids[&a.node],
                "type",
                "veth",
                "peer",
                "name",
                &b.interface,
                "netns",
                &pids[&b.node],
            ],
        )
        .unwrap();
    }
    for container in &lab.containers {
        let deadline = Instant::now() + Duration::from_secs(150);
        let ready = format!("{NODE_DIR}/ready");
        while run(&docker, &["exec", container, "test", "-e", &ready]).is_err() {
            assert!(Instant::now() < deadline, "{container} not ready");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let demo = Command::new("bash")
        .arg(repo_file("containers/demo.sh"))
        .env("LAB", &lab_name)
        .env("DOCKER", &docker)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&demo.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&demo.stderr));
    assert!(demo.status.success(), "demo.sh failed: {}", demo.status);
    assert_eq!(stdout.matches(" 3 received").count(), 3, "{stdout}");
    // The image's environment lets the usual tools find the agent inside a node.
    let hv1 = format!("clab-{lab_name}-hv1");
    let status = run(
        &docker,
        &[
            "exec",
            &hv1,
            "ovn-appctl",
            "-t",
            "ovn-agent",
            "connection-status",
        ],
    )
    .unwrap();
    assert_eq!(status.trim(), "connected");
}
