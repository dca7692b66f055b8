//! Installs flows whose actions use many encodings (set_field of registers, metadata and
//! Ethernet addresses, whole or under a full mask; copy_field moves with NXM or OXM
//! headers; register subfields named through `xreg`/`xxreg` views; every dec_ttl form;
//! notes, clones, ct, learn, stack, output lengths) on a switch in one bundle, reads them
//! back through an OpenFlow 1.5 flow dump, and compares every flow's actions with
//! `openflow::action::equivalent`.
//!
//! (`NXAST_REG_LOAD`, `NXAST_REG_LOAD2` and `NXAST_REG_MOVE` are NX1.0-1.4 actions: Open
//! vSwitch refuses them in an OpenFlow 1.5 flow_mod with `OFPBAC_BAD_EXP_TYPE`, so they are
//! not sent here; the decoder-level property tests cover their equivalence.)
//!
//! Usage: `ofequiv SOCKET [FLOWS [SEED]]` (defaults 500 flows, seed 1; `OFEQUIV_SHOW=N`
//! prints the first N flows that came back in another encoding). Prints
//! `FLOWS flows: DIFF dumped in another encoding, all equivalent` and exits 0, or names
//! each flow whose dumped actions are not equivalent (or that is missing) and exits 1.

use std::collections::HashMap;
use std::process::ExitCode;

