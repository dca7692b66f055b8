//! Which SSL settings the Southbound connection uses, as ovn-controller 23.03.1
//! chooses them: the local Open_vSwitch database's `SSL` row (`ovs-vsctl set-ssl`)
//! when there is one, else the command line's `-p/-c/-C/--bootstrap-ca-cert`. The
//! protocols and ciphers come from the command line either way (OVS 3.1's `SSL`
//! table has no columns for them).

use sbclient::client::TlsSettings;
use sbclient::vswitch::{OpenVswitch, Ssl};
use sbclient::Replica;

/// The `SSL` row the Open_vSwitch record points to (or, as ovn-controller reads it,
/// the first one there is).
fn ssl_row(ovs: &Replica) -> Option<&Ssl> {
    let table = ovs.table::<Ssl>()?;
    let pointed = ovs
        .table::<OpenVswitch>()
        .and_then(|t| t.iter().find_map(|(_, r)| r.ssl))
        .and_then(|uuid| table.get(&uuid));
    pointed.or_else(|| table.iter().map(|(_, r)| r).next())
}

/// The settings in effect: the `SSL` row's files over the command line's.
pub fn effective(ovs: &Replica, command_line: Option<&TlsSettings>) -> Option<TlsSettings> {
    let Some(row) = ssl_row(ovs) else {
        return command_line.cloned();
    };
    let file = |f: &str| (!f.is_empty()).then(|| f.into());
    Some(TlsSettings {
        private_key: file(&row.private_key),
        certificate: file(&row.certificate),
        ca_cert: file(&row.ca_cert),
        bootstrap_ca_cert: row.bootstrap_ca_cert,
        protocols: command_line.and_then(|c| c.protocols.clone()),
        ciphers: command_line.and_then(|c| c.ciphers.clone()),
    })
}

/// The settings as one log line.
pub fn describe(settings: Option<&TlsSettings>) -> String {
    let Some(s) = settings else {
        return "none".into();
    };
    let file = |f: &Option<std::path::PathBuf>| {
        f.as_ref()
            .map_or_else(|| "(none)".into(), |p| p.display().to_string())
    };
    format!(
        "private key {}, certificate {}, CA certificate {}{}",
        file(&s.private_key),
        file(&s.certificate),
        file(&s.ca_cert),
        if s.bootstrap_ca_cert {
            " (bootstrap)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssl_options::SslOptions;
    use serde_json::json;

    fn replica(ssl: Option<(&str, &str, &str, bool)>) -> Replica {
        let mut ovs = Replica::new(sbclient::vswitch::DATABASE);
        sbclient::vswitch::register_all(&mut ovs);
        let ssl_uuid = "6a0e5d4a-37a0-4a4c-9d30-6e0bd5a7c8b1";
        let mut update = json!({"Open_vSwitch": {"0c0b4e1a-8d7c-4f6e-9a21-3b5c2d1e0f99": {"initial": {
            "ssl": if ssl.is_some() { json!(["uuid", ssl_uuid]) } else { json!(["set", []]) }
        }}}});
        if let Some((key, cert, ca, bootstrap)) = ssl {
            update["SSL"] = json!({ssl_uuid: {"initial": {
                "private_key": key, "certificate": cert, "ca_cert": ca, "bootstrap_ca_cert": bootstrap
            }}});
        }
        ovs.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
            .unwrap();
        ovs
    }

    fn options() -> SslOptions {
        SslOptions {
            private_key: Some("/cli/key.pem".into()),
            certificate: Some("/cli/cert.pem".into()),
            ca_cert: Some("/cli/ca.pem".into()),
            protocols: Some("TLSv1.2".into()),
            ..SslOptions::default()
        }
    }

    #[test]
    fn the_ssl_row_wins_over_the_command_line() {
        let cli = options().settings();
        let ovs = replica(Some(("/db/key.pem", "/db/cert.pem", "/db/ca.pem", true)));
        let s = effective(&ovs, cli.as_ref()).unwrap();
        assert_eq!(s.private_key.as_deref(), Some("/db/key.pem".as_ref()));
        assert_eq!(s.ca_cert.as_deref(), Some("/db/ca.pem".as_ref()));
        assert!(s.bootstrap_ca_cert);
        assert_eq!(s.protocols.as_deref(), Some("TLSv1.2"));
        let ovs = replica(None);
        assert_eq!(effective(&ovs, cli.as_ref()), cli);
        assert_eq!(effective(&ovs, None), None);
    }
}
