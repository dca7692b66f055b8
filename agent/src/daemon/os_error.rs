//! OS error texts as OVS prints them (`ovs_strerror()`: "No such file or directory"),
//! without the " (os error 2)" that `std::io::Error` adds.

use std::fmt;
use std::io;

/// Displays an I/O error the way C's `strerror()` words it.
pub struct Strerror<'a>(pub &'a io::Error);

impl fmt::Display for Strerror<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.raw_os_error() {
            Some(code) => f.write_str(nix::errno::Errno::from_raw(code).desc()),
            None => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_like_strerror() {
        let error = io::Error::from_raw_os_error(2);
        assert_eq!(Strerror(&error).to_string(), "No such file or directory");
        let custom = io::Error::other("custom");
        assert_eq!(Strerror(&custom).to_string(), "custom");
    }
}
