//! The central node: Northbound and Southbound `ovsdb-server`s and `ovn-northd`.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::daemon::{ControlSocket, Daemon};
use crate::error::{io_error, HarnessError, Result};
use crate::host::{wait_for, Host};
use crate::ovs::serve_ovsdb;
pub use crate::ovs::{nb_schema, sb_schema, start_ovsdb, start_ovsdb_listening};
use crate::ovsdb_cluster::Cluster;
use crate::sbwatch::SbWatch;

/// How long `ovn-nbctl --wait`, `ovn-sbctl` and friends may block before a test fails.
pub const DB_TIMEOUT_SECS: u32 = 30;

fn sb_remote(host: &Host, sb: &Southbound) -> String {
    match sb {
        Southbound::Standalone { .. } => format!("unix:{}", host.path("ovnsb_db.sock").display()),
        Southbound::Clustered(c) => c.remotes(),
    }
}

/// Where the central node's databases listen besides the unix sockets in its directory:
/// nothing in the one-machine lab, `ptcp:6641` / `ptcp:6642` on a container node.
#[derive(Debug, Clone, Default)]
pub struct CentralListen {
    pub nb: Vec<String>,
    pub sb: Vec<String>,
    /// More options of the Southbound `ovsdb-server` (its SSL key and certificates).
    pub sb_options: Vec<String>,
}

/// The Southbound database: one server, or a Raft cluster of several.
#[derive(Debug)]
enum Southbound {
    Standalone {
        server: Daemon,
        /// Where it listens besides its unix socket.
        listen: Vec<String>,
        /// Its other options.
        options: Vec<String>,
    },
    Clustered(Cluster),
}

#[derive(Debug)]
pub struct Central {
    // Field order is drop order: northd stops before the databases it talks to.
    northd: Daemon,
    sb: Southbound,
    nb: Daemon,
    host: Host,
}

impl Central {
    pub fn start(parent: &Path) -> Result<Self> {
        Self::start_with_sb_schema(parent, &sb_schema())
    }

    /// Like [`Central::start`], with the Southbound database created from `sb_schema` (an
    /// older or modified `ovn-sb.ovsschema`).
    pub fn start_with_sb_schema(parent: &Path, sb_schema: &str) -> Result<Self> {
        let host = Host::create(parent, "central")?;
        Self::start_on(host, sb_schema, &CentralListen::default())
    }

    /// Starts the central node's daemons on `host` (the lab's `central` directory, or a
    /// container's node directory), the databases also listening on `listen`.
    pub fn start_on(host: Host, sb_schema: &str, listen: &CentralListen) -> Result<Self> {
        let db = host.path("ovnsb_db.db");
        host.run(
            "ovsdb-tool",
            &["create", &db.display().to_string(), sb_schema],
        )?;
        let sb = Southbound::Standalone {
            server: serve_ovsdb(&host, "ovnsb_db", &listen.sb, &listen.sb_options)?,
            listen: listen.sb.clone(),
            options: listen.sb_options.clone(),
        };
        Self::start_with(host, sb, &listen.nb)
    }

    /// Like [`Central::start`], with the Southbound database a Raft cluster of `servers`
    /// `ovsdb-server`s (in `parent/cluster`); northd and the chassis get all their remotes.
    pub fn start_clustered(parent: &Path, servers: usize) -> Result<Self> {
        let host = Host::create(parent, "central")?;
        let sb = Southbound::Clustered(Cluster::start(parent, servers)?);
        Self::start_with(host, sb, &[])
    }

