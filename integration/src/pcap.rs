//! Reader for the classic pcap files that netdev-dummy writes (`options:tx_pcap`).

use std::path::Path;

use crate::error::{io_error, HarnessError, Result};

const GLOBAL_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;
const MAGIC_USEC: u32 = 0xa1b2_c3d4;
const MAGIC_NSEC: u32 = 0xa1b2_3c4d;

/// All complete packets in the file. A missing file is an empty capture (the interface has not
/// sent anything yet); a record still being written at the end is ignored.
pub fn read_packets(path: &Path) -> Result<Vec<Vec<u8>>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(format!("read {}", path.display()))(e)),
    };
    parse(&bytes).map_err(|reason| HarnessError::Pcap {
        path: path.to_owned(),
        reason,
    })
}

/// Parses a pcap capture held in memory.
pub fn parse(bytes: &[u8]) -> std::result::Result<Vec<Vec<u8>>, String> {
    if bytes.len() < GLOBAL_HEADER_LEN {
        return Ok(Vec::new());
    }
    let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
    let read_u32: fn([u8; 4]) -> u32 = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic))
    {
        (MAGIC_USEC | MAGIC_NSEC, _) => u32::from_le_bytes,
        (_, MAGIC_USEC | MAGIC_NSEC) => u32::from_be_bytes,
        _ => return Err(format!("unknown magic {magic:02x?}")),
    };
    let mut packets = Vec::new();
    let mut rest = &bytes[GLOBAL_HEADER_LEN..];
    while rest.len() >= RECORD_HEADER_LEN {
        let incl_len = read_u32([rest[8], rest[9], rest[10], rest[11]]) as usize;
        let Some(data) = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + incl_len) else {
            break;
        };
        packets.push(data.to_vec());
        rest = &rest[RECORD_HEADER_LEN + incl_len..];
    }
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(little_endian: bool, packets: &[&[u8]]) -> Vec<u8> {
        let put = |v: u32| {
            if little_endian {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend(put(MAGIC_USEC));
        out.extend([0u8; 4]); // version: the parser ignores it
        out.extend([0u8; 8]); // thiszone, sigfigs
        out.extend(put(65535));
        out.extend(put(1)); // Ethernet
        for p in packets {
            out.extend(put(1));
            out.extend(put(2));
            out.extend(put(p.len() as u32));
            out.extend(put(p.len() as u32));
            out.extend(*p);
        }
        out
    }

    #[test]
    fn reads_both_byte_orders() {
        for le in [true, false] {
            let bytes = capture(le, &[b"abc", b"", b"defgh"]);
            assert_eq!(
                parse(&bytes).unwrap(),
                vec![b"abc".to_vec(), vec![], b"defgh".to_vec()]
            );
        }
    }

    #[test]
    fn ignores_a_partly_written_last_record() {
        let mut bytes = capture(true, &[b"abc", b"defgh"]);
        bytes.truncate(bytes.len() - 2);
        assert_eq!(parse(&bytes).unwrap(), vec![b"abc".to_vec()]);
    }

    #[test]
    fn rejects_foreign_files() {
        assert!(parse(&[0x7f; 40]).is_err());
        assert_eq!(parse(&[1, 2, 3]).unwrap(), Vec::<Vec<u8>>::new());
    }
}
