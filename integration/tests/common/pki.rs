//! A test PKI made by `ovs-pki` (as OVN's testsuite makes its own): certificates whose
//! CN is the chassis name (what the Southbound's `ovn-controller` RBAC role checks), all
//! signed by the switch CA, and an expired one signed with `openssl ca`.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Pki {
    dir: tempfile::TempDir,
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pki {
    /// A PKI with a certificate for each of `names` (CN = name).
    pub fn create(names: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ovn-pki-")
            .tempdir()
            .expect("PKI directory");
        let pki = dir.path().join("pki").display().to_string();
        let log = dir.path().join("ovs-pki.log").display().to_string();
        run(
            dir.path(),
            "ovs-pki",
            &[&format!("--dir={pki}"), &format!("--log={log}"), "init"],
        );
        for name in names {
            run(
                dir.path(),
                "ovs-pki",
                &[
                    &format!("--dir={pki}"),
                    &format!("--log={log}"),
                    "-u",
                    "req+sign",
                    name,
                ],
            );
        }
        Self { dir }
    }

    /// A certificate for `name` signed by the other CA (the controller CA).
    pub fn add_signed_by_other_ca(&self, name: &str) {
        let pki = self.dir.path().join("pki").display().to_string();
        run(
            self.dir.path(),
            "ovs-pki",
            &[
                &format!("--dir={pki}"),
                "-u",
                "req+sign",
                name,
                "controller",
            ],
        );
    }

    /// A certificate for `name` that expired in 2020.
    pub fn add_expired(&self, name: &str) {
        let pki = self.dir.path().join("pki").display().to_string();
        run(
            self.dir.path(),
            "ovs-pki",
            &[&format!("--dir={pki}"), "-u", "req", name],
        );
        let req = self.file(&format!("{name}-req.pem"));
        let cert = self.cert(name);
        run(
            &self.dir.path().join("pki/switchca"),
            "openssl",
            &[
                "ca",
                "-config",
                "ca.cnf",
                "-batch",
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20200102000000Z",
                "-in",
                &req.display().to_string(),
                "-out",
                &cert.display().to_string(),
            ],
        );
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn key(&self, name: &str) -> PathBuf {
        self.file(&format!("{name}-privkey.pem"))
    }

    pub fn cert(&self, name: &str) -> PathBuf {
        self.file(&format!("{name}-cert.pem"))
    }

    /// The switch CA's certificate: it signed every certificate above.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("pki/switchca/cacert.pem")
    }

    /// The other CA's certificate: it signed none of them.
    pub fn other_ca(&self) -> PathBuf {
        self.dir.path().join("pki/controllerca/cacert.pem")
    }

    /// The Southbound `ovsdb-server`'s options: its key and certificate (`name`'s), the CA,
    /// and the `Connection` rows of `SB_Global` as its remotes.
    pub fn sb_listen(&self, name: &str) -> integration::central::CentralListen {
        integration::central::CentralListen {
            sb: vec!["db:OVN_Southbound,SB_Global,connections".into()],
            sb_options: vec![
                format!("--private-key={}", self.key(name).display()),
                format!("--certificate={}", self.cert(name).display()),
                format!("--ca-cert={}", self.ca().display()),
            ],
            ..Default::default()
        }
    }
}

/// Adds a `pssl:` connection with the `ovn-controller` RBAC role to the lab's Southbound,
/// as OVN's testsuite does; returns the `ssl:` remote for the chassis.
pub fn add_rbac_listener(lab: &integration::Lab) -> String {
    let port = integration::ovsdb_cluster::free_port().expect("a free port");
    lab.central()
        .sbctl(&[
            "--",
            "--id=@c",
            "create",
            "connection",
            &format!("target=\"pssl:{port}:127.0.0.1\""),
            "role=ovn-controller",
            "--",
            "add",
            "SB_Global",
            ".",
            "connections",
            "@c",
        ])
        .expect("create the pssl connection");
    let remote = format!("ssl:127.0.0.1:{port}");
    // Listening once the server connects to it.
    integration::host::wait_for(
        "the Southbound listens on the pssl port",
        std::time::Duration::from_secs(20),
        || {
            Ok(std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(drop))
        },
    )
    .expect("pssl listener");
    remote
}
