//! The SSL options of the command line (`-p/-c/-C/--bootstrap-ca-cert/--ssl-protocols/
//! --ssl-ciphers`), as the daemon and `compile --sb ssl:...` take them.

use std::path::PathBuf;

use sbclient::client::TlsSettings;

/// SSL/PKI options, passed through to the database clients.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SslOptions {
    pub private_key: Option<PathBuf>,
    pub certificate: Option<PathBuf>,
    pub ca_cert: Option<PathBuf>,
    pub bootstrap_ca_cert: Option<PathBuf>,
    pub peer_ca_cert: Option<PathBuf>,
    pub protocols: Option<String>,
    pub ciphers: Option<String>,
}

impl SslOptions {
    /// The command line's settings, if it names any file or choice.
    pub fn settings(&self) -> Option<TlsSettings> {
        let bootstrap = self.ca_cert.is_none() && self.bootstrap_ca_cert.is_some();
        let settings = TlsSettings {
            private_key: self.private_key.clone(),
            certificate: self.certificate.clone(),
            ca_cert: self
                .ca_cert
                .clone()
                .or_else(|| self.bootstrap_ca_cert.clone()),
            bootstrap_ca_cert: bootstrap,
            protocols: self.protocols.clone(),
            ciphers: self.ciphers.clone(),
        };
        (settings != TlsSettings::default()).then_some(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_ca_cert_option() {
        let s = SslOptions {
            bootstrap_ca_cert: Some("/cli/boot.pem".into()),
            ..SslOptions::default()
        }
        .settings()
        .unwrap();
        assert!(s.bootstrap_ca_cert);
        assert_eq!(s.ca_cert.as_deref(), Some("/cli/boot.pem".as_ref()));
        assert_eq!(SslOptions::default().settings(), None);
        let both = SslOptions {
            ca_cert: Some("/cli/ca.pem".into()),
            bootstrap_ca_cert: Some("/cli/boot.pem".into()),
            ..SslOptions::default()
        };
        assert!(!both.settings().unwrap().bootstrap_ca_cert);
    }
}
