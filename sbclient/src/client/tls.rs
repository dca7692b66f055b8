//! `ssl:` remotes with rustls, configured as ovn-controller is: a private key,
//! a certificate and a CA certificate, all PEM files (`-p`, `-c`, `-C`).
//!
//! As in Open vSwitch, the server's certificate must chain to the CA, but its
//! names are not matched against the remote's host (OVS certificates name
//! their owner, not a host).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// The PEM files of an SSL configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub private_key: PathBuf,
    pub certificate: PathBuf,
    pub ca_cert: PathBuf,
}

/// The SSL configuration cannot be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: no usable PEM item")]
    Empty(PathBuf),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("CA certificate: {0}")]
    Verifier(String),
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty(path.to_owned()));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })?
        .ok_or_else(|| TlsError::Empty(path.to_owned()))
}

/// Builds the rustls client configuration from the three files.
pub fn client_config(files: &TlsFiles) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in certs(&files.ca_cert)? {
        roots.add(cert)?;
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .build()
        .map_err(|e| TlsError::Verifier(e.to_string()))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier { inner }))
        .with_client_auth_cert(certs(&files.certificate)?, private_key(&files.private_key)?)?;
    Ok(Arc::new(config))
}

/// The name a TLS connection to `host` presents (SNI).
pub fn server_name(host: &str) -> Result<ServerName<'static>, std::io::Error> {
    ServerName::try_from(host.to_owned())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// Verifies the chain to the CA, and ignores only a name mismatch.
#[derive(Debug)]
struct ChainOnlyVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_reported() {
        let files = TlsFiles {
            private_key: "/nonexistent/key.pem".into(),
            certificate: "/nonexistent/cert.pem".into(),
            ca_cert: "/nonexistent/ca.pem".into(),
        };
        assert!(matches!(client_config(&files), Err(TlsError::Read { .. })));
    }

    #[test]
    fn empty_pem_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem\n").unwrap();
        let files = TlsFiles {
            private_key: empty.clone(),
            certificate: empty.clone(),
            ca_cert: empty,
        };
        assert!(matches!(client_config(&files), Err(TlsError::Empty(_))));
    }
}
