//! Benchmark (not a test):
//! 1. encode 1,000,000 flow_mods (the flows of `tests/data/of_final.txt`, cycled);
//! 2. install a ~400k-flow table into a real `ovs-vswitchd` (dummy datapath, started here in
//!    a temporary directory) through `ofreplay` and through
//!    `ovs-ofctl --bundle add-flows`, in the same run; print both times and the ratio, and
//!    check that both leave the same table (`dump-flows`).
//!
//! Usage: `cargo run --release -p openflow --example ofbench [N_FLOWS]`
//! (`OFBENCH_SKIP_INSTALL=1` runs only part 1).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bytes::BytesMut;
use openflow::text::Flow;
use openflow::wire::{Message, OfpMessage};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn base_flows() -> Vec<Flow> {
    std::fs::read_to_string(data("of_final.txt"))
        .expect("of_final.txt")
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.parse().expect("flow"))
        .collect()
}

fn encode_bench(flows: &[Flow]) {
    const N: usize = 1_000_000;
    let mods: Vec<OfpMessage> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| OfpMessage::new(i as u32, Message::FlowMod(f.add())))
        .collect();
    let mut buf = BytesMut::with_capacity(1 << 20);
    let mut bytes = 0usize;
    let start = Instant::now();
    for i in 0..N {
        if let Err(e) = mods[i % mods.len()].encode(&mut buf) {
            eprintln!("ofbench: flow_mod {}: {e}", i % mods.len());
            return;
        }
        if buf.len() > 1 << 20 {
            bytes += buf.len();
            buf.clear();
        }
    }
    bytes += buf.len();
    let t = start.elapsed().as_secs_f64();
    println!(
        "encode: {N} flow_mods ({:.1} MB) in {t:.3} s = {:.0} flow_mods/s",
        bytes as f64 / 1e6,
        N as f64 / t
    );
    let texts: Vec<String> = flows.iter().map(ToString::to_string).collect();
    let start = Instant::now();
    let mut n = 0;
    while n < 200_000 {
        for t in &texts {
            let _f: Flow = t.parse().expect("flow");
            n += 1;
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "parse:  {n} flow lines in {t:.3} s = {:.0} flows/s",
        n as f64 / t
    );
}

/// ovsdb-server + ovs-vswitchd in a directory; stopped by pid on drop.
struct Sandbox {
    dir: tempfile::TempDir,
    pids: Vec<u32>,
}

impl Sandbox {
    fn start() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().to_owned();
        let mut sb = Sandbox { dir, pids: vec![] };
        let run = |args: &[&str]| {
            let st = Command::new(args[0])
                .args(&args[1..])
                .env("OVS_RUNDIR", &d)
                .env("OVS_LOGDIR", &d)
                .env("OVS_DBDIR", &d)
                .status()
                .expect("spawn");
            assert!(st.success(), "{args:?}");
        };
        let p = |n: &str| d.join(n).display().to_string();
        run(&[
            "ovsdb-tool",
            "create",
            &p("conf.db"),
            "/usr/share/openvswitch/vswitch.ovsschema",
        ]);
        run(&[
            "ovsdb-server",
            "--detach",
            "--no-chdir",
            &format!("--pidfile={}", p("db.pid")),
            &format!("--remote=punix:{}", p("db.sock")),
            &format!("--log-file={}", p("db.log")),
            &p("conf.db"),
        ]);
        sb.pids.push(read_pid(&d.join("db.pid")));
        let db = format!("unix:{}", p("db.sock"));
        run(&["ovs-vsctl", &format!("--db={db}"), "--no-wait", "init"]);
        run(&[
            "ovs-vswitchd",
            "--detach",
            "--no-chdir",
            &format!("--pidfile={}", p("vs.pid")),
            "--enable-dummy=system",
            "--disable-system",
            &format!("--log-file={}", p("vs.log")),
            &db,
        ]);
        sb.pids.push(read_pid(&d.join("vs.pid")));
        run(&[
            "ovs-vsctl",
            &format!("--db={db}"),
            "add-br",
            "br-int",
            "--",
            "set",
            "bridge",
            "br-int",
            "datapath_type=dummy",
            "fail-mode=secure",
        ]);
        sb
    }

    fn mgmt(&self) -> String {
        self.dir.path().join("br-int.mgmt").display().to_string()
    }

    fn ofctl(&self, args: &[&str]) {
        let target = format!("unix:{}", self.mgmt());
        let mut all = vec!["-O", "OpenFlow15"];
        all.push(args[0]);
        all.push(&target);
        all.extend_from_slice(&args[1..]);
        let st = Command::new("ovs-ofctl")
            .args(&all)
            .status()
            .expect("ovs-ofctl");
        assert!(st.success(), "ovs-ofctl {all:?}");
    }
}

