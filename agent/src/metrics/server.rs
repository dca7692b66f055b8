//! The HTTP side: `GET /metrics` answers the metrics, anything else 404 (405 for another
//! method on `/metrics`).
//!
//! Bounded so that a slow or hostile client costs little and blocks nothing: at most
//! [`ServerLimits::connections`] connections at once (more are closed at once), one request
//! per connection, a small header buffer, and a deadline for the headers and for the whole
//! exchange. It runs as its own task and reads only the shared atomics, never the engine.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::Metrics;
use crate::vlog::RateLimit;

/// Failed accepts (out of descriptors) repeat every 100 ms: logged as OVS limits warnings.
static ACCEPT_ERRORS: RateLimit = RateLimit::new(5, 20);

/// How much one client may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once.
    pub connections: usize,
    /// Time to send the request headers.
    pub header_timeout: Duration,
    /// Time for the whole exchange (a client that reads the answer too slowly is cut off).
    pub exchange_timeout: Duration,
    /// Request buffer (hyper's minimum is 8 KiB).
    pub buffer: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            connections: 16,
            header_timeout: Duration::from_secs(5),
            exchange_timeout: Duration::from_secs(10),
            buffer: 8 * 1024,
        }
    }
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot listen for metrics on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A bound metrics listener; [`MetricsServer::spawn`] starts serving.
#[derive(Debug)]
pub struct MetricsServer {
    listener: TcpListener,
    local_addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port: see [`Self::local_addr`]).
    pub async fn bind(addr: SocketAddr) -> Result<Self, MetricsError> {
        let bind_error = |source| MetricsError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        Ok(Self {
            listener,
            local_addr,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves `metrics` until the task is aborted.
    pub fn spawn(self, metrics: Arc<Metrics>, limits: ServerLimits) -> JoinHandle<()> {
        tokio::spawn(serve(self.listener, metrics, limits))
    }
}

async fn serve(listener: TcpListener, metrics: Arc<Metrics>, limits: ServerLimits) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.buffer.max(8 * 1024))
        .keep_alive(false);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: wait rather than spin.
                crate::vlog_rl!(WARN, &ACCEPT_ERRORS, target: "main", "metrics endpoint: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Over the limit: closed at once (dropping the stream).
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let metrics = metrics.clone();
        let connection = http.serve_connection(
            TokioIo::new(stream),
            hyper::service::service_fn(move |req| {
                std::future::ready(Ok::<_, Infallible>(answer(&req, &metrics)))
            }),
        );
        let deadline = limits.exchange_timeout;
        tokio::spawn(async move {
            // A timeout or a broken client ends only its own connection.
            let _ = tokio::time::timeout(deadline, connection).await;
            drop(slot);
        });
    }
}

fn answer(req: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let text = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if req.uri().path() != "/metrics" {
        return text(StatusCode::NOT_FOUND, "not found: try /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics only\n");
        r.headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let mut r = Response::new(Full::new(Bytes::from(metrics.encode())));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(super::CONTENT_TYPE));
    r
}
