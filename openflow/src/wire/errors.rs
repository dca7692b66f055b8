//! OpenFlow error types and codes (`ofp-errors.h` analogue): names for display, and the
//! error a decode failure maps to when replying to a peer.

use std::fmt;

use super::basic::{ErrorCode, ErrorMsg, NX_VENDOR_ID};
use super::reader::DecodeError;

/// `(type, code, name)` of the standard OF1.5 errors.
#[rustfmt::skip]
const ERRORS: &[(u16, u16, &str)] = &[
    (0, 0, "OFPHFC_INCOMPATIBLE"), (0, 1, "OFPHFC_EPERM"),
    (1, 0, "OFPBRC_BAD_VERSION"), (1, 1, "OFPBRC_BAD_TYPE"), (1, 2, "OFPBRC_BAD_MULTIPART"),
    (1, 3, "OFPBRC_BAD_EXPERIMENTER"), (1, 4, "OFPBRC_BAD_EXP_TYPE"), (1, 5, "OFPBRC_EPERM"),
    (1, 6, "OFPBRC_BAD_LEN"), (1, 7, "OFPBRC_BUFFER_EMPTY"), (1, 8, "OFPBRC_BUFFER_UNKNOWN"),
    (1, 9, "OFPBRC_BAD_TABLE_ID"), (1, 10, "OFPBRC_IS_SLAVE"), (1, 11, "OFPBRC_BAD_PORT"),
    (1, 12, "OFPBRC_BAD_PACKET"), (1, 13, "OFPBRC_MULTIPART_BUFFER_OVERFLOW"),
    (2, 0, "OFPBAC_BAD_TYPE"), (2, 1, "OFPBAC_BAD_LEN"), (2, 2, "OFPBAC_BAD_EXPERIMENTER"),
    (2, 3, "OFPBAC_BAD_EXP_TYPE"), (2, 4, "OFPBAC_BAD_OUT_PORT"), (2, 5, "OFPBAC_BAD_ARGUMENT"),
    (2, 6, "OFPBAC_EPERM"), (2, 7, "OFPBAC_TOO_MANY"), (2, 8, "OFPBAC_BAD_QUEUE"),
    (2, 9, "OFPBAC_BAD_OUT_GROUP"), (2, 10, "OFPBAC_MATCH_INCONSISTENT"),
    (2, 11, "OFPBAC_UNSUPPORTED_ORDER"), (2, 12, "OFPBAC_BAD_TAG"), (2, 13, "OFPBAC_BAD_SET_TYPE"),
    (2, 14, "OFPBAC_BAD_SET_LEN"), (2, 15, "OFPBAC_BAD_SET_ARGUMENT"),
    (3, 0, "OFPBIC_UNKNOWN_INST"), (3, 1, "OFPBIC_UNSUP_INST"), (3, 2, "OFPBIC_BAD_TABLE_ID"),
    (3, 3, "OFPBIC_UNSUP_METADATA"), (3, 4, "OFPBIC_UNSUP_METADATA_MASK"),
    (3, 5, "OFPBIC_BAD_EXPERIMENTER"), (3, 6, "OFPBIC_BAD_EXP_TYPE"), (3, 7, "OFPBIC_BAD_LEN"),
    (3, 8, "OFPBIC_EPERM"),
    (4, 0, "OFPBMC_BAD_TYPE"), (4, 1, "OFPBMC_BAD_LEN"), (4, 2, "OFPBMC_BAD_TAG"),
    (4, 3, "OFPBMC_BAD_DL_ADDR_MASK"), (4, 4, "OFPBMC_BAD_NW_ADDR_MASK"),
    (4, 5, "OFPBMC_BAD_WILDCARDS"), (4, 6, "OFPBMC_BAD_FIELD"), (4, 7, "OFPBMC_BAD_VALUE"),
    (4, 8, "OFPBMC_BAD_MASK"), (4, 9, "OFPBMC_BAD_PREREQ"), (4, 10, "OFPBMC_DUP_FIELD"),
    (4, 11, "OFPBMC_EPERM"),
    (5, 0, "OFPFMFC_UNKNOWN"), (5, 1, "OFPFMFC_TABLE_FULL"), (5, 2, "OFPFMFC_BAD_TABLE_ID"),
    (5, 3, "OFPFMFC_OVERLAP"), (5, 4, "OFPFMFC_EPERM"), (5, 5, "OFPFMFC_BAD_TIMEOUT"),
    (5, 6, "OFPFMFC_BAD_COMMAND"), (5, 7, "OFPFMFC_BAD_FLAGS"), (5, 8, "OFPFMFC_CANT_SYNC"),
    (5, 9, "OFPFMFC_BAD_PRIORITY"), (5, 10, "OFPFMFC_IS_SYNC"),
    (6, 0, "OFPGMFC_GROUP_EXISTS"), (6, 1, "OFPGMFC_INVALID_GROUP"),
    (6, 2, "OFPGMFC_WEIGHT_UNSUPPORTED"), (6, 3, "OFPGMFC_OUT_OF_GROUPS"),
    (6, 4, "OFPGMFC_OUT_OF_BUCKETS"), (6, 5, "OFPGMFC_CHAINING_UNSUPPORTED"),
    (6, 6, "OFPGMFC_WATCH_UNSUPPORTED"), (6, 7, "OFPGMFC_LOOP"), (6, 8, "OFPGMFC_UNKNOWN_GROUP"),
    (6, 9, "OFPGMFC_CHAINED_GROUP"), (6, 10, "OFPGMFC_BAD_TYPE"), (6, 11, "OFPGMFC_BAD_COMMAND"),
    (6, 12, "OFPGMFC_BAD_BUCKET"), (6, 13, "OFPGMFC_BAD_WATCH"), (6, 14, "OFPGMFC_EPERM"),
    (6, 15, "OFPGMFC_UNKNOWN_BUCKET"), (6, 16, "OFPGMFC_BUCKET_EXISTS"),
    (7, 0, "OFPPMFC_BAD_PORT"), (7, 1, "OFPPMFC_BAD_HW_ADDR"), (7, 2, "OFPPMFC_BAD_CONFIG"),
    (7, 3, "OFPPMFC_BAD_ADVERTISE"), (7, 4, "OFPPMFC_EPERM"),
    (8, 0, "OFPTMFC_BAD_TABLE"), (8, 1, "OFPTMFC_BAD_CONFIG"), (8, 2, "OFPTMFC_EPERM"),
    (10, 0, "OFPSCFC_BAD_FLAGS"), (10, 1, "OFPSCFC_BAD_LEN"), (10, 2, "OFPSCFC_EPERM"),
    (11, 0, "OFPRRFC_STALE"), (11, 1, "OFPRRFC_UNSUP"), (11, 2, "OFPRRFC_BAD_ROLE"),
    (12, 0, "OFPMMFC_UNKNOWN"), (12, 1, "OFPMMFC_METER_EXISTS"), (12, 2, "OFPMMFC_INVALID_METER"),
    (12, 3, "OFPMMFC_UNKNOWN_METER"), (12, 4, "OFPMMFC_BAD_COMMAND"), (12, 5, "OFPMMFC_BAD_FLAGS"),
    (12, 6, "OFPMMFC_BAD_RATE"), (12, 7, "OFPMMFC_BAD_BURST"), (12, 8, "OFPMMFC_BAD_BAND"),
    (12, 9, "OFPMMFC_BAD_BAND_VALUE"), (12, 10, "OFPMMFC_OUT_OF_METERS"),
    (12, 11, "OFPMMFC_OUT_OF_BANDS"),
    (14, 0, "OFPBPC_BAD_TYPE"), (14, 1, "OFPBPC_BAD_LEN"), (14, 2, "OFPBPC_BAD_VALUE"),
    (14, 3, "OFPBPC_TOO_MANY"), (14, 4, "OFPBPC_DUP_TYPE"), (14, 5, "OFPBPC_BAD_EXPERIMENTER"),
    (14, 6, "OFPBPC_BAD_EXP_TYPE"), (14, 7, "OFPBPC_BAD_EXP_VALUE"), (14, 8, "OFPBPC_EPERM"),
    (17, 0, "OFPBFC_UNKNOWN"), (17, 1, "OFPBFC_EPERM"), (17, 2, "OFPBFC_BAD_ID"),
    (17, 3, "OFPBFC_BUNDLE_EXIST"), (17, 4, "OFPBFC_BUNDLE_CLOSED"),
    (17, 5, "OFPBFC_OUT_OF_BUNDLES"), (17, 6, "OFPBFC_BAD_TYPE"), (17, 7, "OFPBFC_BAD_FLAGS"),
    (17, 8, "OFPBFC_MSG_BAD_LEN"), (17, 9, "OFPBFC_MSG_BAD_XID"), (17, 10, "OFPBFC_MSG_UNSUP"),
    (17, 11, "OFPBFC_MSG_CONFLICT"), (17, 12, "OFPBFC_MSG_TOO_MANY"),
    (17, 13, "OFPBFC_MSG_FAILED"), (17, 14, "OFPBFC_TIMEOUT"),
    (17, 15, "OFPBFC_BUNDLE_IN_PROGRESS"),
];

