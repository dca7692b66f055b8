//! Log levels and destinations, named and ordered as OVS vlog names them.

/// A vlog level. A destination set to level L prints messages of level L and of every
/// more severe level (lower value); `Off` prints nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    Off = 0,
    Emer = 1,
    Err = 2,
    Warn = 3,
    Info = 4,
    Dbg = 5,
}

impl Level {
    pub const ALL: [Level; 6] = [
        Level::Off,
        Level::Emer,
        Level::Err,
        Level::Warn,
        Level::Info,
        Level::Dbg,
    ];

    /// The name OVS prints (`%p`, `vlog/list`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Off => "OFF",
            Level::Emer => "EMER",
            Level::Err => "ERR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Dbg => "DBG",
        }
    }

    /// Case-insensitive lookup, as in `-vfile:info` or `vlog/set DBG`.
    pub fn from_name(name: &str) -> Option<Level> {
        Level::ALL
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(name))
    }

    pub(crate) fn from_u8(value: u8) -> Level {
        Level::ALL
            .get(usize::from(value))
            .copied()
            .unwrap_or(Level::Off)
    }

    /// The syslog severity OVS sends for this level (emer is sent as LOG_ALERT and info as
    /// LOG_NOTICE, as `VLOG_LEVELS` defines them).
    pub fn syslog_severity(self) -> u32 {
        match self {
            Level::Off | Level::Emer => 1,
            Level::Err => 3,
            Level::Warn => 4,
            Level::Info => 5,
            Level::Dbg => 7,
        }
    }
}

/// Where log lines go. The order is OVS's (`vlog/list-pattern` prints them in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Destination {
    Syslog = 0,
    Console = 1,
    File = 2,
}

impl Destination {
    pub const ALL: [Destination; 3] =
        [Destination::Syslog, Destination::Console, Destination::File];

    pub fn name(self) -> &'static str {
        match self {
            Destination::Syslog => "SYSLOG",
            Destination::Console => "CONSOLE",
            Destination::File => "FILE",
        }
    }

    pub fn from_name(name: &str) -> Option<Destination> {
        Destination::ALL
            .into_iter()
            .find(|destination| destination.name().eq_ignore_ascii_case(name))
    }

    /// OVS's default pattern for the destination (`VLOG_DESTINATIONS`).
    pub fn default_pattern(self) -> &'static str {
        match self {
            Destination::Syslog => "ovs|%05N|%c%T|%p|%m",
            Destination::Console => "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m",
            Destination::File => "%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Level::from_name("dbg"), Some(Level::Dbg));
        assert_eq!(Level::from_name("EMER"), Some(Level::Emer));
        assert_eq!(Level::from_name("debug"), None);
        assert_eq!(Destination::from_name("File"), Some(Destination::File));
        assert_eq!(Destination::from_name("stderr"), None);
        assert!(Level::Dbg > Level::Info && Level::Emer > Level::Off);
        assert_eq!(Level::from_u8(9), Level::Off);
    }
}
