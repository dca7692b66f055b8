//! The unixctl server: a Unix stream socket that `ovs-appctl`/`ovn-appctl` talk to.
//!
//! Each connection is served in order, one request at a time, as OVS does. `list-commands`,
//! `version` and `vlog/*` are answered here; every other registered command goes to the
//! main loop as an [`AppctlRequest`] over a bounded channel, and a reply that does not come
//! within the configured time becomes an error reply, so a client never hangs on us.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sbclient::jsonrpc::Framer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::protocol::{decode_request, encode_json_reply, encode_reply};
use super::registry::{CommandRegistry, Handler};
use crate::lflow::dialect::{Dialect, OVN_23_03};
use crate::vlog::{RateLimit, Vlog};

/// A command for the main loop. Send exactly one reply; dropping `reply` unanswered gives
/// the client an error.
#[derive(Debug)]
pub struct AppctlRequest {
    pub command: String,
    pub args: Vec<String>,
    pub reply: oneshot::Sender<Result<String, String>>,
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Socket path (see [`crate::daemon::DaemonConfig::unixctl_path`]).
    pub path: PathBuf,
    /// The `version` reply.
    pub version: String,
    /// How long a forwarded command may take before the client gets an error.
    pub reply_timeout: Duration,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppctlError {
    #[error(
        "{path}: could not initialize control socket ({})",
        crate::daemon::os_error::Strerror(source)
    )]
    Bind {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}: control socket is in use by another process")]
    InUse(String),
}

/// Requests larger than this close the connection (OVS has no limit; no real command
/// comes near it).
const MAX_REQUEST_BYTES: usize = 16 << 20;

static PROTOCOL_ERRORS: RateLimit = RateLimit::new(5, 5);

struct Shared {
    replies: ReplyForms,
    registry: CommandRegistry,
    version: String,
    vlog: Option<Vlog>,
    requests: mpsc::Sender<AppctlRequest>,
    reply_timeout: Duration,
}

/// The release the agent speaks, for the control socket: which commands exist and how
/// replies are written (as that release's ovn-controller and OVS library do); the main
/// loop sets it when the release is known or changes.
#[derive(Debug, Clone)]
pub struct ReplyForms(Arc<std::sync::RwLock<&'static Dialect>>);

impl ReplyForms {
    fn new() -> Self {
        Self(Arc::new(std::sync::RwLock::new(&OVN_23_03)))
    }

    /// Called every turn of the main loop: writes only when the release changed.
    pub fn set_release(&self, dialect: &'static Dialect) {
        if std::ptr::eq(self.release(), dialect) {
            return;
        }
        if let Ok(mut d) = self.0.write() {
            *d = dialect;
        }
    }

    fn release(&self) -> &'static Dialect {
        self.0.read().map_or(&OVN_23_03, |d| *d)
    }

    /// Whether a reply body gets a final newline (23.03's OVS 3.1 does it).
    fn newline(&self) -> bool {
        self.release().appctl_reply_newline
    }
}

/// A running server. Dropping it (or [`AppctlServer::shutdown`]) stops it and removes the
/// socket file.
#[derive(Debug)]
pub struct AppctlServer {
    path: PathBuf,
    /// Device and inode of our socket, so we never remove a successor's socket.
    identity: Option<(u64, u64)>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
    replies: ReplyForms,
}

impl AppctlServer {
    /// Listens on `config.path` and serves in the current tokio runtime. With `vlog`, the
    /// `vlog/*` commands are added to `registry`.
    pub fn bind(
        config: ServerConfig,
        mut registry: CommandRegistry,
        vlog: Option<Vlog>,
        requests: mpsc::Sender<AppctlRequest>,
    ) -> Result<AppctlServer, AppctlError> {
        if vlog.is_some() && !registry.contains("vlog/set") {
            registry = registry.with_vlog_commands();
        }
        let path = config.path;
        remove_stale_socket(&path)?;
        let listener = UnixListener::bind(&path).map_err(|source| AppctlError::Bind {
            path: path.display().to_string(),
            source,
        })?;
        let identity = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
        let replies = ReplyForms::new();
        let shared = Arc::new(Shared {
            replies: replies.clone(),
            registry,
            version: config.version,
            vlog,
            requests,
            reply_timeout: config.reply_timeout,
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, shared, stopped));
        tracing::debug!("listening on {}", path.display());
        Ok(AppctlServer {
            path,
            identity,
            stop,
            task: Some(task),
            replies,
        })
    }

    /// The handle that sets how replies are written.
    pub fn reply_forms(&self) -> ReplyForms {
        self.replies.clone()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, closes every connection and removes the socket file.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.remove_socket();
    }

    fn remove_socket(&mut self) {
        let ours = std::fs::metadata(&self.path)
            .ok()
            .map(|m| (m.dev(), m.ino()))
            == self.identity;
        if self.identity.take().is_some() && ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for AppctlServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.remove_socket();
    }
}

/// A socket file left by a process that died is removed; one that still answers is not.
fn remove_stale_socket(path: &Path) -> Result<(), AppctlError> {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !metadata.file_type().is_socket() {
        return Ok(()); // bind reports "address in use"; we never delete other files.
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(AppctlError::InUse(path.display().to_string()));
    }
    let _ = std::fs::remove_file(path);
    Ok(())
}