/// Standard error constants used by this crate.
pub const OFPBRC_BAD_TYPE: ErrorCode = ErrorCode::Standard { ty: 1, code: 1 };
pub const OFPBRC_BAD_LEN: ErrorCode = ErrorCode::Standard { ty: 1, code: 6 };

impl ErrorCode {
    /// The OpenFlow name, e.g. `OFPBMC_BAD_PREREQ`, if known.
    pub fn name(self) -> Option<&'static str> {
        match self {
            ErrorCode::Standard { ty, code } => ERRORS
                .iter()
                .find(|(t, c, _)| *t == ty && *c == code)
                .map(|(_, _, n)| *n),
            ErrorCode::Experimenter { .. } => None,
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        ERRORS
            .iter()
            .find(|(_, _, n)| *n == name)
            .map(|(ty, code, _)| ErrorCode::Standard {
                ty: *ty,
                code: *code,
            })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self) {
            (Some(n), _) => f.write_str(n),
            (None, ErrorCode::Standard { ty, code }) => write!(f, "OFPET_{ty}/{code}"),
            (
                None,
                ErrorCode::Experimenter {
                    exp_code,
                    experimenter,
                },
            ) => {
                if *experimenter == NX_VENDOR_ID {
                    write!(f, "NXERR_{exp_code}")
                } else {
                    write!(f, "experimenter {experimenter:#x} code {exp_code}")
                }
            }
        }
    }
}

