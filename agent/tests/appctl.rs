//! The unixctl server against the real `ovs-appctl` and `ovn-appctl` (OVS 3.1 / OVN 23.03).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use agent::appctl::{version_text, AppctlRequest, AppctlServer, CommandRegistry, ServerConfig};
use agent::vlog::{Console, SyslogMethod, Vlog, VlogOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// A server in `dir` whose forwarded commands a test task answers:
/// `echo ARGS...` -> the arguments, `fail` -> an error, `hang` -> no reply at all.
struct TestServer {
    server: AppctlServer,
    path: PathBuf,
    vlog: Vlog,
}

fn start(dir: &Path, socket_name: &str) -> TestServer {
    let path = dir.join(socket_name);
    let mut commands = CommandRegistry::new();
    commands.register("echo", "[ARG]...", 0, 3).unwrap();
    commands.register("need-one", "ARG", 1, 1).unwrap();
    commands.register("fail", "", 0, 0).unwrap();
    commands.register("hang", "", 0, 0).unwrap();
    let vlog = Vlog::new(VlogOptions {
        program: "ovn-agent".into(),
        syslog_method: Some(SyslogMethod::Null),
        console: Console::Buffer(std::sync::Arc::default()),
        ..VlogOptions::default()
    });
    let (requests_tx, mut requests) = mpsc::channel::<AppctlRequest>(4);
    tokio::spawn(async move {
        let mut unanswered = Vec::new();
        while let Some(request) = requests.recv().await {
            match request.command.as_str() {
                "echo" => {
                    let _ = request.reply.send(Ok(request.args.join(" ")));
                }
                "hang" => unanswered.push(request),
                _ => {
                    let _ = request.reply.send(Err("it failed".into()));
                }
            }
        }
    });
    let server = AppctlServer::bind(
        ServerConfig {
            path: path.clone(),
            version: version_text("ovn-agent"),
            reply_timeout: Duration::from_millis(300),
        },
        commands,
        Some(vlog.clone()),
        requests_tx,
    )
    .unwrap();
    TestServer { server, path, vlog }
}

async fn ovs_appctl(socket: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new("ovs-appctl")
        .arg("-t")
        .arg(socket)
        .args(args)
        .output()
        .await
        .expect("ovs-appctl runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_commands_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let t = start(dir.path(), "a.ctl");
    let out = ovs_appctl(&t.path, &["list-commands"]).await;
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "The available commands are:\n\
         \x20 echo                    [ARG]...\n\
         \x20 fail                    \n\
         \x20 hang                    \n\
         \x20 list-commands           \n\
         \x20 need-one                ARG\n\
         \x20 version                 \n\
         \x20 vlog/close              \n\
         \x20 vlog/disable-rate-limit [module]...\n\
         \x20 vlog/enable-rate-limit  [module]...\n\
         \x20 vlog/list               \n\
         \x20 vlog/list-pattern       \n\
         \x20 vlog/reopen             \n\
         \x20 vlog/set                {spec | PATTERN:destination:pattern}\n"
    );
    let out = ovs_appctl(&t.path, &["version"]).await;
    assert_eq!(
        text(&out.stdout),
        format!(
            "ovn-agent {} compatible with ovn-controller 23.03.1\nOVN internal version 23.03.1-20.27.0-70.6\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    // ovn-ctl's stop_controller: `exit` is tried only if this holds.
    let version_geq = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            ". /usr/share/openvswitch/scripts/ovs-lib; \
             v=$(ovs-appctl -T 1 -t {} version | awk 'NR==1{{print $NF}}'); \
             version_geq \"$v\" 2.5.90",
            t.path.display()
        ))
        .status()
        .await
        .unwrap();
    assert!(
        version_geq.success(),
        "version_geq must accept our version line"
    );
    t.server.shutdown().await;
    assert!(!t.path.exists(), "shutdown removes the socket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_exit_2_with_ovs_texts() {
    let dir = tempfile::tempdir().unwrap();
    let t = start(dir.path(), "b.ctl");
    let shown = t.path.display().to_string();
    for (args, message) in [
        (
            &["bogus", "a", "b"][..],
            "\"bogus\" is not a valid command (use \"list-commands\" to see a list of valid commands)",
        ),
        (&["version", "x"], "\"version\" command takes at most 0 arguments"),
        (&["echo", "1", "2", "3", "4"], "\"echo\" command takes at most 3 arguments"),
        (&["need-one"], "\"need-one\" command requires at least 1 arguments"),
        (&["fail"], "it failed"),
        (&["hang"], "\"hang\" command timed out after 300 ms"),
        (&["vlog/set", "loud"], "no destination, level, or module \"loud\""),
        (&["vlog/reopen"], "Logging to file not configured"),
    ] {
        let out = ovs_appctl(&t.path, args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            format!("{message}\novs-appctl: {shown}: server returned an error\n"),
            "{args:?}"
        );
        assert!(out.stdout.is_empty());
    }
    // The connection that timed out left the server usable.
    let out = ovs_appctl(&t.path, &["echo", "still", "here"]).await;
    assert_eq!(text(&out.stdout), "still here\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_and_vlog_commands() {
    let dir = tempfile::tempdir().unwrap();
    let t = start(dir.path(), "c.ctl");
    let out = ovs_appctl(&t.path, &["echo", "a", "b c"]).await;
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "a b c\n");
    let out = ovs_appctl(&t.path, &["echo"]).await;
    assert_eq!(text(&out.stdout), "", "an empty reply stays empty");

    let out = ovs_appctl(&t.path, &["vlog/set", "ofctrl:file:dbg", "console:off"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ovs_appctl(&t.path, &["vlog/list"]).await;
    let list = text(&out.stdout);
    assert!(list.starts_with("                 console    syslog    file\n"));
    assert!(
        list.contains("\nofctrl             OFF       INFO        DBG\n"),
        "{list}"
    );
    assert!(
        list.contains("\nmain               OFF       INFO       INFO\n"),
        "{list}"
    );
    let ofctrl = agent::vlog::modules::module_index("ofctrl").unwrap();
    assert_eq!(
        t.vlog.level(ofctrl, agent::vlog::Destination::File),
        agent::vlog::Level::Dbg
    );
}

/// Reads from `stream` until `expected` bytes arrived (or the peer closed).
async fn read_exactly(stream: &mut tokio::net::UnixStream, expected: usize) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while received.len() < expected {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("reply in time")
            .unwrap();
        if read == 0 {
            break;
        }
        received.extend_from_slice(&buffer[..read]);
    }
    received
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_bytes_of_back_to_back_requests() {
    let dir = tempfile::tempdir().unwrap();
    let t = start(dir.path(), "d.ctl");
    let mut stream = tokio::net::UnixStream::connect(&t.path).await.unwrap();
    // Two requests in one write, no delimiter, as the framing allows.
    stream
        .write_all(
            br#"{"id":0,"method":"echo","params":["x"]}{"id":"q","method":"echo","params":[1]}"#,
        )
        .await
        .unwrap();
    let expected: &[u8] = br#"{"id":0,"result":"x\n","error":null}{"id":"q","error":"\"echo\" command has non-string argument\n"}"#;
    assert_eq!(
        text(&read_exactly(&mut stream, expected.len()).await),
        text(expected)
    );
    // A notification is a protocol error: the server hangs up, as OVS does.
    stream
        .write_all(br#"{"id":null,"method":"echo","params":[]}"#)
        .await
        .unwrap();
    assert!(read_exactly(&mut stream, 1).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ovn_appctl_finds_the_socket_through_the_pidfile() {
    let dir = tempfile::tempdir().unwrap();
    // The pidfile holds this test process's pid and lock, so the socket carries our pid.
    let pidfile = agent::daemon::Pidfile::create(&dir.path().join("ovn-agent.pid"), false).unwrap();
    let t = start(dir.path(), &format!("ovn-agent.{}.ctl", std::process::id()));
    let out = tokio::process::Command::new("ovn-appctl")
        .args(["-t", "ovn-agent", "echo", "found"])
        .env("OVN_RUNDIR", dir.path())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "found\n");
    // Without the lock ovn-appctl refuses a pidfile (it calls it stale).
    drop(pidfile);
    std::fs::write(
        dir.path().join("ovn-agent.pid"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    let out = tokio::process::Command::new("ovn-appctl")
        .args(["-t", "ovn-agent", "version"])
        .env("OVN_RUNDIR", dir.path())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot read pidfile"),
        "{}",
        text(&out.stderr)
    );
    drop(t);
}