async fn accept_loop(
    listener: UnixListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, shared.clone(), stopped.clone()));
                }
                Err(error) => {
                    crate::vlog_rl!(WARN, &PROTOCOL_ERRORS, "accept failed: {error}");
                    // Usually EMFILE: give the process a moment instead of spinning.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // Connections finish the reply they are working on (e.g. to `exit`), then close; one
    // stuck on the main loop is cut off after a moment.
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        connections.shutdown().await;
    }
}

/// How long connections get to finish their current reply when the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

async fn serve_connection(
    mut stream: UnixStream,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut framer = Framer::with_limit(MAX_REQUEST_BYTES);
    let mut buffer = vec![0u8; 4096];
    // `set-options --format json` on this connection.
    let mut json_format = false;
    loop {
        loop {
            let frame = match framer.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    crate::vlog_rl!(WARN, &PROTOCOL_ERRORS, "unixctl connection: {error}");
                    return;
                }
            };
            let request = match decode_request(&frame) {
                Ok(request) => request,
                Err(error) => {
                    crate::vlog_rl!(WARN, &PROTOCOL_ERRORS, "unixctl connection: {error}");
                    return;
                }
            };
            tracing::debug!(
                "received request {}{}, id={}",
                request.method,
                serde_json::Value::from(request.params.clone()),
                request.id
            );
            let outcome = answer(&shared, &request, &mut json_format).await;
            tracing::debug!(
                "replying with {}, id={}: \"{}\"",
                if outcome.is_ok() { "success" } else { "error" },
                request.id,
                outcome.as_ref().unwrap_or_else(|e| e)
            );
            let bytes = match &outcome {
                Ok(text) if json_format => {
                    let release = shared.replies.release().release;
                    let result = if request.method == "list-commands" {
                        shared.registry.list_commands_json(release)
                    } else {
                        // A plain-text reply in the provisional document OVS wraps it in.
                        serde_json::json!({"reply-format": "plain", "reply": text})
                    };
                    encode_json_reply(&request.id, &result)
                }
                _ => encode_reply(&request.id, &outcome, shared.replies.newline()),
            };
            if stream.write_all(&bytes).await.is_err() || *stopped.borrow() {
                return;
            }
        }
        tokio::select! {
            _ = stopped.changed() => return,
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => framer.push(&buffer[..n]),
            },
        }
    }
}

async fn answer(
    shared: &Shared,
    request: &super::protocol::Request,
    json_format: &mut bool,
) -> Result<String, String> {
    let args = request.string_params();
    let release = shared.replies.release().release;
    let handler = shared.registry.check(
        &request.method,
        request.params.len(),
        args.is_some(),
        release,
    )?;
    let args = args.unwrap_or_default();
    match handler {
        Handler::ListCommands => Ok(shared.registry.list_commands(release)),
        Handler::Version => Ok(shared.version.clone()),
        Handler::SetOptions => set_options(&args, json_format),
        Handler::Vlog => match &shared.vlog {
            Some(vlog) => vlog
                .run_command(&request.method, &args)
                .unwrap_or_else(|| Err(format!("\"{}\" is not a vlog command", request.method))),
            None => Err("logging is not configured".into()),
        },
        Handler::Forward => forward(shared, &request.method, args).await,
    }
}

async fn forward(shared: &Shared, command: &str, args: Vec<String>) -> Result<String, String> {
    let deadline = tokio::time::Instant::now() + shared.reply_timeout;
    let timed_out = || {
        format!(
            "\"{command}\" command timed out after {} ms",
            shared.reply_timeout.as_millis()
        )
    };
    let (reply, replied) = oneshot::channel();
    let request = AppctlRequest {
        command: command.to_string(),
        args,
        reply,
    };
    match tokio::time::timeout_at(deadline, shared.requests.send(request)).await {
        Err(_) => return Err(timed_out()),
        Ok(Err(_)) => return Err(format!("\"{command}\" command cannot run: shutting down")),
        Ok(Ok(())) => {}
    }
    match tokio::time::timeout_at(deadline, replied).await {
        Err(_) => Err(timed_out()),
        Ok(Err(_)) => Err(format!("\"{command}\" command was dropped without a reply")),
        Ok(Ok(outcome)) => outcome,
    }
}

/// `set-options [--format text|json]`, as OVS's library parses it (`--format X`,
/// `--format=X`, `-f X`); a new format applies from the next reply on.
fn set_options(args: &[String], json_format: &mut bool) -> Result<String, String> {
    let mut format = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let value = if let Some(v) = a.strip_prefix("--format=") {
            v.to_owned()
        } else if a == "--format" || a == "-f" {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("option '{a}' requires an argument"))?
        } else {
            return Err(format!("unrecognized option '{a}'"));
        };
        match value.as_str() {
            "text" => format = Some(false),
            "json" => format = Some(true),
            other => return Err(format!("option format has invalid value {other}")),
        }
        i += 1;
    }
    if let Some(f) = format {
        *json_format = f;
    }
    Ok(String::new())
}

#[cfg(test)]
#[test]
fn set_options_takes_ovs_forms() {
    let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut json = false;
    assert_eq!(
        set_options(&args(&["--format", "json"]), &mut json),
        Ok(String::new())
    );
    assert!(json);
    assert_eq!(
        set_options(&args(&["--format=text"]), &mut json),
        Ok(String::new())
    );
    assert!(!json);
    assert_eq!(
        set_options(&args(&["--format", "yaml"]), &mut json),
        Err("option format has invalid value yaml".into())
    );
    assert!(set_options(&args(&["--bogus"]), &mut json).is_err());
    assert!(!json);
}
