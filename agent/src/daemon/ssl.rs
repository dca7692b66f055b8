//! Which SSL settings the Southbound connection uses, as ovn-controller 23.03.1
//! chooses them: the local Open_vSwitch database's `SSL` row (`ovs-vsctl set-ssl`)
//! when there is one, else the command line's `-p/-c/-C/--bootstrap-ca-cert`, else (the
//! row deleted, `ovs-vsctl del-ssl`) the files in effect stay, as OVS's SSL library keeps
//! the last ones it was given. The protocols and ciphers come from the command line
//! either way (OVS 3.1's `SSL` table has no columns for them).

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

/// The settings in effect: the `SSL` row's files over the command line's, over those in
/// effect now (`previous`).
pub fn effective(
    ovs: &Replica,
    command_line: Option<&TlsSettings>,
    previous: Option<&TlsSettings>,
) -> Option<TlsSettings> {
    let Some(row) = ssl_row(ovs) else {
        let Some(prev) = previous else {
            return command_line.cloned();
        };
        let cli = command_line.cloned().unwrap_or_default();
        let key_and_cert = cli.private_key.is_some() && cli.certificate.is_some();
        let (private_key, certificate) = if key_and_cert {
            (cli.private_key, cli.certificate)
        } else {
            (prev.private_key.clone(), prev.certificate.clone())
        };
        let (ca_cert, bootstrap_ca_cert) = if cli.ca_cert.is_some() {
            (cli.ca_cert, cli.bootstrap_ca_cert)
        } else {
            (prev.ca_cert.clone(), prev.bootstrap_ca_cert)
        };
        return Some(TlsSettings {
            private_key,
            certificate,
            ca_cert,
            bootstrap_ca_cert,
            protocols: cli.protocols,
            ciphers: cli.ciphers,
        });
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
        let s = effective(&ovs, cli.as_ref(), None).unwrap();
        assert_eq!(s.private_key.as_deref(), Some("/db/key.pem".as_ref()));
        assert_eq!(s.ca_cert.as_deref(), Some("/db/ca.pem".as_ref()));
        assert!(s.bootstrap_ca_cert);
        assert_eq!(s.protocols.as_deref(), Some("TLSv1.2"));
        let ovs = replica(None);
        assert_eq!(effective(&ovs, cli.as_ref(), None), cli);
        assert_eq!(effective(&ovs, None, None), None);
    }

    #[test]
    fn without_the_row_the_files_in_effect_stay_unless_the_command_line_names_others() {
        let row = replica(Some(("/db/key.pem", "/db/cert.pem", "/db/ca.pem", false)));
        let in_effect = effective(&row, None, None);
        // `ovs-vsctl del-ssl` with no files on the command line: nothing changes.
        let deleted = replica(None);
        assert_eq!(effective(&deleted, None, in_effect.as_ref()), in_effect);
        // With them, the command line's.
        let cli = options().settings();
        let s = effective(&deleted, cli.as_ref(), in_effect.as_ref()).unwrap();
        assert_eq!(s.private_key.as_deref(), Some("/cli/key.pem".as_ref()));
        assert_eq!(s.ca_cert.as_deref(), Some("/cli/ca.pem".as_ref()));
    }
}
