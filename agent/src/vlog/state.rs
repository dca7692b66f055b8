//! The shared logging state: levels per module and destination, patterns, the log file,
//! syslog, and the commands `vlog/*` run against it.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::level::{Destination, Level};
use super::modules::{module_index, MODULES};
use super::pattern::{format_record, Record};
use super::spec::{parse_spec, Spec};
use super::syslog::{SyslogMethod, SyslogSink};
use crate::daemon::os_error::Strerror;

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VlogError {
    #[error("failed to open {path} for logging: {}", Strerror(source))]
    OpenLogFile {
        path: String,
        source: std::io::Error,
    },
    #[error("processing \"{spec}\": {message}")]
    Spec { spec: String, message: String },
    #[error("{0}")]
    SyslogMethod(String),
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// Where console lines go: stderr, or a buffer (tests).
#[derive(Clone, Debug, Default)]
pub enum Console {
    #[default]
    Stderr,
    Buffer(Arc<Mutex<Vec<u8>>>),
}

/// Wall clock source: the system clock, or a fixed instant (tests, golden lines).
#[derive(Clone, Copy, Debug, Default)]
pub enum Clock {
    #[default]
    System,
    FixedMs(i64),
}

impl Clock {
    fn now_ms(self) -> i64 {
        match self {
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            Clock::FixedMs(ms) => ms,
        }
    }
}

/// How to build a [`Vlog`]. Levels start at OVS's default (info everywhere).
#[derive(Clone, Debug, Default)]
pub struct VlogOptions {
    /// `%A`, and the syslog tag.
    pub program: String,
    pub syslog_method: Option<SyslogMethod>,
    pub console: Console,
    pub clock: Clock,
}

struct LogFile {
    path: PathBuf,
    /// `None` after `vlog/close`; `vlog/reopen` opens `path` again.
    file: Option<File>,
}

struct Inner {
    program: String,
    pid: u32,
    hostname: String,
    started: Instant,
    clock: Clock,
    console: Mutex<Console>,
    /// `levels[module][destination]` as `Level as u8`.
    levels: Vec<[AtomicU8; 3]>,
    /// The most verbose level any destination that can print takes for the module.
    min_level: Vec<AtomicU8>,
    honor_rate_limits: Vec<AtomicBool>,
    patterns: RwLock<[String; 3]>,
    file: Mutex<Option<LogFile>>,
    syslog: SyslogSink,
    facility: AtomicU32,
    sequence: AtomicU32,
}

/// Handle to the logging state; clones share it.
#[derive(Clone)]
pub struct Vlog {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Vlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vlog")
            .field("program", &self.inner.program)
            .finish_non_exhaustive()
    }
}

