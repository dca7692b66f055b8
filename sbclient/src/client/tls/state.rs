//! The SSL configuration a client connects with, reloaded when its settings or
//! the contents of its files change (certificate rotation needs no restart).

use std::path::Path;
use std::time::SystemTime;

use super::{connector, Connector, TlsError, TlsSettings};

/// What a file looks like on disk: a new inode, size or mtime means new contents.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileStamp {
    Missing,
    Unreadable(String),
    Present {
        len: u64,
        mtime: SystemTime,
        ino: u64,
    },
}

fn file_stamp(path: Option<&Path>) -> FileStamp {
    use std::os::unix::fs::MetadataExt;
    match path.map(std::fs::metadata) {
        None => FileStamp::Missing,
        Some(Ok(m)) => FileStamp::Present {
            len: m.len(),
            mtime: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            ino: m.ino(),
        },
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => FileStamp::Missing,
        Some(Err(e)) => FileStamp::Unreadable(e.kind().to_string()),
    }
}

/// The settings and the state of their three files.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    settings: TlsSettings,
    files: [FileStamp; 3],
}

fn stamp(settings: &TlsSettings) -> Stamp {
    Stamp {
        settings: settings.clone(),
        files: [
            file_stamp(settings.private_key.as_deref()),
            file_stamp(settings.certificate.as_deref()),
            file_stamp(settings.ca_cert.as_deref()),
        ],
    }
}

/// The client's SSL configuration and the connector built from it.
#[derive(Debug, Default)]
pub(crate) struct TlsState {
    settings: Option<TlsSettings>,
    built: Option<(Stamp, Result<Connector, TlsError>)>,
    /// What the current connection was made with.
    in_use: Option<Stamp>,
    /// The last error logged, so that a failure repeated at every attempt is logged once.
    last_logged: Option<TlsError>,
}

impl TlsState {
    pub(crate) fn new(settings: Option<TlsSettings>) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    /// Replaces the settings; true if they differ from the old ones.
    pub(crate) fn set(&mut self, settings: Option<TlsSettings>) -> bool {
        if self.settings == settings {
            return false;
        }
        self.settings = settings;
        true
    }

    /// The connector for a new connection, rebuilt if the settings or a file changed.
    pub(crate) fn connector(&mut self) -> Result<Connector, TlsError> {
        let Some(settings) = self.settings.as_ref() else {
            self.in_use = None;
            return Err(TlsError::NotConfigured(
                "private key, certificate and CA certificate",
            ));
        };
        let now = stamp(settings);
        self.in_use = Some(now.clone());
        match &mut self.built {
            Some((built_with, result)) if *built_with == now => result.clone(),
            slot => slot.insert((now, connector(settings))).1.clone(),
        }
    }

    /// True if the settings or a file changed since the current connection was made.
    pub(crate) fn changed_since_connect(&self) -> bool {
        match (&self.in_use, &self.settings) {
            (Some(used), Some(settings)) => *used != stamp(settings),
            (None, None) => false,
            _ => true,
        }
    }

    /// True if `error` should be logged: it differs from the last one logged.
    pub(crate) fn first_report(&mut self, error: &TlsError) -> bool {
        if self.last_logged.as_ref() == Some(error) {
            return false;
        }
        self.last_logged = Some(error.clone());
        true
    }

    /// A connection succeeded: a later failure is news again.
    pub(crate) fn connected(&mut self) {
        self.last_logged = None;
    }
}
