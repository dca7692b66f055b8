//! The flow table's choice among owners, its dirty tracking and commits, and its memory
//! figures.

use super::*;
use crate::lflow::of::{conjunction, resubmit, FieldId};
use sbclient::Uuid;

fn flow(cookie: u64, actions: Vec<Action>) -> Flow {
    let mut m = FlowMatch::new();
    assert!(m.add(FieldId::METADATA, 1, u128::from(u64::MAX)));
    Flow {
        table: 8,
        priority: 10,
        cookie,
        m,
        actions: Arc::new(actions),
    }
}

fn lf(n: u128) -> Owner {
    Owner::Lflow(Uuid::from_u128(n))
}

fn effective(d: &FlowTable) -> Vec<String> {
    d.iter().map(|f| f.to_flow().to_string()).collect()
}

fn ops(d: &FlowTable) -> Vec<(FlowModCommand, u64)> {
    d.pending().map(|o| (o.command, o.cookie)).collect()
}

#[test]
fn preference_and_merging_follow_ofctrl() {
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![])]);
    d.replace(lf(2), vec![flow(2, vec![resubmit(9)])]);
    d.replace(lf(3), vec![flow(3, vec![])]);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d.iter().next().unwrap().cookie,
        2,
        "a flow with actions beats drops"
    );
    assert_eq!(d.duplicates(), 2);
    d.remove(lf(2));
    assert_eq!(
        d.iter().next().unwrap().cookie,
        1,
        "then the smallest owner's drop"
    );
    let mut c = FlowTable::new();
    c.replace(lf(5), vec![flow(0, vec![conjunction(6, 0, 2)])]);
    c.replace(lf(4), vec![flow(0, vec![conjunction(5, 0, 2)])]);
    assert_eq!(
        effective(&c),
        [" cookie=0x0, table=8, priority=10,metadata=0x1 actions=conjunction(5,1/2),conjunction(6,1/2)"]
    );
    c.replace(lf(9), vec![flow(7, vec![])]);
    assert_eq!(
        c.iter().next().unwrap().cookie,
        7,
        "a drop beats conjunctions"
    );
    c.remove(lf(9));
    c.remove(lf(4));
    assert_eq!(
        effective(&c),
        [" cookie=0x0, table=8, priority=10,metadata=0x1 actions=conjunction(6,1/2)"]
    );
    c.remove(lf(5));
    assert!(c.is_empty());
    assert_eq!(ops(&c), [], "never installed, nothing to delete");
}

#[test]
fn pending_flow_mods_follow_installed_state() {
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    assert_eq!(ops(&d), [(FlowModCommand::Add, 1)]);
    d.commit();
    assert_eq!(ops(&d), []);
    d.replace(lf(1), vec![flow(1, vec![resubmit(10)])]);
    assert_eq!(ops(&d), [(FlowModCommand::ModifyStrict, 1)]);
    d.commit();
    d.replace(lf(1), vec![flow(2, vec![resubmit(10)])]);
    assert_eq!(
        ops(&d),
        [(FlowModCommand::Add, 2)],
        "a new cookie needs ADD"
    );
    d.commit();
    d.replace(lf(1), vec![flow(2, vec![resubmit(10)])]);
    assert_eq!(ops(&d), [], "the same flow again is no change");
    d.remove(lf(1));
    assert_eq!(ops(&d), [(FlowModCommand::DeleteStrict, 2)]);
    d.commit();
    assert_eq!(ops(&d), []);
    assert!(d.is_empty());
}

#[test]
fn changes_made_while_a_batch_is_in_flight_stay_pending() {
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    let batch = d.take_batch();
    d.replace(lf(1), vec![flow(1, vec![resubmit(10)])]);
    d.commit_batch(batch);
    assert_eq!(
        ops(&d),
        [(FlowModCommand::ModifyStrict, 1)],
        "the later change still goes"
    );
    let b = d.take_batch();
    d.fail_batch(b);
    assert_eq!(
        ops(&d),
        [(FlowModCommand::ModifyStrict, 1)],
        "a refused batch is pending again"
    );
}

