//! Wire codec for OpenFlow 1.5 messages. No I/O; decoders never panic.
//!
//! The `messages!` table below is the single list of supported messages: it generates
//! [`MessageKind`], [`Message`], the decode dispatch and the encoder.

pub mod basic;
pub mod bundle;
pub mod ct_flush;
pub mod encode;
pub mod errors;
pub mod flow_mod;
pub mod group_mod;
pub mod header;
pub mod instruction;
pub mod meter_mod;
pub mod multipart;
pub mod nx;
pub mod packet_out;
pub mod reader;

use bytes::{BufMut, BytesMut};

pub use basic::{
    Echo, Empty, ErrorCode, ErrorMsg, FeaturesReply, Hello, HelloElem, PortStatus, RoleRequest,
    SwitchConfig, NX_VENDOR_ID, ONF_VENDOR_ID,
};
pub use bundle::{BundleAddMessage, BundleBuilder, BundleControl};
pub use ct_flush::{CtFlush, CtTuple};
pub use encode::{EncodeError, MAX_MESSAGE_LEN};
pub use flow_mod::FlowMod;
pub use group_mod::{Bucket, Group, GroupMod};
pub use header::{frame_len, Header, HEADER_LEN, OFP15_VERSION};
pub use instruction::Instruction;
pub use meter_mod::{MeterBand, MeterMod};
pub use multipart::{
    FlowDesc, FlowStatsRequest, MeterConfig, MeterFeatures, MultipartReply, MultipartReplyBody,
    MultipartRequest, MultipartRequestBody,
};
pub use nx::{
    CtFlushZone, PacketIn2, PacketInProp, SetPacketInFormat, TlvMap, TlvTableMod, TlvTableReply,
};
pub use packet_out::PacketOut;
pub use reader::{DecodeError, Reader};

/// One decode/encode pair per message body (the bytes after the header, and after the
/// experimenter id and subtype for vendor messages).
pub trait Wire: Sized {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError>;
    /// Append the body to `out`. A length that does not fit its field is an error; `out` may
    /// then hold part of the body ([`OfpMessage::encode`] removes it).
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError>;
}

const OFPT_EXPERIMENTER: u8 = 4;

macro_rules! messages {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty) = $space:ident($code:literal), )*) => {
        /// Which message a [`Message`] is.
        #[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
        #[non_exhaustive]
        pub enum MessageKind { $($variant,)* Unknown }

        /// A decoded OpenFlow message body.
        #[derive(Clone, Debug, Eq, PartialEq)]
        #[non_exhaustive]
        pub enum Message {
            $( $(#[$doc])* $variant($ty), )*
            /// A message this table does not know, kept verbatim.
            Unknown { ty: u8, experimenter: Option<(u32, u32)>, body: Vec<u8> },
        }

        impl Message {
            pub fn kind(&self) -> MessageKind {
                match self {
                    $( Message::$variant(_) => MessageKind::$variant, )*
                    Message::Unknown { .. } => MessageKind::Unknown,
                }
            }

            /// `(ofp type, Some((experimenter, subtype)))` on the wire.
            pub(crate) fn code(&self) -> (u8, Option<(u32, u32)>) {
                match self {
                    $( Message::$variant(_) => messages!(@code $space $code), )*
                    Message::Unknown { ty, experimenter, .. } => (*ty, *experimenter),
                }
            }

            /// Append the whole OpenFlow 1.5 message (header with `xid`, then this body) to
            /// `out`, as [`OfpMessage::encode`] does, without building an [`OfpMessage`].
            pub fn encode(&self, xid: u32, out: &mut BytesMut) -> Result<(), EncodeError> {
                encode_message(OFP15_VERSION, xid, self, out)
            }

            fn decode_body(ty: u8, exp: Option<(u32, u32)>, body: &[u8]) -> Result<Self, DecodeError> {
                $( if (ty, exp) == messages!(@code $space $code) {
                    return Ok(Message::$variant(<$ty as Wire>::decode(body)?));
                } )*
                Ok(Message::Unknown { ty, experimenter: exp, body: body.to_vec() })
            }

            fn encode_body(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
                match self {
                    $( Message::$variant(m) => m.encode(out), )*
                    Message::Unknown { body, .. } => {
                        out.put_slice(body);
                        Ok(())
                    }
                }
            }
        }

        impl std::fmt::Display for MessageKind {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    $( MessageKind::$variant => f.write_str(stringify!($variant)), )*
                    MessageKind::Unknown => f.write_str("Unknown"),
                }
            }
        }
    };
    (@code OFPT $code:literal) => { ($code, None) };
    (@code NXT $code:literal) => { (OFPT_EXPERIMENTER, Some((NX_VENDOR_ID, $code))) };
}