use openflow::action::{
    equivalent, Action, Ct, HeaderRef, Learn, LearnDst, LearnSpec, LearnSrc, SubField,
};
use openflow::conn::client::ClientConfig;
use openflow::conn::connect;
use openflow::oxm::{FieldId, Match, MatchField};
use openflow::text::format_actions;
use openflow::wire::bundle::{OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::multipart::{FlowStatsRequest, MultipartReplyBody, MultipartRequestBody};
use openflow::wire::{BundleBuilder, FlowMod, Instruction, Message, MultipartRequest};

/// xorshift64: a deterministic sequence, so a failure can be replayed with its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn flip(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// `regN[ofs..ofs+n_bits]`, named through the register itself, or its `xreg` / `xxreg` view,
/// under the NXM or the OXM header.
fn reg_subfield(rng: &mut Rng, reg: u8, ofs: u16, n_bits: u16) -> SubField {
    let (id, base) = match rng.below(3) {
        0 => (FieldId::reg(reg), 0),
        1 => (FieldId::xreg(reg / 2), u16::from(1 - reg % 2) * 32),
        _ => (FieldId::xxreg(reg / 4), u16::from(3 - reg % 4) * 32),
    };
    SubField {
        field: if rng.flip() {
            HeaderRef::nxm(id)
        } else {
            HeaderRef::oxm(id)
        },
        ofs: base + ofs,
        n_bits,
    }
}

fn field_subfield(rng: &mut Rng, name: &str) -> SubField {
    let id = FieldId::by_name(name).unwrap_or(FieldId::reg(0));
    let whole = SubField::whole(id);
    SubField {
        field: if rng.flip() {
            HeaderRef::nxm(id)
        } else {
            HeaderRef::oxm(id)
        },
        ..whole
    }
}

/// A write of `value` to bits `ofs..ofs+n_bits` of a register, as a set_field of the
/// register or one of its views.
fn reg_write(rng: &mut Rng, reg: u8, ofs: u16, n_bits: u16, value: u64) -> Action {
    let value = value & (u64::MAX >> (64 - n_bits));
    let sf = reg_subfield(rng, reg, ofs, n_bits);
    let id = sf.field.field().unwrap_or(FieldId::reg(reg));
    let width = id.def().width;
    let shifted = u128::from(value) << sf.ofs;
    let mask = (u128::MAX >> (128 - u32::from(n_bits))) << sf.ofs;
    let bytes = |v: u128| v.to_be_bytes()[16 - width..].to_vec();
    let full = sf.ofs == 0 && usize::from(n_bits) == width * 8;
    // A full mask, sometimes, where none is needed.
    let mask = (!full || rng.flip()).then(|| bytes(mask));
    Action::SetField(MatchField::new(id, bytes(shifted), mask))
}

fn one_action(rng: &mut Rng, depth: u8) -> Action {
    let reg = (rng.below(16)) as u8;
    let n_bits = 1 + rng.below(32) as u16;
    let ofs = rng.below(u64::from(33 - n_bits)) as u16;
    match rng.below(if depth == 0 { 14 } else { 11 }) {
        0..=2 => {
            let value = rng.next();
            reg_write(rng, reg, ofs, n_bits, value)
        }
        3 => {
            let id = FieldId::by_name(if rng.flip() { "metadata" } else { "eth_src" })
                .unwrap_or(FieldId::reg(0));
            let w = id.def().width;
            let v: Vec<u8> = (0..w).map(|_| rng.next() as u8).collect();
            // Whole, or under a mask that covers every bit (the same write).
            let mask = rng.flip().then(|| vec![0xff; w]);
            Action::SetField(MatchField::new(id, v, mask))
        }
        4 => {
            let other = (rng.below(16)) as u8;
            Action::Move {
                src: reg_subfield(rng, reg, ofs, n_bits),
                dst: reg_subfield(rng, other, ofs, n_bits),
                nx: false,
            }
        }
        5 => Action::Move {
            src: field_subfield(rng, "eth_src"),
            dst: field_subfield(rng, "eth_dst"),
            nx: false,
        },
        6 => match rng.below(4) {
            0 => Action::DecNwTtl,
            1 => Action::DecTtl { ids: vec![0] },
            2 => Action::DecTtl { ids: vec![] },
            _ => Action::DecTtl { ids: vec![1, 2] },
        },
        7 => Action::Output {
            port: 1 + rng.below(100) as u32,
            max_len: if rng.flip() { 0 } else { u16::MAX },
        },
        8 => Action::Note((0..=rng.below(12)).map(|_| rng.next() as u8).collect()),
        9 => {
            if rng.flip() {
                Action::StackPush(reg_subfield(rng, reg, ofs, n_bits))
            } else {
                Action::StackPop(reg_subfield(rng, reg, ofs, n_bits))
            }
        }
        10 => Action::Resubmit {
            in_port: if rng.flip() {
                0xfff8
            } else {
                1 + rng.below(50) as u16
            },
            table: if rng.flip() {
                255
            } else {
                10 + rng.below(20) as u8
            },
            ct: false,
        },
        11 => Action::Clone((0..=rng.below(3)).map(|_| one_action(rng, 1)).collect()),
        12 => Action::Ct(Ct {
            flags: 1,
            zone_src: Some(reg_subfield(rng, 13, 0, 16)),
            recirc_table: 20,
            actions: vec![Action::SetField(MatchField::new(
                FieldId::by_name("ct_mark").unwrap_or(FieldId::reg(0)),
                vec![0, 0, 0, 2],
                Some(vec![0, 0, 0, 2]),
            ))],
            ..Ct::default()
        }),
        _ => Action::Learn(Learn {
            table_id: 40,
            specs: vec![
                LearnSpec {
                    n_bits: 64,
                    src: LearnSrc::Field(field_subfield(rng, "metadata")),
                    dst: LearnDst::Match(field_subfield(rng, "metadata")),
                },
                LearnSpec {
                    n_bits,
                    src: LearnSrc::Field(reg_subfield(rng, reg, ofs, n_bits)),
                    dst: LearnDst::Load(reg_subfield(rng, (reg + 1) % 16, ofs, n_bits)),
                },
            ],
            ..Learn::default()
        }),
    }
}

fn flow(rng: &mut Rng, i: u32) -> FlowMod {
    let mut m = Match::new();
    m.push(
        FieldId::by_name("eth_type").unwrap_or(FieldId::reg(0)),
        vec![8, 0],
        None,
    );
    m.push(FieldId::reg(0), i.to_be_bytes().to_vec(), None);
    let actions = (0..=rng.below(6)).map(|_| one_action(rng, 0)).collect();
    FlowMod {
        cookie: u64::from(i),
        table_id: 1,
        priority: 100,
        r#match: m,
        instructions: vec![Instruction::ApplyActions(actions)],
        ..FlowMod::default()
    }
}

fn actions_of(instructions: &[Instruction]) -> &[Action] {
    instructions
        .iter()
        .find_map(|i| match i {
            Instruction::ApplyActions(a) => Some(a.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(socket) = args.first() else {
        eprintln!("usage: ofequiv SOCKET [FLOWS [SEED]]");
        return ExitCode::from(2);
    };
    let n: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut rng = Rng(seed.max(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let flows: Vec<FlowMod> = (0..n).map(|i| flow(&mut rng, i)).collect();
    let mut bundle = BundleBuilder::new(OFPBF_ATOMIC | OFPBF_ORDERED);
    for f in &flows {
        if let Err(e) = bundle.push_message(&Message::FlowMod(f.clone())) {
            eprintln!("ofequiv: flow {}: {e}", f.cookie);
            return ExitCode::from(1);
        }
    }
    let target = if socket.contains(':') {
        socket.clone()
    } else {
        format!("unix:{socket}")
    };
    let cfg = ClientConfig {
        reconnect: false,
        ..ClientConfig::default()
    };
    let (conn, handle, _asyncs) = match connect(&target, cfg) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ofequiv: {e}");
            return ExitCode::from(1);
        }
    };
    let task = tokio::spawn(conn.run());
    let result = async {
        let sid = handle.wait_connected().await?;
        handle.commit_bundle(sid, bundle).await?;
        let request = Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::FlowDesc(FlowStatsRequest {
                table_id: 1,
                ..FlowStatsRequest::default()
            }),
        });
        handle.request(sid, &request).await
    }
    .await;
    drop(handle);
    let _ = task.await;
    let parts = match result {
        Ok(p) => p,
        Err(e) => {
            let reason = match &e {
                openflow::conn::ConnError::BundleFailed { rejected, .. } => rejected
                    .iter()
                    .map(|(i, err)| {
                        format!(
                            "flow {i} ({}): {err}",
                            format_actions(actions_of(&flows[*i].instructions))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => String::new(),
            };
            eprintln!("ofequiv: {e} {reason}");
            return ExitCode::from(1);
        }
    };
    let mut dumped: HashMap<u64, Vec<Action>> = HashMap::new();
    for part in parts {
        if let Message::MultipartReply(r) = part.body {
            if let MultipartReplyBody::FlowDesc(v) = r.body {
                for fd in v {
                    dumped.insert(fd.cookie, actions_of(&fd.instructions).to_vec());
                }
            }
        }
    }
    // OFEQUIV_SHOW=N prints the first N flows dumped in another encoding.
    let show: usize = std::env::var("OFEQUIV_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut differ = 0;
    let mut bad = 0;
    for f in &flows {
        let want = actions_of(&f.instructions);
        match dumped.get(&f.cookie) {
            None => {
                bad += 1;
                eprintln!("flow {}: missing from the dump", f.cookie);
            }
            Some(got) if !equivalent(want, got) => {
                bad += 1;
                eprintln!(
                    "flow {}: not equivalent\n  sent:   {}\n  dumped: {}\n  sent:   {want:?}\n  dumped: {got:?}",
                    f.cookie,
                    format_actions(want),
                    format_actions(got)
                );
            }
            Some(got) => {
                if want != got.as_slice() {
                    differ += 1;
                    if differ <= show {
                        println!(
                            "flow {}: sent   {want:?}\n         dumped {got:?}",
                            f.cookie
                        );
                    }
                }
            }
        }
    }
    if bad > 0 {
        eprintln!("ofequiv: {bad} of {n} flows not equivalent or missing");
        return ExitCode::from(1);
    }
    println!("{n} flows: {differ} dumped in another encoding, all equivalent");
    ExitCode::SUCCESS
}