    fn start_with(host: Host, sb: Southbound, nb_listen: &[String]) -> Result<Self> {
        let nb = start_ovsdb_listening(&host, "ovnnb_db", &nb_schema(), nb_listen)?;
        let nb_remote = format!("unix:{}", host.path("ovnnb_db.sock").display());
        let sb_remote = sb_remote(&host, &sb);
        host.run("ovn-nbctl", &[format!("--db={nb_remote}"), "init".into()])?;
        host.run("ovn-sbctl", &[format!("--db={sb_remote}"), "init".into()])?;
        let northd = Daemon::start(
            &host,
            "ovn-northd",
            "ovn-northd",
            ControlSocket::Explicit,
            &[
                format!("--ovnnb-db={nb_remote}"),
                format!("--ovnsb-db={sb_remote}"),
            ],
        )?;
        Ok(Self {
            northd,
            sb,
            nb,
            host,
        })
    }

    /// Stops the standalone Southbound `ovsdb-server` (by pid) and starts it again on the same
    /// database file and sockets, as an upgrade or a crash and restart of the server does:
    /// every client loses its connection and finds the same content when it reconnects.
    pub fn restart_sb(&mut self) -> Result<()> {
        match &mut self.sb {
            Southbound::Standalone {
                server,
                listen,
                options,
            } => {
                server.stop();
                *server = serve_ovsdb(&self.host, "ovnsb_db", listen, options)?;
                Ok(())
            }
            Southbound::Clustered(_) => Err(HarnessError::Config(
                "the Southbound is clustered: restart its servers one by one".into(),
            )),
        }
    }

    /// The Southbound cluster's servers, when the database is clustered.
    pub fn sb_cluster_mut(&mut self) -> Option<&mut Cluster> {
        match &mut self.sb {
            Southbound::Clustered(c) => Some(c),
            Southbound::Standalone { .. } => None,
        }
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The name of a daemon of the central node that is no longer running.
    pub fn exited_daemon(&mut self) -> Option<String> {
        // A cluster's servers are stopped and started by the test that has one.
        let sb = match &mut self.sb {
            Southbound::Standalone { server, .. } => Some(server),
            Southbound::Clustered(_) => None,
        };
        for daemon in [Some(&mut self.northd), sb, Some(&mut self.nb)]
            .into_iter()
            .flatten()
        {
            if !daemon.is_running() {
                return Some(daemon.name().to_owned());
            }
        }
        None
    }

    /// `unix:` remote of the Northbound database.
    pub fn nb_remote(&self) -> String {
        format!("unix:{}", self.host.path("ovnnb_db.sock").display())
    }

    /// `unix:` remote of the Southbound database, as chassis put it in `external_ids:ovn-remote`.
    /// (All the servers' remotes, comma-separated, for a clustered database.)
    pub fn sb_remote(&self) -> String {
        sb_remote(&self.host, &self.sb)
    }

    /// Starts watching the Southbound's commits ([`SbWatch`]).
    pub fn watch_sb(&self, timeout: Duration) -> Result<SbWatch> {
        SbWatch::start(&self.host, &self.sb_remote(), timeout)
    }

    pub fn northd(&self) -> &Daemon {
        &self.northd
    }

    /// The standalone Southbound server (`None` when the database is clustered).
    pub fn sb_server(&self) -> Option<&Daemon> {
        match &self.sb {
            Southbound::Standalone { server, .. } => Some(server),
            Southbound::Clustered(_) => None,
        }
    }

    pub fn nb_server(&self) -> &Daemon {
        &self.nb
    }

    /// Runs `ovn-nbctl` against this Northbound database.
    pub fn nbctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        self.nbctl_with_timeout(DB_TIMEOUT_SECS, args)
    }

    /// Runs `ovn-nbctl` with `--timeout=SECS` (for `--wait` on large databases).
    pub fn nbctl_with_timeout<S: AsRef<str>>(&self, secs: u32, args: &[S]) -> Result<String> {
        let mut all = vec![
            format!("--db={}", self.nb_remote()),
            format!("--timeout={secs}"),
        ];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovn-nbctl", &all)
    }