messages! {
    Hello(Hello) = OFPT(0),
    Error(ErrorMsg) = OFPT(1),
    EchoRequest(Echo) = OFPT(2),
    EchoReply(Echo) = OFPT(3),
    FeaturesRequest(Empty) = OFPT(5),
    FeaturesReply(FeaturesReply) = OFPT(6),
    GetConfigRequest(Empty) = OFPT(7),
    GetConfigReply(SwitchConfig) = OFPT(8),
    SetConfig(SwitchConfig) = OFPT(9),
    PortStatus(PortStatus) = OFPT(12),
    PacketOut(PacketOut) = OFPT(13),
    FlowMod(FlowMod) = OFPT(14),
    GroupMod(GroupMod) = OFPT(15),
    MultipartRequest(MultipartRequest) = OFPT(18),
    MultipartReply(MultipartReply) = OFPT(19),
    BarrierRequest(Empty) = OFPT(20),
    BarrierReply(Empty) = OFPT(21),
    RoleRequest(RoleRequest) = OFPT(24),
    RoleReply(RoleRequest) = OFPT(25),
    MeterMod(MeterMod) = OFPT(29),
    BundleControl(BundleControl) = OFPT(33),
    BundleAddMessage(BundleAddMessage) = OFPT(34),
    SetPacketInFormat(SetPacketInFormat) = NXT(16),
    TlvTableMod(TlvTableMod) = NXT(24),
    TlvTableRequest(Empty) = NXT(25),
    TlvTableReply(TlvTableReply) = NXT(26),
    Resume(PacketIn2) = NXT(28),
    CtFlushZone(CtFlushZone) = NXT(29),
    CtFlush(CtFlush) = NXT(32),
    PacketIn2(PacketIn2) = NXT(30),
}

/// A whole message: version, xid and body.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct OfpMessage {
    pub version: u8,
    pub xid: u32,
    pub body: Message,
}

impl OfpMessage {
    pub fn new(xid: u32, body: Message) -> Self {
        Self {
            version: OFP15_VERSION,
            xid,
            body,
        }
    }

    /// Decode exactly one message occupying all of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let h = Header::decode(&mut r)?;
        if h.length as usize != buf.len() {
            return Err(DecodeError::BadLength {
                what: "ofp_header length",
                len: h.length as usize,
            });
        }
        let (exp, body) = if h.ty == OFPT_EXPERIMENTER {
            let e = r.u32("ofp_experimenter_header")?;
            let s = r.u32("ofp_experimenter_header")?;
            (Some((e, s)), r.take_rest())
        } else {
            (None, r.take_rest())
        };
        // Only OF1.5 bodies are understood; other versions' bodies (except hello/error,
        // whose layout is version independent) are kept raw.
        let body = if h.version == OFP15_VERSION || h.ty <= 1 {
            Message::decode_body(h.ty, exp, body)?
        } else {
            Message::Unknown {
                ty: h.ty,
                experimenter: exp,
                body: body.to_vec(),
            }
        };
        Ok(Self {
            version: h.version,
            xid: h.xid,
            body,
        })
    }

    /// Append the whole message to `out`. A message longer than 65535 bytes (or with any
    /// part that does not fit its length field) is an error, and `out` is left as it was.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        encode_message(self.version, self.xid, &self.body, out)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut b = BytesMut::new();
        self.encode(&mut b)?;
        Ok(b.to_vec())
    }
}

