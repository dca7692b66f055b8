use std::path::PathBuf;

use super::*;

fn settings(dir: &Path) -> TlsSettings {
    TlsSettings {
        private_key: Some(dir.join("key.pem")),
        certificate: Some(dir.join("cert.pem")),
        ca_cert: Some(dir.join("ca.pem")),
        ..TlsSettings::default()
    }
}

#[test]
fn missing_settings_name_what_is_missing() {
    let s = TlsSettings {
        private_key: Some(PathBuf::from("/k")),
        ..TlsSettings::default()
    };
    assert_eq!(
        connector(&s).unwrap_err(),
        TlsError::NotConfigured("certificate")
    );
    assert_eq!(
        connector(&TlsSettings::default()).unwrap_err().to_string(),
        "SSL: no private key configured (ovs-vsctl set-ssl, or -p, -c and -C)"
    );
}

#[test]
fn missing_files_are_named() {
    let s = settings(Path::new("/nonexistent"));
    let e = connector(&s).unwrap_err();
    assert!(
        matches!(&e, TlsError::Read { path, .. } if path == Path::new("/nonexistent/key.pem")),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("SSL: /nonexistent/key.pem: "),
        "{e}"
    );
}

#[test]
fn empty_pem_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["key.pem", "cert.pem", "ca.pem"] {
        std::fs::write(dir.path().join(f), "not pem\n").unwrap();
    }
    assert_eq!(
        connector(&settings(dir.path())).unwrap_err(),
        TlsError::Empty(dir.path().join("key.pem"))
    );
}

#[test]
fn protocols_as_ovs_reads_them() {
    use tokio_rustls::rustls::ProtocolVersion::{TLSv1_2, TLSv1_3};
    let names = |p| {
        suites::versions(Some(p))
            .unwrap()
            .iter()
            .map(|v| v.version)
            .collect::<Vec<_>>()
    };
    assert_eq!(names("TLSv1,TLSv1.1,TLSv1.2"), [TLSv1_2]);
    assert_eq!(names("tlsv1.3 TLSv1.2"), [TLSv1_3, TLSv1_2]);
    assert_eq!(suites::versions(None).unwrap().len(), 2);
    let e = suites::versions(Some("TLSv1.2,SSLv3")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "SSL protocols \"TLSv1.2,SSLv3\": SSLv3: SSL protocol not recognized"
    );
    assert!(matches!(
        suites::versions(Some("TLSv1,TLSv1.1")),
        Err(TlsError::Protocols(..))
    ));
}

#[test]
fn ciphers_choose_among_the_tls12_suites() {
    use tokio_rustls::rustls::crypto::ring::default_provider;
    use tokio_rustls::rustls::ProtocolVersion;
    let tls12 = |list: &str| {
        let p = suites::provider(Some(list), default_provider()).unwrap();
        let mut names: Vec<String> = p
            .cipher_suites
            .iter()
            .filter(|s| s.version().version == ProtocolVersion::TLSv1_2)
            .map(|s| s.suite().as_str().unwrap().to_owned())
            .collect();
        names.sort();
        let tls13 = p.cipher_suites.len() - names.len();
        assert_eq!(tls13, 3, "TLS 1.3 suites are always offered");
        names
    };
    assert_eq!(tls12("HIGH:!aNULL:!MD5").len(), 6);
    assert_eq!(
        tls12("ECDHE-RSA-AES256-GCM-SHA384"),
        ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]
    );
    assert_eq!(
        tls12("ECDSA:!CHACHA20"),
        [
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        ]
    );
    assert!(matches!(
        suites::provider(Some("RC4-SHA:DES-CBC3-SHA"), default_provider()),
        Err(TlsError::Ciphers(..))
    ));
}

#[test]
fn state_reloads_when_a_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = TlsState::new(Some(settings(dir.path())));
    let first = state.connector().unwrap_err();
    assert!(matches!(first, TlsError::Read { .. }));
    assert!(state.first_report(&first));
    assert!(
        !state.first_report(&first),
        "the same failure is logged once"
    );
    assert!(!state.changed_since_connect());
    std::fs::write(dir.path().join("key.pem"), "garbage\n").unwrap();
    assert!(state.changed_since_connect());
    let second = state.connector().unwrap_err();
    assert_eq!(second, TlsError::Empty(dir.path().join("key.pem")));
    assert!(state.first_report(&second));
    assert!(!state.changed_since_connect());
    assert!(!state.set(Some(settings(dir.path()))));
    let mut other = settings(dir.path());
    other.protocols = Some("TLSv1.2".into());
    assert!(state.set(Some(other)));
    assert!(state.changed_since_connect());
}
