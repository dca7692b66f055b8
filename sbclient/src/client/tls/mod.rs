//! `ssl:` remotes with rustls, configured as ovn-controller is: a private key, a
//! certificate and a CA certificate, all PEM files, optionally a CA certificate
//! to bootstrap from the server, and the protocols and ciphers to allow.
//!
//! As in Open vSwitch, the server's certificate must chain to the CA, but its
//! names are not matched against the remote's host (OVS certificates name
//! their owner, not a host).
//!
//! The files are read when a connection is made; [`TlsState`] reloads them when
//! their contents change, so a rotated certificate serves the next connection.

mod bootstrap;
mod state;
mod suites;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, RootCertStore};

pub(crate) use bootstrap::write_bootstrapped_ca;
pub(crate) use state::TlsState;

/// Where the key, certificates and TLS choices come from (the command line's
/// `-p/-c/-C/--bootstrap-ca-cert/--ssl-protocols/--ssl-ciphers`, or the local
/// Open_vSwitch database's `SSL` row).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    pub private_key: Option<PathBuf>,
    pub certificate: Option<PathBuf>,
    pub ca_cert: Option<PathBuf>,
    /// Take the CA certificate from the first server when `ca_cert` does not exist.
    pub bootstrap_ca_cert: bool,
    /// `--ssl-protocols`: e.g. `TLSv1.2,TLSv1.3` (default: both).
    pub protocols: Option<String>,
    /// `--ssl-ciphers`: an OpenSSL cipher list (default: rustls' suites).
    pub ciphers: Option<String>,
}

/// The SSL configuration cannot be used.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsError {
    #[error("SSL: no {0} configured (ovs-vsctl set-ssl, or -p, -c and -C)")]
    NotConfigured(&'static str),
    #[error("SSL: {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("SSL: {0}: no usable PEM item")]
    Empty(PathBuf),
    #[error("SSL: private key {key} does not match certificate {certificate}")]
    KeyMismatch { key: PathBuf, certificate: PathBuf },
    #[error("SSL: {0}")]
    Rustls(String),
    #[error("SSL: CA certificate {path}: {reason}")]
    Verifier { path: PathBuf, reason: String },
    #[error("SSL protocols {0:?}: {1}")]
    Protocols(String, String),
    #[error("SSL ciphers {0:?}: {1}")]
    Ciphers(String, String),
    #[error("SSL: {0}: handshake failed: {1}")]
    Handshake(String, String),
    #[error("could not bootstrap CA certificate {path}: {reason}")]
    Bootstrap { path: PathBuf, reason: String },
}

impl From<rustls::Error> for TlsError {
    fn from(e: rustls::Error) -> Self {
        TlsError::Rustls(e.to_string())
    }
}

/// How a TLS connection verifies the server.
#[derive(Debug, Clone)]
pub(crate) enum Connector {
    /// Against the CA certificate.
    Verify(Arc<rustls::ClientConfig>),
    /// Without a CA yet: the connection only serves to learn the CA certificate,
    /// written to `ca_cert`, and is then dropped.
    Bootstrap {
        config: Arc<rustls::ClientConfig>,
        ca_cert: PathBuf,
    },
}

fn required<'a>(path: Option<&'a PathBuf>, what: &'static str) -> Result<&'a Path, TlsError> {
    path.map(PathBuf::as_path)
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or(TlsError::NotConfigured(what))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

pub(crate) fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty(path.to_owned()));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| TlsError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?
        .ok_or_else(|| TlsError::Empty(path.to_owned()))
}

/// Builds the connector for `settings`: the key and certificate are always needed;
/// the CA certificate too, unless it is to be bootstrapped and does not exist yet.
pub(crate) fn connector(settings: &TlsSettings) -> Result<Connector, TlsError> {
    let key_path = required(settings.private_key.as_ref(), "private key")?;
    let cert_path = required(settings.certificate.as_ref(), "certificate")?;
    let ca_path = required(settings.ca_cert.as_ref(), "CA certificate")?;
    let provider = Arc::new(suites::provider(
        settings.ciphers.as_deref(),
        rustls::crypto::ring::default_provider(),
    )?);
    let versions = suites::versions(settings.protocols.as_deref())?;
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)?;
    let key = private_key(key_path)?;
    let chain = certs(cert_path)?;
    let bootstrap = settings.bootstrap_ca_cert && !ca_path.exists();
    let builder = if bootstrap {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verify::LearnCa::new(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        for cert in certs(ca_path)? {
            roots.add(cert).map_err(|e| TlsError::Verifier {
                path: ca_path.to_owned(),
                reason: e.to_string(),
            })?;
        }
        let verifier =
            verify::chain_only(roots, provider).map_err(|reason| TlsError::Verifier {
                path: ca_path.to_owned(),
                reason,
            })?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
    };
    let config = builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch {
                key: key_path.to_owned(),
                certificate: cert_path.to_owned(),
            },
            e => e.into(),
        })?;
    let config = Arc::new(config);
    Ok(if bootstrap {
        Connector::Bootstrap {
            config,
            ca_cert: ca_path.to_owned(),
        }
    } else {
        Connector::Verify(config)
    })
}

/// The name a TLS connection to `host` presents (SNI).
pub fn server_name(host: &str) -> Result<ServerName<'static>, std::io::Error> {
    ServerName::try_from(host.to_owned())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

#[cfg(test)]
mod tests;