impl Sandbox {
    /// `dump-flows --no-stats`, flow lines only, sorted: what both installs must agree on.
    fn dump_sorted(&self) -> Vec<String> {
        let target = format!("unix:{}", self.mgmt());
        let out = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow15", "--no-stats", "dump-flows", &target])
            .output()
            .expect("ovs-ofctl dump-flows");
        assert!(out.status.success(), "ovs-ofctl dump-flows");
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with(' '))
            .map(|l| l.trim().to_owned())
            .collect();
        lines.sort_unstable();
        lines
    }

    fn ofctl_bundle(&self, file: &str) {
        let target = format!("unix:{}", self.mgmt());
        let st = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow15", "--bundle", "add-flows", &target, file])
            .status()
            .expect("ovs-ofctl");
        assert!(st.success(), "ovs-ofctl --bundle add-flows");
    }
}

fn read_pid(p: &Path) -> u32 {
    std::fs::read_to_string(p)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid")
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for pid in self.pids.iter().rev() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

fn ofreplay_binary() -> PathBuf {
    // Built alongside this example (same profile).
    let me = std::env::current_exe().expect("exe");
    me.with_file_name("ofreplay")
}

fn install_bench(flows: &[Flow], n_target: usize) {
    // Unique flows: every reference flow repeated with an extra pkt_mark match.
    // ovs-ofctl cannot read back its own `set_field:10/0x3f->ip_dscp` (2 reference flows):
    // leave those out so both tools get the same input.
    let flows: Vec<&Flow> = flows
        .iter()
        .filter(|f| !f.to_string().contains("/0x3f->ip_dscp"))
        .collect();
    let reps = n_target.div_ceil(flows.len());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("flows.txt");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
    let mut n = 0;
    for k in 0..reps {
        for f in &flows {
            let mut f = (*f).clone();
            let id = openflow::oxm::FieldId::by_name("pkt_mark").expect("pkt_mark");
            f.r#match.push(id, (k as u32).to_be_bytes().to_vec(), None);
            writeln!(out, "{f}").expect("write");
            n += 1;
        }
    }
    drop(out);
    let sb = Sandbox::start();
    sb.ofctl(&[
        "add-tlv-map",
        "{class=0x102,type=0x80,len=4}->tun_metadata0",
    ]);
    for m in 1..=4 {
        sb.ofctl(&[
            "add-meter",
            &format!("meter={m},pktps,bands=type=drop,rate=100"),
        ]);
    }
    let groups = dir.path().join("groups.txt");
    let group_lines: Vec<String> = std::fs::read_to_string(data("groups_final.txt"))
        .expect("groups_final.txt")
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.trim().to_owned())
        .collect();
    std::fs::write(&groups, group_lines.join("\n")).expect("write groups");
    sb.ofctl(&["add-groups", &groups.display().to_string()]);
    let f = file.display().to_string();

    let start = Instant::now();
    sb.ofctl_bundle(&f);
    let t_ofctl = start.elapsed().as_secs_f64();
    let by_ofctl = sb.dump_sorted();
    sb.ofctl(&["del-flows"]);

    let replay = ofreplay_binary();
    let start = Instant::now();
    let st = Command::new(&replay)
        .arg(format!("unix:{}", sb.mgmt()))
        .arg(&f)
        .status()
        .unwrap_or_else(|e| panic!("{}: {e} (build it: --example ofreplay)", replay.display()));
    let t_replay = start.elapsed().as_secs_f64();
    assert!(st.success(), "ofreplay failed");
    let by_replay = sb.dump_sorted();
    // ovs-ofctl reads `dec_ttl()` (no controller ids: how ovn-controller installs `ip.ttl--`)
    // as plain `dec_ttl`; ofreplay keeps it. Apart from that the two tables must be equal,
    // and ofreplay's must hold every `dec_ttl()` of the input.
    let mut ofctl_reading: Vec<String> = by_replay
        .iter()
        .map(|l| l.replace("dec_ttl()", "dec_ttl"))
        .collect();
    ofctl_reading.sort_unstable();
    let mismatched: Vec<(&String, &String)> = by_ofctl
        .iter()
        .zip(&ofctl_reading)
        .filter(|(a, b)| a != b)
        .collect();
    let differing = mismatched.len() + by_ofctl.len().abs_diff(by_replay.len());
    let kept = by_replay.iter().filter(|l| l.contains("dec_ttl()")).count();
    let wanted = std::fs::read_to_string(&file)
        .expect("flows")
        .lines()
        .filter(|l| l.contains("dec_ttl()"))
        .count();
    println!(
        "dump after ofreplay vs after ovs-ofctl: {} / {} flows, {differing} differ \
         (besides the {kept} dec_ttl() flows ovs-ofctl reads as dec_ttl; input has {wanted})",
        by_replay.len(),
        by_ofctl.len()
    );
    for (a, b) in mismatched.iter().take(3) {
        println!("  ovs-ofctl: {a}\n  ofreplay:  {b}");
    }
    assert_eq!(differing, 0, "ofreplay installed a different table");
    assert_eq!(kept, wanted, "ofreplay lost a dec_ttl()");
    println!("install {n} flows: ovs-ofctl --bundle add-flows {t_ofctl:.2} s, ofreplay {t_replay:.2} s, ofreplay/ovs-ofctl time ratio {:.2}", t_replay / t_ofctl);
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(400_000);
    let flows = base_flows();
    encode_bench(&flows);
    if std::env::var_os("OFBENCH_SKIP_INSTALL").is_none() {
        install_bench(&flows, n);
    }
}