/// A put that takes more entries as it goes (a streamed compile): an entry sent earlier
/// in the same batch is sent again as a full add, or a strict delete, since the switch
/// will hold that earlier message's result, not the installed flow; the commit records
/// the last message.
#[test]
fn entries_taken_again_into_the_same_batch_overwrite_what_the_batch_sent() {
    let batch_ops = |d: &FlowTable, b: &FlowBatch, from: usize| -> Vec<(FlowModCommand, u64)> {
        d.batch_ops(b, from)
            .map(|(_, o)| (o.command, o.cookie))
            .collect()
    };
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    d.commit();
    // Part 1 changes the installed flow; part 2 brings back what is installed: without
    // a message the switch would keep part 1's actions.
    d.replace(lf(1), vec![flow(1, vec![resubmit(10)])]);
    let mut b = d.take_batch();
    assert_eq!(batch_ops(&d, &b, 0), [(FlowModCommand::ModifyStrict, 1)]);
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    d.take_more(&mut b, false);
    assert_eq!(batch_ops(&d, &b, 1), [(FlowModCommand::Add, 1)]);
    // Part 3 removes it: a delete, though part 1 started from an installed flow.
    d.remove(lf(1));
    d.take_more(&mut b, false);
    assert_eq!(batch_ops(&d, &b, 2), [(FlowModCommand::DeleteStrict, 0)]);
    d.commit_batch(b);
    assert_eq!(ops(&d), []);
    assert!(
        d.is_empty(),
        "the last message (the delete) is what the switch has"
    );
    // A refused batch with repeated entries: pending once, against the installed state.
    d.replace(lf(2), vec![flow(2, vec![resubmit(9)])]);
    d.commit();
    d.replace(lf(2), vec![flow(2, vec![resubmit(10)])]);
    let mut b = d.take_batch();
    d.replace(lf(2), vec![flow(2, vec![resubmit(11)])]);
    d.take_more(&mut b, false);
    d.fail_batch(b);
    assert_eq!(ops(&d), [(FlowModCommand::ModifyStrict, 2)]);
    // While the table is incomplete only new flows go: a change to an installed flow
    // (which the rest of the compile may undo) waits for the last part.
    let flow_in = |cookie, table| Flow {
        table,
        ..flow(cookie, vec![resubmit(9)])
    };
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow_in(1, 1)]);
    d.commit();
    d.remove(lf(1));
    d.replace(lf(2), vec![flow_in(2, 2)]);
    let mut b = FlowBatch::default();
    d.take_more(&mut b, true);
    assert_eq!(batch_ops(&d, &b, 0), [(FlowModCommand::Add, 2)]);
    d.replace(lf(1), vec![flow_in(1, 1)]);
    d.take_more(&mut b, false);
    assert_eq!(
        batch_ops(&d, &b, 1),
        [],
        "wanted as installed: no flow_mod at all"
    );
    d.commit_batch(b);
    assert_eq!(ops(&d), []);
}

/// An entry whose ADD is in flight must outlive its owners until the batch finishes:
/// freed and reused by another key, the batch's commit would record the other key as
/// installed (it then never reaches the switch), and the first flow, which the switch
/// does get, would be left there with no entry to delete it.
#[test]
fn an_entry_in_flight_is_not_reused_before_its_batch_finishes() {
    let other = |cookie| {
        let mut f = flow(cookie, vec![resubmit(9)]);
        f.priority = 20;
        f
    };
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    let batch = d.take_batch();
    d.remove(lf(1));
    d.replace(lf(2), vec![other(1)]);
    d.commit_batch(batch);
    let mut got: Vec<(FlowModCommand, u16, u64)> = d
        .pending()
        .map(|o| (o.command, o.priority, o.cookie))
        .collect();
    got.sort_by_key(|o| o.1);
    assert_eq!(
        got,
        [
            (FlowModCommand::DeleteStrict, 10, 1),
            (FlowModCommand::Add, 20, 1)
        ],
        "the flow the switch took goes, the new one is added"
    );
    d.commit();
    assert_eq!(ops(&d), []);
    assert_eq!(effective(&d).len(), 1);
}

#[test]
fn a_key_dropped_and_wanted_again_gives_one_flow_mod() {
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    d.remove(lf(1));
    d.replace(lf(2), vec![flow(2, vec![resubmit(9)])]);
    assert_eq!(ops(&d), [(FlowModCommand::Add, 2)]);
}