fn encode_message(
    version: u8,
    xid: u32,
    body: &Message,
    out: &mut BytesMut,
) -> Result<(), EncodeError> {
    encode::all_or_nothing(out, |out| {
        let start = out.len();
        let (ty, exp) = body.code();
        Header {
            version,
            ty,
            length: 0,
            xid,
        }
        .encode(out);
        if let Some((e, s)) = exp {
            out.put_u32(e);
            out.put_u32(s);
        }
        body.encode_body(out)?;
        encode::patch_len16(out, start, start + 2, "OpenFlow message")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(body: Message) {
        let m = OfpMessage::new(7, body);
        let bytes = m.to_bytes().unwrap();
        assert_eq!(frame_len(&bytes), Some(bytes.len()));
        assert_eq!(OfpMessage::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn simple_messages_round_trip() {
        rt(Message::Hello(Hello::with_versions(&[6])));
        rt(Message::EchoRequest(Echo { data: vec![1, 2] }));
        rt(Message::BarrierRequest(Empty));
        rt(Message::FeaturesReply(FeaturesReply {
            datapath_id: 9,
            n_buffers: 0,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: 0x4f,
        }));
        rt(Message::Error(ErrorMsg {
            code: ErrorCode::Experimenter {
                exp_code: 0x100,
                experimenter: NX_VENDOR_ID,
            },
            data: vec![6, 14, 0, 8, 0, 0, 0, 1],
        }));
        rt(Message::CtFlushZone(CtFlushZone { zone_id: 5 }));
        rt(Message::CtFlush(CtFlush {
            ip_proto: 17,
            orig: CtTuple {
                dst: Some(std::net::Ipv4Addr::new(192, 168, 0, 10).to_ipv6_mapped()),
                dst_port: Some(80),
                ..CtTuple::default()
            },
            reply: CtTuple {
                src: Some("aef0::1".parse().unwrap()),
                src_port: Some(8080),
                icmp_type: Some(3),
                unknown: vec![(9, vec![1, 2, 3])],
                ..CtTuple::default()
            },
            zone_id: Some(7),
            unknown: vec![(40, vec![5; 9])],
        }));
        rt(Message::CtFlush(CtFlush::default()));
        rt(Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::MeterFeatures,
        }));
        rt(Message::MultipartReply(MultipartReply {
            flags: 0,
            body: MultipartReplyBody::MeterFeatures(multipart::MeterFeatures {
                max_meter: 200_000,
                band_types: 2,
                capabilities: 0xf,
                max_bands: 1,
                max_color: 0,
            }),
        }));
        rt(Message::SetPacketInFormat(SetPacketInFormat { format: 2 }));
        rt(Message::RoleRequest(RoleRequest {
            role: 2,
            generation_id: 3,
        }));
        rt(Message::Unknown {
            ty: 4,
            experimenter: Some((NX_VENDOR_ID, 999)),
            body: vec![1, 2, 3],
        });
    }

    #[test]
    fn hello_bytes_and_versions() {
        let m = OfpMessage::new(1, Message::Hello(Hello::with_versions(&[6])));
        assert_eq!(
            m.to_bytes().unwrap(),
            [6, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x40]
        );
        let Message::Hello(h) = m.body else {
            unreachable!()
        };
        assert_eq!(h.offers(6), Some(true));
        assert_eq!(h.offers(4), Some(false));
    }

    #[test]
    fn too_long_messages_are_errors_and_write_nothing() {
        let mut out = BytesMut::from(&b"keep"[..]);
        let fits = OfpMessage::new(
            1,
            Message::EchoRequest(Echo {
                data: vec![0; 65_527],
            }),
        );
        fits.encode(&mut out).unwrap();
        assert_eq!(out.len(), 4 + 65_535);
        assert_eq!(frame_len(&out[4..]), Some(65_535));
        let mut out = BytesMut::from(&b"keep"[..]);
        let over = OfpMessage::new(
            1,
            Message::EchoRequest(Echo {
                data: vec![0; 65_528],
            }),
        );
        assert_eq!(
            over.encode(&mut out),
            Err(EncodeError::TooLong {
                what: "OpenFlow message",
                len: 65_536,
                max: 65_535
            })
        );
        assert_eq!(&out[..], b"keep");
        assert!(over.to_bytes().is_err());
    }

    #[test]
    fn a_group_too_large_for_one_message_splits_into_insert_buckets() {
        use super::bundle::{BundleBuilder, MAX_BUNDLED_BODY};
        use super::group_mod::{OFPGC_INSERT_BUCKET, OFPG_BUCKET_LAST};
        use crate::action::Action;
        let bucket = |i| Bucket {
            bucket_id: i,
            actions: vec![Action::Output {
                port: i,
                max_len: 0,
            }],
            ..Bucket::default()
        };
        let group = |n| GroupMod {
            command: 0,
            command_bucket_id: 0xffff_ffff,
            group: Group {
                group_id: 7,
                group_type: 1,
                selection_method: "hash".into(),
                buckets: (0..n).map(bucket).collect(),
                ..Group::default()
            },
        };
        // Small enough: itself.
        assert_eq!(group(3).split(MAX_BUNDLED_BODY), Ok(vec![group(3)]));
        let parts = group(6000).split(MAX_BUNDLED_BODY).expect("splits");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].command, 0);
        assert_eq!(parts[0].group.selection_method, "hash");
        for p in &parts[1..] {
            assert_eq!(
                (
                    p.command,
                    p.command_bucket_id,
                    p.group.group_id,
                    p.group.group_type
                ),
                (OFPGC_INSERT_BUCKET, OFPG_BUCKET_LAST, 7, 1)
            );
            assert!(p.group.selection_method.is_empty());
        }
        // Every bucket once, in order, each message fitting a bundle, and decoding back.
        let ids: Vec<u32> = parts
            .iter()
            .flat_map(|p| p.group.buckets.iter().map(|b| b.bucket_id))
            .collect();
        assert_eq!(ids, (0..6000).collect::<Vec<_>>());
        let mut bundle = BundleBuilder::new(0);
        for p in &parts {
            let msg = Message::GroupMod(p.clone());
            assert!(bundle.push_message(&msg).is_ok());
            let bytes = OfpMessage::new(1, msg).to_bytes().expect("encodes");
            assert_eq!(
                OfpMessage::decode(&bytes).map(|m| m.body),
                Ok(Message::GroupMod(p.clone()))
            );
        }
    }

    #[test]
    fn a_group_with_thousands_of_buckets_and_a_flow_with_a_huge_action_list_are_too_long() {
        use crate::action::Action;
        let bucket = |i| Bucket {
            bucket_id: i,
            actions: vec![Action::Output {
                port: 1,
                max_len: 0,
            }],
            ..Bucket::default()
        };
        // 24 bytes of headers and 24 per bucket: 2729 buckets fit, 2730 do not.
        let group = |n| {
            Message::GroupMod(GroupMod {
                command: 0,
                command_bucket_id: 0xffff_ffff,
                group: Group {
                    group_id: 1,
                    buckets: (0..n).map(bucket).collect(),
                    ..Group::default()
                },
            })
        };
        assert_eq!(
            OfpMessage::new(1, group(2729)).to_bytes().map(|b| b.len()),
            Ok(65_520)
        );
        let mut out = BytesMut::from(&b"x"[..]);
        assert!(matches!(
            OfpMessage::new(1, group(2730)).encode(&mut out),
            Err(EncodeError::TooLong { .. })
        ));
        assert!(matches!(
            OfpMessage::new(1, group(5000)).encode(&mut out),
            Err(EncodeError::TooLong { .. })
        ));
        assert_eq!(&out[..], b"x");
        let flow = |n| {
            Message::FlowMod(FlowMod {
                instructions: vec![Instruction::ApplyActions(vec![Action::Group(1); n])],
                ..FlowMod::default()
            })
        };
        assert!(OfpMessage::new(1, flow(8000)).to_bytes().is_ok());
        assert!(matches!(
            OfpMessage::new(1, flow(8185)).to_bytes(),
            Err(EncodeError::TooLong { .. })
        ));
        assert!(matches!(
            OfpMessage::new(1, flow(20_000)).encode(&mut out),
            Err(EncodeError::TooLong {
                what: "instruction",
                ..
            })
        ));
        assert_eq!(&out[..], b"x");
    }

    #[test]
    fn length_mismatch_is_error() {
        assert!(OfpMessage::decode(&[6, 2, 0, 9, 0, 0, 0, 0]).is_err());
        assert!(OfpMessage::decode(&[6, 2, 0]).is_err());
    }
}