    /// Runs `ovn-sbctl` against this Southbound database.
    pub fn sbctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        self.sbctl_with_timeout(DB_TIMEOUT_SECS, args)
    }

    /// Runs `ovn-sbctl` with `--timeout=SECS`.
    pub fn sbctl_with_timeout<S: AsRef<str>>(&self, secs: u32, args: &[S]) -> Result<String> {
        let mut all = vec![
            format!("--db={}", self.sb_remote()),
            format!("--timeout={secs}"),
        ];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovn-sbctl", &all)
    }

    /// `ovn-appctl` to `ovn-northd` (e.g. `pause`, `resume`, `status`).
    pub fn northd_appctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let mut all = vec!["-t".to_owned(), self.northd.ctl().display().to_string()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovn-appctl", &all)
    }

    /// Writes `ovsdb-client -f json dump` of the whole Southbound database to `out` (the
    /// form `ovn-agent compile --sb FILE` reads), streaming it to the file.
    pub fn dump_sb_json(&self, out: &Path) -> Result<()> {
        let file = File::create(out).map_err(io_error(format!("create {}", out.display())))?;
        let args = [
            "-f".to_owned(),
            "json".to_owned(),
            "dump".to_owned(),
            self.sb_remote(),
            "OVN_Southbound".to_owned(),
        ];
        let status = self
            .host
            .command("ovsdb-client")
            .args(&args)
            .stdout(file)
            .stderr(Stdio::piped())
            .output()
            .map_err(|source| HarnessError::Spawn {
                program: "ovsdb-client".into(),
                source,
            })?;
        if status.status.success() {
            Ok(())
        } else {
            Err(HarnessError::Command {
                program: "ovsdb-client".into(),
                args: args.to_vec(),
                status: status.status.to_string(),
                stderr: String::from_utf8_lossy(&status.stderr).trim().to_owned(),
            })
        }
    }

    /// `ovn-nbctl --wait=hv sync`: returns once every chassis has acknowledged (through
    /// `Chassis_Private.nb_cfg`) the Northbound changes made so far.
    pub fn wait_hv_sync(&self) -> Result<()> {
        self.nbctl(&["--wait=hv", "sync"]).map(drop)
    }

    /// `ovn-nbctl --wait=sb sync`: returns once northd has written the changes to the SB.
    pub fn wait_sb_sync(&self) -> Result<()> {
        self.nbctl(&["--wait=sb", "sync"]).map(drop)
    }

    /// What `ovn-nbctl --wait=hv sync` does, without northd (paused while a test edits the SB
    /// directly, which northd would undo): increments `SB_Global.nb_cfg` and waits until every
    /// chassis acknowledged it in `Chassis_Private.nb_cfg`, i.e. installed the flows for all
    /// the Southbound content so far.
    pub fn wait_sb_acked(&self, timeout: Duration) -> Result<()> {
        let current = self.sbctl(&["get", "SB_Global", ".", "nb_cfg"])?;
        let current: i64 = current
            .trim()
            .parse()
            .map_err(|e| HarnessError::Config(format!("SB_Global nb_cfg {current:?}: {e}")))?;
        let next = current + 1;
        self.sbctl(&["set", "SB_Global", ".", &format!("nb_cfg={next}")])?;
        wait_for(
            &format!("every Chassis_Private to acknowledge nb_cfg {next}"),
            timeout,
            || {
                let out = self.sbctl(&["--bare", "--columns=nb_cfg", "list", "Chassis_Private"])?;
                let acked: Vec<i64> = out
                    .split_whitespace()
                    .filter_map(|v| v.parse().ok())
                    .collect();
                Ok((!acked.is_empty() && acked.iter().all(|n| *n >= next)).then_some(()))
            },
        )
    }

    /// Waits until the Southbound database has an `Encap` row for chassis `name`.
    pub fn wait_for_chassis(&self, name: &str, timeout: Duration) -> Result<()> {
        wait_for(
            &format!("Encap of chassis {name} in the SB"),
            timeout,
            || {
                let out = self.sbctl(&[
                    "--bare",
                    "--columns=ip",
                    "find",
                    "Encap",
                    &format!("chassis_name={name}"),
                ])?;
                Ok((!out.trim().is_empty()).then_some(()))
            },
        )
    }

    /// Waits until the Southbound database has a `Chassis_Private` row for chassis `name`
    /// (its controller has connected and written to the SB; before that, `--wait=hv` does
    /// not wait for it).
    pub fn wait_for_chassis_private(&self, name: &str, timeout: Duration) -> Result<()> {
        wait_for(
            &format!("Chassis_Private of chassis {name} in the SB"),
            timeout,
            || {
                let out = self.sbctl(&[
                    "--bare",
                    "--columns=_uuid",
                    "find",
                    "Chassis_Private",
                    &format!("name={name}"),
                ])?;
                Ok((!out.trim().is_empty()).then_some(()))
            },
        )
    }

    /// Logical ports whose `Port_Binding.chassis` is the chassis named `name`, sorted.
    pub fn ports_bound_to(&self, name: &str) -> Result<Vec<String>> {
        let uuid = self.sbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "Chassis",
            &format!("name={name}"),
        ])?;
        let uuid = uuid.trim();
        if uuid.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.sbctl(&[
            "--bare",
            "--columns=logical_port",
            "find",
            "Port_Binding",
            &format!("chassis={uuid}"),
        ])?;
        let mut ports: Vec<String> = out
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        ports.sort_unstable();
        Ok(ports)
    }

    /// The chassis that has claimed logical port `port`, if any.
    pub fn port_binding_chassis(&self, port: &str) -> Result<Option<String>> {
        let uuid = self.sbctl(&[
            "--bare",
            "--columns=chassis",
            "find",
            "Port_Binding",
            &format!("logical_port={port}"),
        ])?;
        let uuid = uuid.trim();
        if uuid.is_empty() {
            return Ok(None);
        }
        let name = self.sbctl(&["get", "Chassis", uuid, "name"])?;
        Ok(Some(name.trim().trim_matches('"').to_owned()))
    }

    /// Every `Port_Binding` by logical port: the name of its chassis and its `up` column.
    pub fn port_bindings(&self) -> Result<BTreeMap<String, Binding>> {
        let chassis = self.sbctl(&["--format=json", "--columns=_uuid,name", "list", "Chassis"])?;
        let names: BTreeMap<String, String> = json_rows(&chassis)?
            .into_iter()
            .filter_map(|row| {
                let uuid = row.first()?.get(1)?.as_str()?.to_owned();
                let name = row.get(1)?.as_str()?.to_owned();
                Some((uuid, name))
            })
            .collect();
        let pbs = self.sbctl(&[
            "--format=json",
            "--columns=logical_port,chassis,up",
            "list",
            "Port_Binding",
        ])?;
        let mut out = BTreeMap::new();
        for row in json_rows(&pbs)? {
            let Some(port) = row.first().and_then(Value::as_str) else {
                continue;
            };
            // A uuid is ["uuid", "..."]; an empty optional column is ["set", []].
            let chassis = row
                .get(1)
                .and_then(|c| (c.get(0)?.as_str()? == "uuid").then(|| c.get(1)?.as_str()))
                .flatten()
                .map(|u| names.get(u).cloned().unwrap_or_else(|| u.to_owned()));
            let up = row.get(2).and_then(Value::as_bool);
            out.insert(port.to_owned(), Binding { chassis, up });
        }
        Ok(out)
    }
}

/// The `data` rows of `ovn-sbctl --format=json list` output.
fn json_rows(text: &str) -> Result<Vec<Vec<Value>>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| HarnessError::Config(format!("ovn-sbctl printed bad JSON ({e}): {text}")))?;
    Ok(v["data"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r.as_array().cloned()).collect())
        .unwrap_or_default())
}

/// A port's binding in the Southbound `Port_Binding` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The name of the chassis in `chassis`.
    pub chassis: Option<String>,
    /// The `up` column (absent for port types that have none).
    pub up: Option<bool>,
}
