//! The OpenFlow connection to the integration bridge (reference §7): a thin tokio task over
//! `openflow::conn`. On each new session it maps OVN's Geneve option (the TLV table),
//! reads what the switch has (flows, groups, meters) and reports it; then it carries out
//! the engine's puts (zone flushes, meters, one atomic bundle, barrier) in order.

use std::time::Duration;

use openflow::action::Action;
use openflow::conn::{connect, BundlePart, ConnError, Handle, SessionId};
use openflow::oxm::Match;
use openflow::wire::bundle::BundleBuilder;
use openflow::wire::multipart::{
    FlowStatsRequest, MeterConfig, MultipartReplyBody, MultipartRequestBody,
};
use openflow::wire::{
    CtFlush, CtFlushZone, Empty, ErrorCode, ErrorMsg, Group, Instruction, Message, MeterMod,
    MultipartRequest, OfpMessage, TlvMap, TlvTableMod,
};
use tokio::sync::mpsc;

/// OVN's Geneve option: class 0x0102, type 0x80 (critical), 4 bytes.
const OVN_GENEVE_CLASS: u16 = 0x0102;
const OVN_GENEVE_TYPE: u8 = 0x80;
const OVN_GENEVE_LEN: u8 = 4;
/// ovn-agent's own option in OVN's class, carrying pkt.mark between chassis that both have
/// the capability: type 0x01, which OVN does not use, not critical (a receiver that does
/// not know it ignores it), 4 bytes.
pub const PKT_MARK_GENEVE_TYPE: u8 = 0x01;
/// `NXTTMC_ADD`.
const NXTTMC_ADD: u16 = 0;
const OFPG_ALL: u32 = 0xffff_fffc;
const OFPM_ALL: u32 = 0xffff_ffff;

/// The index under which [`PutError::Rejected`] reports an error of the bundle commit.
pub const COMMIT: usize = usize::MAX;

/// A flow as the switch reported it.
pub type DumpedFlow = (u8, u16, u64, Match, Vec<Action>);

/// What the switch has when a session starts.
#[derive(Debug, Default)]
pub struct Dump {
    pub flows: Vec<DumpedFlow>,
    pub groups: Vec<Group>,
    pub meters: Vec<MeterConfig>,
}

/// The `tun_metadataN` indexes the Geneve options are mapped to on the switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneveFields {
    /// OVN's option (`inport << 16 | outport`).
    pub ovn: Option<u8>,
    /// ovn-agent's pkt.mark option.
    pub pkt_mark: Option<u8>,
}

/// Reports of the connection task.
#[derive(Debug)]
pub enum OfEvent {
    /// A session is up, with the `tun_metadataN` fields of the Geneve options.
    Connected {
        session: SessionId,
        fields: GeneveFields,
        dump: Dump,
    },
    /// The session is gone (the task reconnects).
    Disconnected,
    /// A put finished (`Ok`: the switch has everything it carried).
    PutDone {
        seq: u64,
        result: Result<(), PutError>,
    },
}

/// Why a put failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PutError {
    /// The switch refused these bundle messages (by bundle index; the commit itself as
    /// [`COMMIT`]); nothing was applied. The codes print as their OpenFlow names
    /// (`OFPBMC_BAD_VALUE`).
    #[error("{} message(s) refused", .0.len())]
    Rejected(Vec<(usize, ErrorCode)>),
    #[error("{0}")]
    Connection(String),
}

/// One put: the work of one engine run, in the order ovn-controller sends it.
#[derive(Debug)]
pub struct Put {
    pub session: SessionId,
    pub seq: u64,
    pub flush_zones: Vec<u16>,
    /// Conntrack flushes by tuple (a load balancer's removed backends), before the bundle.
    pub ct_flush: Vec<CtFlush>,
    pub meters_add: Vec<MeterMod>,
    /// Group adds, flow mods, group deletes: all of them, or the first part when not
    /// `complete`.
    pub bundle: BundleBuilder,
    /// Whether `bundle` holds the whole bundle. When not, the engine encodes the other
    /// parts after this one (`Engine::next_put_part`) and the daemon sends them on `rest`;
    /// the bundle is committed after the last.
    pub complete: bool,
    pub rest: Option<mpsc::Receiver<BundlePart>>,
    pub meters_del: Vec<MeterMod>,
}

/// The handle the engine side keeps.
pub struct OfControl {
    pub puts: mpsc::Sender<Put>,
    pub events: mpsc::Receiver<OfEvent>,
}

