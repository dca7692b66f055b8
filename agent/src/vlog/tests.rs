use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt as _;

use super::*;

const SAMPLE_MS: i64 = 1_796_043_669_808;

fn test_vlog() -> (Vlog, Arc<Mutex<Vec<u8>>>) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let vlog = Vlog::new(VlogOptions {
        program: "ovn-controller".into(),
        syslog_method: Some(SyslogMethod::Null),
        console: Console::Buffer(buffer.clone()),
        clock: Clock::FixedMs(SAMPLE_MS),
    });
    (vlog, buffer)
}

fn take(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8(std::mem::take(&mut *buffer.lock().unwrap())).unwrap()
}

fn with_vlog(vlog: &Vlog, f: impl FnOnce()) {
    let subscriber = tracing_subscriber::registry().with(VlogLayer::new(vlog.clone()));
    tracing::subscriber::with_default(subscriber, f);
}

#[test]
fn tracing_events_become_ovs_console_lines() {
    let (vlog, console) = test_vlog();
    with_vlog(&vlog, || {
        tracing::info!(target: "main", "OVN internal version is : [23.03.1-20.27.0-70.6]");
        tracing::warn!(target: "agent::ofctrl::desired", port = 3, "flow table full");
        tracing::debug!(target: "binding", "not printed at the default info level");
        tracing::error!(target: "main", emer = true, "fatal");
        set_subprogram_name("ovn_pinctrl0");
        tracing::info!(target: "acl_log", "name=\"np1\", verdict=allow");
        set_subprogram_name("");
    });
    assert_eq!(
        take(&console),
        "2026-11-30T13:01:09Z|00001|main|INFO|OVN internal version is : [23.03.1-20.27.0-70.6]\n\
         2026-11-30T13:01:09Z|00002|ofctrl|WARN|flow table full port=3\n\
         2026-11-30T13:01:09Z|00003|main|EMER|fatal\n\
         2026-11-30T13:01:09Z|00004|acl_log(ovn_pinctrl0)|INFO|name=\"np1\", verdict=allow\n"
    );
}

#[test]
fn ovn_ctl_levels_send_info_to_the_file_only() {
    let (vlog, console) = test_vlog();
    vlog.apply_specs(OVN_CTL_SPECS).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ovn-controller.log");
    vlog.set_log_file(&path).unwrap();
    with_vlog(&vlog, || {
        tracing::info!(target: "reconnect", "unix:/run/db.sock: connecting...");
        tracing::debug!(target: "reconnect", "not at info");
        tracing::error!(target: "main", emer = true, "fatal");
    });
    let file = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        file,
        format!(
            "2026-11-30T13:01:09.808Z|00001|vlog|INFO|opened log file {}\n\
             2026-11-30T13:01:09.808Z|00002|reconnect|INFO|unix:/run/db.sock: connecting...\n\
             2026-11-30T13:01:09.808Z|00003|main|EMER|fatal\n",
            path.display()
        )
    );
    assert_eq!(
        take(&console),
        "2026-11-30T13:01:09Z|00003|main|EMER|fatal\n"
    );
}

#[test]
fn vlog_list_format() {
    let (vlog, _) = test_vlog();
    vlog.apply_specs(["console:emer", "syslog:off", "ofctrl:file:dbg"])
        .unwrap();
    vlog.set_rate_limits(&["binding".to_string()], false)
        .unwrap();
    let list = vlog.list();
    let mut lines = list.lines();
    assert_eq!(
        lines.next(),
        Some("                 console    syslog    file")
    );
    assert_eq!(
        lines.next(),
        Some("                 -------    ------    ------")
    );
    assert_eq!(
        lines.next(),
        Some("acl_log           EMER        OFF       INFO")
    );
    assert_eq!(
        lines.next(),
        Some("actions           EMER        OFF       INFO")
    );
    assert_eq!(
        lines.next(),
        Some("binding           EMER        OFF       INFO    (rate limiting disabled)")
    );
    assert!(list.contains("\nofctrl            EMER        OFF        DBG\n"));
    assert_eq!(list.lines().count(), 2 + modules::MODULES.len());
    assert!(list.ends_with('\n'));
}

