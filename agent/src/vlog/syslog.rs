//! Where syslog messages go (`--syslog-method`): `libc` (the default; like glibc's
//! `syslog(3)` we write to the `/dev/log` datagram socket), `unix:FILE`, `udp:IP:PORT` or
//! `null`. Sending never blocks and never fails the caller: syslog is best effort.

use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use super::pattern::format_time;

/// A parsed `--syslog-method`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyslogMethod {
    Libc,
    Unix(PathBuf),
    Udp(String),
    Null,
}

/// Facility OVS uses when none is configured: `openlog(..., LOG_DAEMON)` for libc, and
/// LOG_LOCAL0 in the header it writes itself for the direct methods.
pub const LOG_DAEMON: u32 = 3 << 3;
pub const LOG_LOCAL0: u32 = 16 << 3;

impl SyslogMethod {
    /// Parses the option value; the error text is OVS's.
    pub fn parse(method: &str) -> Result<SyslogMethod, String> {
        if method == "null" {
            Ok(SyslogMethod::Null)
        } else if method == "libc" {
            Ok(SyslogMethod::Libc)
        } else if let Some(path) = method.strip_prefix("unix:") {
            Ok(SyslogMethod::Unix(PathBuf::from(path)))
        } else if let Some(address) = method.strip_prefix("udp:") {
            Ok(SyslogMethod::Udp(address.to_string()))
        } else {
            Err(format!("unsupported syslog method '{method}'"))
        }
    }

    /// The prefix `vlog/list-pattern` shows for this method.
    pub fn prefix(&self) -> &'static str {
        match self {
            SyslogMethod::Null => "",
            _ => "<%B> %D{%h %e %T} %E %A:",
        }
    }
}

enum Socket {
    Unix(UnixDatagram, PathBuf),
    Udp(UdpSocket),
    None,
}

/// An open syslog destination.
pub struct SyslogSink {
    method: SyslogMethod,
    socket: Socket,
}

impl std::fmt::Debug for SyslogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyslogSink")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl SyslogSink {
    pub fn open(method: SyslogMethod) -> SyslogSink {
        let socket = match &method {
            SyslogMethod::Null => Socket::None,
            SyslogMethod::Libc => unix_socket(PathBuf::from("/dev/log")),
            SyslogMethod::Unix(path) => unix_socket(path.clone()),
            SyslogMethod::Udp(address) => UdpSocket::bind("0.0.0.0:0")
                .and_then(|socket| socket.connect(address.as_str()).map(|()| socket))
                .and_then(|socket| socket.set_nonblocking(true).map(|()| socket))
                .map_or(Socket::None, Socket::Udp),
        };
        SyslogSink { method, socket }
    }

    pub fn method(&self) -> &SyslogMethod {
        &self.method
    }

    /// Sends one already formatted message body with the header the method wants.
    /// `facility` is the configured one, 0 if none.
    pub fn send(
        &self,
        facility: u32,
        severity: u32,
        wall_ms: i64,
        hostname: &str,
        program: &str,
        body: &str,
    ) {
        if matches!(self.socket, Socket::None) {
            return;
        }
        let mut datagram = String::with_capacity(body.len() + 64);
        let default_facility = if self.method == SyslogMethod::Libc {
            LOG_DAEMON
        } else {
            LOG_LOCAL0
        };
        let priority = if facility == 0 {
            default_facility
        } else {
            facility
        } + severity;
        datagram.push('<');
        datagram.push_str(&priority.to_string());
        datagram.push('>');
        if self.method != SyslogMethod::Libc {
            datagram.push(' ');
        }
        format_time("%h %e %T", wall_ms, &mut datagram);
        if self.method != SyslogMethod::Libc {
            datagram.push(' ');
            datagram.push_str(hostname);
        }
        datagram.push(' ');
        datagram.push_str(program);
        datagram.push_str(": ");
        datagram.push_str(body);
        // Errors (no syslog daemon, full buffer) are dropped, as glibc's syslog() does.
        let _ = match &self.socket {
            Socket::Unix(socket, path) => socket.send_to(datagram.as_bytes(), path).map(drop),
            Socket::Udp(socket) => socket.send(datagram.as_bytes()).map(drop),
            Socket::None => Ok(()),
        };
    }
}

fn unix_socket(path: PathBuf) -> Socket {
    match UnixDatagram::unbound().and_then(|socket| socket.set_nonblocking(true).map(|()| socket)) {
        Ok(socket) => Socket::Unix(socket, path),
        Err(_) => Socket::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_methods() {
        assert_eq!(SyslogMethod::parse("null"), Ok(SyslogMethod::Null));
        assert_eq!(
            SyslogMethod::parse("unix:/dev/log"),
            Ok(SyslogMethod::Unix("/dev/log".into()))
        );
        assert_eq!(
            SyslogMethod::parse("udp:127.0.0.1:514"),
            Ok(SyslogMethod::Udp("127.0.0.1:514".into()))
        );
        assert_eq!(
            SyslogMethod::parse("journald"),
            Err("unsupported syslog method 'journald'".into())
        );
    }

    #[test]
    fn unix_method_sends_a_datagram_with_ovs_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.sock");
        let receiver = UnixDatagram::bind(&path).unwrap();
        let sink = SyslogSink::open(SyslogMethod::Unix(path));
        sink.send(
            0,
            4,
            1_796_043_669_808,
            "hv1",
            "ovn-controller",
            "ovs|00003|main|WARN|x",
        );
        let mut buf = [0u8; 256];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            "<132> Nov 30 13:01:09 hv1 ovn-controller: ovs|00003|main|WARN|x"
        );
    }
}