/// Starts the connection task to `target` (`unix:<rundir>/<bridge>.mgmt`).
pub fn spawn(target: &str, probe: Option<Duration>) -> Result<OfControl, ConnError> {
    let mut cfg = openflow::conn::client::ClientConfig::default();
    // ovn-openflow-probe-interval: off unless configured.
    cfg.session.probe_interval = probe.unwrap_or(Duration::ZERO);
    let (conn, handle, mut unsolicited) = connect(target, cfg)?;
    tokio::spawn(async move {
        if let Err(e) = conn.run().await {
            tracing::warn!(target: "ofctrl", "openflow connection task stopped: {e}");
        }
    });
    // Packet-ins and port status on this connection are not ours to handle.
    tokio::spawn(async move { while unsolicited.recv().await.is_some() {} });
    let (put_tx, put_rx) = mpsc::channel(4);
    let (ev_tx, ev_rx) = mpsc::channel(16);
    tokio::spawn(run(target.to_owned(), handle, put_rx, ev_tx));
    Ok(OfControl {
        puts: put_tx,
        events: ev_rx,
    })
}

async fn run(
    target: String,
    handle: Handle,
    mut puts: mpsc::Receiver<Put>,
    events: mpsc::Sender<OfEvent>,
) {
    let mut state = handle.state();
    loop {
        let Ok(session) = handle.wait_connected().await else {
            return;
        };
        match handshake(&handle, session).await {
            Ok((fields, dump)) => {
                tracing::info!(target: "rconn", "{target}: connected");
                tracing::info!(target: "ofctrl", "integration bridge session {session}: {} flows there", dump.flows.len());
                if events
                    .send(OfEvent::Connected {
                        session,
                        fields,
                        dump,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(target: "ofctrl", "handshake on session {session} failed: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        }
        // Serve puts until the session goes.
        loop {
            tokio::select! {
                put = puts.recv() => {
                    let Some(put) = put else { return };
                    let seq = put.seq;
                    let result = carry_out(&handle, put).await;
                    if events.send(OfEvent::PutDone { seq, result }).await.is_err() {
                        return;
                    }
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if *state.borrow() != Some(session) {
                        let _ = events.send(OfEvent::Disconnected).await;
                        break;
                    }
                }
            }
        }
    }
}

/// Maps OVN's Geneve option and ours (adding each at the lowest free index if needed) and
/// reads the switch's flows, groups and meters.
async fn handshake(h: &Handle, s: SessionId) -> Result<(GeneveFields, Dump), ConnError> {
    let fields = GeneveFields {
        ovn: tlv_map(h, s, OVN_GENEVE_TYPE).await?,
        pkt_mark: tlv_map(h, s, PKT_MARK_GENEVE_TYPE).await?,
    };
    let mut dump = Dump::default();
    for r in h
        .request(
            s,
            &Message::MultipartRequest(MultipartRequest {
                flags: 0,
                body: MultipartRequestBody::FlowDesc(FlowStatsRequest::default()),
            }),
        )
        .await?
    {
        if let Message::MultipartReply(m) = r.body {
            if let MultipartReplyBody::FlowDesc(v) = m.body {
                for f in v {
                    let actions = f
                        .instructions
                        .into_iter()
                        .find_map(|i| match i {
                            Instruction::ApplyActions(a) => Some(a),
                            _ => None,
                        })
                        .unwrap_or_default();
                    dump.flows
                        .push((f.table_id, f.priority, f.cookie, f.r#match, actions));
                }
            }
        }
    }
    for r in multipart(h, s, MultipartRequestBody::GroupDesc(OFPG_ALL)).await? {
        if let MultipartReplyBody::GroupDesc(v) = r {
            dump.groups.extend(v);
        }
    }
    for r in multipart(h, s, MultipartRequestBody::MeterDesc(OFPM_ALL)).await? {
        if let MultipartReplyBody::MeterDesc(v) = r {
            dump.meters.extend(v);
        }
    }
    Ok((fields, dump))
}

async fn multipart(
    h: &Handle,
    s: SessionId,
    body: MultipartRequestBody,
) -> Result<Vec<MultipartReplyBody>, ConnError> {
    let replies = h
        .request(
            s,
            &Message::MultipartRequest(MultipartRequest { flags: 0, body }),
        )
        .await;
    match replies {
        Ok(v) => Ok(v
            .into_iter()
            .filter_map(|r: OfpMessage| match r.body {
                Message::MultipartReply(m) => Some(m.body),
                _ => None,
            })
            .collect()),
        // A switch without meters answers with an error: there is nothing to read.
        Err(ConnError::Peer(e)) => {
            tracing::debug!(target: "ofctrl", "multipart request refused: {e}");
            Ok(Vec::new())
        }
        Err(e) => Err(e),
    }
}

/// The `tun_metadata` index of option (OVN's class, `option_type`, 4 bytes), mapped if it
/// is not yet.
async fn tlv_map(h: &Handle, s: SessionId, option_type: u8) -> Result<Option<u8>, ConnError> {
    for _attempt in 0..3 {
        let reply = h.request(s, &Message::TlvTableRequest(Empty)).await?;
        let Some(t) = reply.into_iter().find_map(|m| match m.body {
            Message::TlvTableReply(t) => Some(t),
            _ => None,
        }) else {
            return Ok(None);
        };
        if let Some(m) = t.mappings.iter().find(|m| {
            m.option_class == OVN_GENEVE_CLASS
                && m.option_type == option_type
                && m.option_len == OVN_GENEVE_LEN
        }) {
            return Ok(u8::try_from(m.index).ok());
        }
        let used: Vec<u16> = t.mappings.iter().map(|m| m.index).collect();
        let Some(free) = (0..64u16).find(|i| !used.contains(i)) else {
            tracing::warn!(target: "ofctrl", "no free tun_metadata field: Geneve disabled");
            return Ok(None);
        };
        h.send(
            s,
            &[Message::TlvTableMod(TlvTableMod {
                command: NXTTMC_ADD,
                mappings: vec![TlvMap {
                    option_class: OVN_GENEVE_CLASS,
                    option_type,
                    option_len: OVN_GENEVE_LEN,
                    index: free,
                }],
            })],
        )
        .await?;
        let errors = h.barrier(s).await?;
        if errors.is_empty() {
            return Ok(u8::try_from(free).ok());
        }
        // Another controller mapped it at the same time: read the table again.
        if let Some((_, e)) = errors.first() {
            tracing::info!(target: "ofctrl", "TLV map race ({}), retrying", e.code);
        }
    }
    Ok(None)
}

/// A refused bundle as the engine sees it: each refused message's error by index.
fn rejection(rejected: Vec<(usize, ErrorMsg)>, commit: Option<ErrorMsg>) -> PutError {
    let mut v: Vec<(usize, ErrorCode)> = rejected.into_iter().map(|(i, e)| (i, e.code)).collect();
    if let Some(c) = commit {
        v.push((COMMIT, c.code));
    }
    PutError::Rejected(v)
}

async fn carry_out(h: &Handle, put: Put) -> Result<(), PutError> {
    let conn = |e: ConnError| PutError::Connection(e.to_string());
    let s = put.session;
    let mut pre: Vec<Message> = put
        .flush_zones
        .iter()
        .map(|z| Message::CtFlushZone(CtFlushZone { zone_id: *z }))
        .collect();
    pre.extend(put.ct_flush.into_iter().map(Message::CtFlush));
    pre.extend(put.meters_add.into_iter().map(Message::MeterMod));
    if !pre.is_empty() {
        h.send(s, &pre).await.map_err(conn)?;
    }
    if !put.complete && put.rest.is_none() {
        // Committing the first part alone would leave the switch with part of a table.
        return Err(PutError::Connection(
            "put has more parts but nothing delivers them: not sent".into(),
        ));
    }
    let bundle_sent = !put.bundle.is_empty() || put.rest.is_some();
    if bundle_sent {
        match h.commit_bundle_parts(s, put.bundle, put.rest).await {
            Ok(()) => {}
            Err(ConnError::BundleFailed { rejected, commit }) => {
                return Err(rejection(rejected, commit));
            }
            Err(e) => return Err(conn(e)),
        }
    }
    // The bundle's commit ends with a barrier, which also covers the zone flushes and
    // meters sent before it (their errors are logged there): another is needed only for
    // what follows the bundle, or when there was none.
    if bundle_sent && put.meters_del.is_empty() {
        return Ok(());
    }
    if !put.meters_del.is_empty() {
        let del: Vec<Message> = put.meters_del.into_iter().map(Message::MeterMod).collect();
        h.send(s, &del).await.map_err(conn)?;
    }
    let errors = h.barrier(s).await.map_err(conn)?;
    for (_, e) in errors {
        tracing::warn!(target: "ofctrl", "switch refused a zone flush or meter: {}", e.code);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_messages_are_named_as_openflow_names_them() {
        let refused = |ty, code| ErrorMsg {
            code: ErrorCode::Standard { ty, code },
            data: Vec::new(),
        };
        let PutError::Rejected(v) = rejection(vec![(3, refused(4, 7))], Some(refused(17, 13)))
        else {
            panic!("not a rejection")
        };
        let text: Vec<(usize, String)> = v.iter().map(|(i, e)| (*i, e.to_string())).collect();
        assert_eq!(
            text,
            [
                (3, "OFPBMC_BAD_VALUE".to_owned()),
                (COMMIT, "OFPBFC_MSG_FAILED".to_owned())
            ]
        );
    }
}