thread_local! {
    static SUBPROGRAM: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Names the current thread in log lines (`%T` prints `(name)`), as OVS's
/// `set_subprogram_name()` does for its pinctrl and statctrl threads.
pub fn set_subprogram_name(name: &str) {
    SUBPROGRAM.with(|cell| name.clone_into(&mut cell.borrow_mut()));
}

fn read_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

impl Vlog {
    pub fn new(options: VlogOptions) -> Vlog {
        let syslog = SyslogSink::open(options.syslog_method.unwrap_or(SyslogMethod::Libc));
        let default_level = Level::Info as u8;
        let inner = Inner {
            program: options.program,
            pid: std::process::id(),
            hostname: read_hostname(),
            started: Instant::now(),
            clock: options.clock,
            console: Mutex::new(options.console),
            levels: MODULES
                .iter()
                .map(|_| std::array::from_fn(|_| AtomicU8::new(default_level)))
                .collect(),
            min_level: MODULES
                .iter()
                .map(|_| AtomicU8::new(default_level))
                .collect(),
            honor_rate_limits: MODULES.iter().map(|_| AtomicBool::new(true)).collect(),
            patterns: RwLock::new(Destination::ALL.map(|d| d.default_pattern().to_string())),
            file: Mutex::new(None),
            syslog,
            facility: AtomicU32::new(0),
            sequence: AtomicU32::new(0),
        };
        let vlog = Vlog {
            inner: Arc::new(inner),
        };
        vlog.update_min_levels();
        vlog
    }

    pub fn program(&self) -> &str {
        &self.inner.program
    }

    /// Applies one `-v`/`vlog/set` spec; the error is OVS's message.
    pub fn apply_spec(&self, spec: &str) -> Result<(), String> {
        match parse_spec(spec, module_index).map_err(|e| e.0)? {
            Spec::Levels {
                module,
                destination,
                level,
            } => self.set_levels(module, destination, level),
            Spec::Pattern {
                destination,
                pattern,
            } => {
                let mut patterns = write_lock(&self.inner.patterns);
                for d in destinations(destination) {
                    patterns[d.index()].clone_from(&pattern);
                }
            }
            Spec::Facility(value) => self.inner.facility.store(value, Ordering::Relaxed),
        }
        Ok(())
    }

    /// Applies the `-v` options in order (a bare `-v` is the empty spec: dbg everywhere).
    pub fn apply_specs<'a>(
        &self,
        specs: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), VlogError> {
        for spec in specs {
            self.apply_spec(spec).map_err(|message| VlogError::Spec {
                spec: spec.to_string(),
                message,
            })?;
        }
        Ok(())
    }

    /// Sets `level` for one module (or all) on one destination (or all).
    pub fn set_levels(
        &self,
        module: Option<usize>,
        destination: Option<Destination>,
        level: Level,
    ) {
        let modules = match module {
            Some(index) => index..index + 1,
            None => 0..MODULES.len(),
        };
        for index in modules {
            for d in destinations(destination) {
                self.inner.levels[index][d.index()].store(level as u8, Ordering::Relaxed);
            }
        }
        self.update_min_levels();
    }

    pub fn level(&self, module: usize, destination: Destination) -> Level {
        self.inner.levels.get(module).map_or(Level::Off, |levels| {
            Level::from_u8(levels[destination.index()].load(Ordering::Relaxed))
        })
    }

    /// Console off, as OVS does once a detached daemon has closed its standard streams.
    pub fn disable_console(&self) {
        self.set_levels(None, Some(Destination::Console), Level::Off);
    }

    fn file_is_open(&self) -> bool {
        lock(&self.inner.file)
            .as_ref()
            .is_some_and(|f| f.file.is_some())
    }

    fn update_min_levels(&self) {
        let file_open = self.file_is_open();
        for (index, levels) in self.inner.levels.iter().enumerate() {
            let min = Destination::ALL
                .into_iter()
                .filter(|d| file_open || *d != Destination::File)
                .map(|d| levels[d.index()].load(Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            self.inner.min_level[index].store(min, Ordering::Relaxed);
        }
    }

    /// True if a message of `level` from `module` would be printed somewhere.
    pub fn enabled(&self, module: usize, level: Level) -> bool {
        level != Level::Off
            && self
                .inner
                .min_level
                .get(module)
                .is_some_and(|min| min.load(Ordering::Relaxed) >= level as u8)
    }

    pub fn rate_limits_honored(&self, module: usize) -> bool {
        self.inner
            .honor_rate_limits
            .get(module)
            .is_none_or(|flag| flag.load(Ordering::Relaxed))
    }

    /// Formats and writes one message to every destination whose level allows it.
    pub fn log(&self, module: usize, level: Level, message: &str) {
        if !self.enabled(module, level) {
            return;
        }
        let Some(module_name) = MODULES.get(module) else {
            return;
        };
        let sequence = self
            .inner
            .sequence
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        let wall_ms = self.inner.clock.now_ms();
        let uptime_ms = i64::try_from(self.inner.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let facility = self.inner.facility.load(Ordering::Relaxed);
        SUBPROGRAM.with(|subprogram| {
            let subprogram = subprogram.borrow();
            let record = Record {
                module: module_name,
                level,
                sequence,
                wall_ms,
                uptime_ms,
                message,
                program: &self.inner.program,
                pid: self.inner.pid,
                hostname: &self.inner.hostname,
                subprogram: &subprogram,
                facility: if facility == 0 {
                    super::syslog::LOG_LOCAL0
                } else {
                    facility
                },
            };
            let patterns = read_lock(&self.inner.patterns);
            let mut line = String::with_capacity(128 + message.len());
            if self.level(module, Destination::Console) >= level {
                format_record(&patterns[Destination::Console.index()], &record, &mut line);
                line.push('\n');
                self.write_console(line.as_bytes());
            }
            if self.level(module, Destination::Syslog) >= level {
                line.clear();
                format_record(&patterns[Destination::Syslog.index()], &record, &mut line);
                for part in line.split('\n').filter(|part| !part.is_empty()) {
                    self.inner.syslog.send(
                        facility,
                        level.syslog_severity(),
                        wall_ms,
                        &self.inner.hostname,
                        &self.inner.program,
                        part,
                    );
                }
            }
            if self.level(module, Destination::File) >= level {
                line.clear();
                format_record(&patterns[Destination::File.index()], &record, &mut line);
                line.push('\n');
                if let Some(LogFile {
                    file: Some(file), ..
                }) = lock(&self.inner.file).as_mut()
                {
                    // One write per line with O_APPEND, so concurrent writers never interleave.
                    let _ = file.write_all(line.as_bytes());
                }
            }
        });
    }

    fn write_console(&self, bytes: &[u8]) {
        match &*lock(&self.inner.console) {
            Console::Stderr => {
                let _ = std::io::stderr().lock().write_all(bytes);
            }
            Console::Buffer(buffer) => lock(buffer).extend_from_slice(bytes),
        }
    }

    fn vlog_module() -> usize {
        module_index("vlog").unwrap_or(0)
    }

    /// Logs to `path` from now on (`--log-file`), as `vlog_set_log_file()`: nothing happens
    /// if it is the file already open; otherwise "closing log file" goes to the old file and
    /// "opened log file PATH" to the new one.
    pub fn set_log_file(&self, path: &Path) -> Result<(), VlogError> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o660)
            .open(path);
        let file = match file {
            Ok(file) => file,
            Err(source) => {
                let error = VlogError::OpenLogFile {
                    path: path.display().to_string(),
                    source,
                };
                self.log(Self::vlog_module(), Level::Warn, &error.to_string());
                return Err(error);
            }
        };
        let same_file = {
            let current = lock(&self.inner.file);
            match (
                current.as_ref().and_then(|f| f.file.as_ref()),
                file.metadata(),
            ) {
                (Some(open), Ok(new)) => open
                    .metadata()
                    .is_ok_and(|old| old.dev() == new.dev() && old.ino() == new.ino()),
                _ => false,
            }
        };
        if same_file {
            return Ok(());
        }
        if self.file_is_open() {
            self.log(Self::vlog_module(), Level::Info, "closing log file");
        }
        *lock(&self.inner.file) = Some(LogFile {
            path: path.to_path_buf(),
            file: Some(file),
        });
        self.update_min_levels();
        self.log(
            Self::vlog_module(),
            Level::Info,
            &format!("opened log file {}", path.display()),
        );
        Ok(())
    }

    /// The configured log file name, open or closed.
    pub fn log_file(&self) -> Option<PathBuf> {
        lock(&self.inner.file).as_ref().map(|f| f.path.clone())
    }

    /// `vlog/reopen`: for logrotate, which renames the file and then asks for this.
    pub fn reopen(&self) -> Result<(), String> {
        let Some(path) = self.log_file() else {
            return Err("Logging to file not configured".into());
        };
        self.set_log_file(&path).map_err(|error| match error {
            VlogError::OpenLogFile { source, .. } => Strerror(&source).to_string(),
            other => other.to_string(),
        })
    }

    /// `vlog/close`: closes the file but remembers its name for `vlog/reopen`.
    pub fn close_file(&self) {
        if let Some(log_file) = lock(&self.inner.file).as_mut() {
            log_file.file = None;
        }
        self.update_min_levels();
    }

    /// `vlog/list`.
    pub fn list(&self) -> String {
        let mut out = String::from(
            "                 console    syslog    file\n                 -------    ------    ------\n",
        );
        let mut lines: Vec<String> = MODULES
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let mut line = format!(
                    "{name:<16}  {:>4}       {:>4}       {:>4}",
                    self.level(index, Destination::Console).name(),
                    self.level(index, Destination::Syslog).name(),
                    self.level(index, Destination::File).name()
                );
                if !self.rate_limits_honored(index) {
                    line.push_str("    (rate limiting disabled)");
                }
                line.push('\n');
                line
            })
            .collect();
        lines.sort();
        for line in lines {
            out.push_str(&line);
        }
        out
    }

    /// `vlog/list-pattern`.
    pub fn list_patterns(&self) -> String {
        let patterns = read_lock(&self.inner.patterns);
        let mut out = String::from(
            "         prefix                            format\n         ------                            ------\n",
        );
        for d in Destination::ALL {
            let prefix = if d == Destination::Syslog {
                self.inner.syslog.method().prefix()
            } else {
                "none"
            };
            let _ = writeln!(
                out,
                "{:<7}  {prefix:<32}  {}",
                d.name(),
                patterns[d.index()]
            );
        }
        out
    }

    /// `vlog/enable-rate-limit` and `vlog/disable-rate-limit`: no argument or `any` means
    /// every module.
    pub fn set_rate_limits(&self, modules: &[String], enable: bool) -> Result<(), String> {
        let set_all = || {
            for flag in &self.inner.honor_rate_limits {
                flag.store(enable, Ordering::Relaxed);
            }
        };
        if modules.is_empty() {
            set_all();
        }
        for name in modules {
            if name.eq_ignore_ascii_case("ANY") {
                set_all();
            } else {
                let index = module_index(name).ok_or_else(|| "unknown module".to_string())?;
                self.inner.honor_rate_limits[index].store(enable, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

fn destinations(destination: Option<Destination>) -> Vec<Destination> {
    destination.map_or_else(|| Destination::ALL.to_vec(), |d| vec![d])
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