#[test]
fn vlog_commands() {
    let (vlog, _) = test_vlog();
    let run = |name: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        vlog.run_command(name, &args).unwrap()
    };
    assert_eq!(
        run("vlog/set", &["lflow:console:warn", "ofctrl"]),
        Ok(String::new())
    );
    let main = modules::module_index("main").unwrap();
    let lflow = modules::module_index("lflow").unwrap();
    let ofctrl = modules::module_index("ofctrl").unwrap();
    assert_eq!(vlog.level(lflow, Destination::Console), Level::Warn);
    assert_eq!(vlog.level(ofctrl, Destination::Syslog), Level::Dbg);
    assert_eq!(vlog.level(main, Destination::Console), Level::Info);
    assert_eq!(
        run("vlog/set", &["bogus"]),
        Err("no destination, level, or module \"bogus\"".into())
    );
    assert_eq!(run("vlog/set", &[]), Ok(String::new()));
    assert_eq!(vlog.level(main, Destination::File), Level::Dbg);
    assert_eq!(
        run("vlog/reopen", &[]),
        Err("Logging to file not configured".into())
    );
    assert_eq!(
        run("vlog/enable-rate-limit", &["nope"]),
        Err("unknown module".into())
    );
    assert_eq!(run("vlog/disable-rate-limit", &[]), Ok(String::new()));
    assert!(!vlog.rate_limits_honored(main));
    assert_eq!(run("vlog/enable-rate-limit", &["any"]), Ok(String::new()));
    assert!(vlog.rate_limits_honored(main));
    assert!(vlog.run_command("vlog/bogus", &[]).is_none());
    assert_eq!(
        run("vlog/set", &["PATTERN:console:%c|%m"]),
        Ok(String::new())
    );
    assert_eq!(
        run("vlog/list-pattern", &[]),
        Ok("         prefix                            format\n\
            \x20        ------                            ------\n\
            SYSLOG                                     ovs|%05N|%c%T|%p|%m\n\
            CONSOLE  none                              %c|%m\n\
            FILE     none                              %D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m\n"
            .into())
    );
}

#[test]
fn patterns_change_lines() {
    let (vlog, console) = test_vlog();
    vlog.apply_spec("PATTERN:console:%c|%p|%m").unwrap();
    vlog.log(
        modules::module_index("pinctrl").unwrap(),
        Level::Warn,
        "x\n",
    );
    assert_eq!(take(&console), "pinctrl|WARN|x\n");
}

#[test]
fn reopen_follows_logrotate_and_close_stops_writing() {
    let (vlog, _) = test_vlog();
    vlog.apply_specs(["console:off", "syslog:off"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.log");
    let rotated = dir.path().join("agent.log.1");
    vlog.set_log_file(&path).unwrap();
    let main = modules::module_index("main").unwrap();
    vlog.log(main, Level::Info, "before rotation");
    // Reopening the same file logs nothing.
    assert_eq!(
        vlog.run_command("vlog/reopen", &[]),
        Some(Ok(String::new()))
    );
    std::fs::rename(&path, &rotated).unwrap();
    vlog.reopen().unwrap();
    vlog.log(main, Level::Info, "after rotation");
    let old = std::fs::read_to_string(&rotated).unwrap();
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(old.ends_with("|main|INFO|before rotation\n") || old.contains("before rotation"));
    assert!(old.ends_with("|vlog|INFO|closing log file\n"), "{old}");
    assert!(new.contains("|vlog|INFO|opened log file"), "{new}");
    assert!(new.ends_with("|main|INFO|after rotation\n"), "{new}");
    vlog.close_file();
    assert!(!vlog.enabled(main, Level::Info), "nothing else prints info");
    vlog.log(main, Level::Err, "after close");
    assert!(!std::fs::read_to_string(&path)
        .unwrap()
        .contains("after close"));
    assert_eq!(vlog.log_file(), Some(path.clone()));
    vlog.reopen().unwrap();
    vlog.log(main, Level::Err, "reopened");
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .ends_with("|main|ERR|reopened\n"));
}

#[test]
fn log_file_that_cannot_be_opened_is_an_error() {
    let (vlog, console) = test_vlog();
    let error = vlog
        .set_log_file(std::path::Path::new("/nonexistent-dir/x.log"))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to open /nonexistent-dir/x.log for logging: No such file or directory"
    );
    assert!(take(&console).contains("|vlog|WARN|failed to open /nonexistent-dir/x.log"));
}

#[test]
fn bad_startup_spec_names_the_spec() {
    let (vlog, _) = test_vlog();
    assert_eq!(
        vlog.apply_specs(["file:info", "console:loud"])
            .unwrap_err()
            .to_string(),
        "processing \"console:loud\": no destination, level, or module \"loud\""
    );
}

#[test]
fn rate_limited_macro_reports_drops() {
    let (vlog, console) = test_vlog();
    static LIMIT: RateLimit = RateLimit::new(1, 2);
    with_vlog(&vlog, || {
        for n in 0..5 {
            crate::vlog_rl!(WARN, &LIMIT, "bad row {n}");
        }
    });
    let out = take(&console);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.ends_with("|WARN|bad row 1\n"));
    assert_eq!(LIMIT.suppressed_total(), 3);
}

#[test]
fn rate_limited_macro_with_a_target_logs_under_that_module() {
    let (vlog, console) = test_vlog();
    static LIMIT: RateLimit = RateLimit::new(1, 2);
    with_vlog(&vlog, || {
        for n in 0..5 {
            crate::vlog_rl!(WARN, &LIMIT, target: "binding", "bad binding {n}");
        }
    });
    let out = take(&console);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.ends_with("|binding|WARN|bad binding 1\n"), "{out}");
    assert_eq!(LIMIT.suppressed_total(), 3);
}