#[test]
fn a_dump_becomes_the_installed_state() {
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![resubmit(9)])]);
    d.replace(
        lf(2),
        vec![{
            let mut f = flow(2, vec![]);
            f.priority = 20;
            f
        }],
    );
    d.forget_installed();
    let f1 = flow(1, vec![resubmit(9)]);
    let mut stale = flow(9, vec![]);
    stale.table = 12;
    let dump = [&f1, &stale].map(|f| {
        (
            f.table,
            f.priority,
            f.cookie,
            f.m.to_match(openflow::flow::MatchForm::Of15).unwrap(),
            f.actions.to_vec(),
        )
    });
    let mut foreign_match = openflow::oxm::Match::new();
    foreign_match.push(FieldId::tun_metadata(3), vec![0, 0, 0, 1], None);
    let mut all: Vec<_> = dump.into_iter().collect();
    all.push((0, 5, 0, foreign_match, vec![]));
    let foreign = d.record_dump(all);
    assert_eq!(foreign.len(), 1);
    let mut got = ops(&d);
    got.sort_by_key(|o| o.1);
    // f1 is already there; lf(2)'s flow is missing; the stale one goes.
    assert_eq!(
        got,
        [(FlowModCommand::Add, 2), (FlowModCommand::DeleteStrict, 9)]
    );
    d.commit();
    assert_eq!(ops(&d), []);
    assert_eq!(d.len(), 2);
}

#[test]
fn per_table_counts_follow_the_effective_flows() {
    let in_table = |table: u8, cookie: u64| {
        let mut f = flow(cookie, vec![resubmit(9)]);
        f.table = table;
        f
    };
    let counted = |d: &FlowTable| {
        let mut by_table = vec![0usize; d.len_by_table().len()];
        for f in d.iter() {
            by_table[usize::from(f.table)] += 1;
        }
        by_table
    };
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![in_table(3, 1), in_table(40, 1)]);
    // Same key as lf(1)'s table-3 flow: a duplicate, not a second flow.
    d.replace(lf(2), vec![in_table(3, 2), in_table(200, 2)]);
    assert_eq!(d.len_by_table()[3], 1);
    assert_eq!(d.len_by_table()[40], 1);
    assert_eq!(d.len_by_table()[200], 1);
    assert_eq!(d.len_by_table(), counted(&d));
    d.remove(lf(1));
    assert_eq!(d.len_by_table()[3], 1, "lf(2) still wants the table-3 key");
    assert_eq!(d.len_by_table()[40], 0);
    d.replace(lf(2), vec![in_table(0, 3)]);
    assert_eq!(d.len_by_table(), counted(&d));
    assert_eq!(d.len_by_table().iter().sum::<usize>(), d.len());
    d.remove(lf(2));
    assert!(d.len_by_table().iter().all(|n| *n == 0));
}

/// A flow that learns with `delete_learned` is replaced by a delete and an add, not
/// modified: only a delete makes the switch drop the flows it learned.
#[test]
fn a_learning_flow_is_replaced_not_modified() {
    use crate::lflow::of::LearnBuilder;
    let learn = |table| LearnBuilder::new(table).delete_learned().build();
    let batch_ops = |d: &FlowTable, b: &FlowBatch| -> Vec<(usize, FlowModCommand)> {
        d.batch_ops(b, 0)
            .map(|(after, o)| (after, o.command))
            .collect()
    };
    let mut d = FlowTable::new();
    d.replace(lf(1), vec![flow(1, vec![learn(69)])]);
    d.commit();
    d.replace(lf(1), vec![flow(1, vec![learn(70)])]);
    let b = d.take_batch();
    assert_eq!(
        batch_ops(&d, &b),
        [(0, FlowModCommand::DeleteStrict), (1, FlowModCommand::Add)]
    );
    d.commit_batch(b);
    // Other flows are still modified in place.
    let mut d = FlowTable::new();
    d.replace(lf(2), vec![flow(2, vec![resubmit(9)])]);
    d.commit();
    d.replace(lf(2), vec![flow(2, vec![resubmit(10)])]);
    let b = d.take_batch();
    assert_eq!(batch_ops(&d, &b), [(1, FlowModCommand::ModifyStrict)]);
}
