//! Remotes as ovn-controller and ovsdb-client spell them: `unix:PATH`,
//! `tcp:HOST:PORT`, `ssl:HOST:PORT`, several separated by commas.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::ClientConfig as TlsConfig;
use tokio_rustls::TlsConnector;

use super::tls::server_name;

/// A remote that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("unsupported remote {0:?} (expected unix:, tcp: or ssl:)")]
    Unsupported(String),
    #[error("remote {0:?} lacks a port")]
    NoPort(String),
}

/// One remote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remote {
    Unix(String),
    Tcp { host: String, port: u16 },
    Ssl { host: String, port: u16 },
}

impl fmt::Display for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remote::Unix(p) => write!(f, "unix:{p}"),
            Remote::Tcp { host, port } => write!(f, "tcp:{}:{port}", bracket(host)),
            Remote::Ssl { host, port } => write!(f, "ssl:{}:{port}", bracket(host)),
        }
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

fn host_port(spec: &str, whole: &str) -> Result<(String, u16), RemoteError> {
    let (host, port) = if let Some(rest) = spec.strip_prefix('[') {
        let (h, p) = rest
            .split_once("]:")
            .ok_or_else(|| RemoteError::NoPort(whole.to_owned()))?;
        (h, p)
    } else {
        spec.rsplit_once(':')
            .ok_or_else(|| RemoteError::NoPort(whole.to_owned()))?
    };
    let port = port
        .parse()
        .map_err(|_| RemoteError::NoPort(whole.to_owned()))?;
    Ok((host.to_owned(), port))
}

impl Remote {
    /// Parses one remote.
    pub fn parse(text: &str) -> Result<Self, RemoteError> {
        let text = text.trim();
        if let Some(path) = text.strip_prefix("unix:") {
            return Ok(Remote::Unix(path.to_owned()));
        }
        if let Some(spec) = text.strip_prefix("tcp:") {
            let (host, port) = host_port(spec, text)?;
            return Ok(Remote::Tcp { host, port });
        }
        if let Some(spec) = text.strip_prefix("ssl:") {
            let (host, port) = host_port(spec, text)?;
            return Ok(Remote::Ssl { host, port });
        }
        Err(RemoteError::Unsupported(text.to_owned()))
    }

    /// Parses a comma-separated list.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, RemoteError> {
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Self::parse)
            .collect()
    }
}

/// A connected byte stream.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection could not be made.
#[derive(Debug, Error)]
pub enum ConnectError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The TCP connection was made, the TLS handshake failed (a certificate refused by
    /// either side, no common protocol or suite).
    #[error("SSL handshake failed: {0}")]
    Handshake(std::io::Error),
}

/// Connects to a remote; `ssl:` remotes use `tls` (the caller has it ready).
pub async fn connect(
    remote: &Remote,
    tls: Option<&std::sync::Arc<TlsConfig>>,
) -> Result<Stream, ConnectError> {
    match remote {
        Remote::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
        Remote::Tcp { host, port } => {
            let s = TcpStream::connect((host.as_str(), *port)).await?;
            s.set_nodelay(true)?;
            Ok(Stream::Tcp(s))
        }
        Remote::Ssl { host, port } => {
            let config = tls.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "ssl: remote without an SSL configuration",
                )
            })?;
            let tcp = TcpStream::connect((host.as_str(), *port)).await?;
            tcp.set_nodelay(true)?;
            let stream = TlsConnector::from(std::sync::Arc::clone(config))
                .connect(server_name(host)?, tcp)
                .await
                .map_err(ConnectError::Handshake)?;
            Ok(Stream::Tls(Box::new(stream)))
        }
    }
}

impl Stream {
    /// The certificates the server presented (TLS only).
    pub fn peer_certificates(
        &self,
    ) -> Option<&[tokio_rustls::rustls::pki_types::CertificateDer<'static>]> {
        match self {
            Stream::Tls(s) => s.get_ref().1.peer_certificates(),
            _ => None,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_remotes() {
        assert_eq!(
            Remote::parse_list("unix:/run/ovn/sb.sock, tcp:127.0.0.1:6642,ssl:[::1]:6642").unwrap(),
            vec![
                Remote::Unix("/run/ovn/sb.sock".into()),
                Remote::Tcp {
                    host: "127.0.0.1".into(),
                    port: 6642
                },
                Remote::Ssl {
                    host: "::1".into(),
                    port: 6642
                },
            ]
        );
        assert_eq!(
            Remote::parse("ssl:[::1]:6642").unwrap().to_string(),
            "ssl:[::1]:6642"
        );
        assert!(Remote::parse("tcp:host").is_err());
        assert!(Remote::parse("ptcp:6642").is_err());
        assert!(Remote::parse("tcp:h:notaport").is_err());
    }
}
