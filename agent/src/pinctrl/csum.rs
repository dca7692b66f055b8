//! The Internet checksum (RFC 1071) of the packets pinctrl checks and builds.

/// `sum` plus the 16-bit big-endian words of `data` (an odd last byte padded with zero),
/// not folded.
pub fn sum16(data: &[u8], mut sum: u32) -> u32 {
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    sum
}

/// `sum` folded to 16 bits and inverted: the checksum field's value (0 when a received
/// packet's sum, checksum included, is right).
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