impl fmt::Display for ErrorMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        // The data usually starts with the offending request's header.
        if self.data.len() >= 8 {
            write!(
                f,
                " (request type {}, xid {:#x})",
                self.data[1],
                u32::from_be_bytes([self.data[4], self.data[5], self.data[6], self.data[7]])
            )?;
        }
        Ok(())
    }
}

impl DecodeError {
    /// The error to send back to a peer whose message failed to decode.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            DecodeError::BadValue { .. } => OFPBRC_BAD_TYPE,
            _ => OFPBRC_BAD_LEN,
        }
    }

    /// An `OFPT_ERROR` for the peer: the code and up to 64 bytes of the offending message.
    pub fn to_error_msg(&self, offending: &[u8]) -> ErrorMsg {
        ErrorMsg {
            code: self.error_code(),
            data: offending[..offending.len().min(64)].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_display() {
        for (ty, code, name) in ERRORS {
            let c = ErrorCode::Standard {
                ty: *ty,
                code: *code,
            };
            assert_eq!(c.name(), Some(*name));
            assert_eq!(ErrorCode::from_name(name), Some(c));
        }
        let e = ErrorMsg {
            code: ErrorCode::Standard { ty: 12, code: 2 },
            data: vec![6, 34, 0, 120, 0, 0, 3, 29],
        };
        assert_eq!(
            e.to_string(),
            "OFPMMFC_INVALID_METER (request type 34, xid 0x31d)"
        );
        let d = DecodeError::Truncated {
            what: "x",
            need: 4,
            have: 1,
        };
        assert_eq!(d.to_error_msg(&[6, 14]).code, OFPBRC_BAD_LEN);
    }
}
