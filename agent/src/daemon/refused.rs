//! Southbound transactions that the server refused (an RBAC role that does not allow
//! the write, a constraint the rows break): the refusal is logged with the server's
//! reason and counted, and the loop sends no Southbound transaction again until an
//! input changes. Sending the same refused transaction again would only be refused
//! again, in a loop as fast as the server answers.

use sbclient::TxnError;

/// Whether the server looked at the transaction and said no (as opposed to a conflict,
/// which a new plan resolves, or a lost connection).
pub fn is_refusal(error: &TxnError) -> bool {
    matches!(
        error,
        TxnError::Operation { .. } | TxnError::Commit { .. } | TxnError::Rpc(_)
    )
}

/// The server's error as OVS prints it (`{"details":"...","error":"..."}`, JSON-escaped),
/// so that scripts that grep ovn-controller's log for it find it in ours.
pub fn server_error(error: &TxnError) -> String {
    match error {
        TxnError::Operation { error, details, .. } | TxnError::Commit { error, details } => {
            serde_json::json!({ "details": details, "error": error }).to_string()
        }
        other => other.to_string(),
    }
}

/// The last refusal, and the inputs it was made from.
#[derive(Debug, Default)]
pub struct Refusals {
    /// The input count (rows applied to the replicas) when the last refusal came.
    refused_at: Option<u64>,
}

impl Refusals {
    /// Notes the result of a Southbound transaction made when the inputs were `inputs`.
    pub fn on_result(&mut self, result: &Result<(), TxnError>, inputs: u64) {
        match result {
            Ok(()) => self.refused_at = None,
            Err(e) if is_refusal(e) => {
                crate::coverage::SB_TXN_REFUSED.inc();
                crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_TXN, target: "main",
                    "transaction error: {} (not sent again until an input changes)", server_error(e));
                self.refused_at = Some(inputs);
            }
            Err(e) => tracing::info!(target: "main", "southbound transaction: {e}"),
        }
    }

    /// Whether a Southbound transaction may go out with the inputs at `inputs`.
    pub fn may_send(&mut self, inputs: u64) -> bool {
        match self.refused_at {
            Some(at) if at == inputs => {
                crate::coverage::SB_TXN_HELD.inc();
                false
            }
            _ => {
                self.refused_at = None;
                true
            }
        }
    }
}

/// What the engine plans from: the rows applied to its two replicas so far.
pub fn inputs(engine: &crate::engine::core::Engine) -> u64 {
    engine.inputs.sb.replica.stats().rows_applied + engine.inputs.ovs.stats().rows_applied
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_transaction_waits_for_new_input() {
        let mut r = Refusals::default();
        assert!(r.may_send(1));
        let denied = Err(TxnError::Operation {
            op_index: 0,
            error: "permission error".into(),
            details: "RBAC rules for client \"hv2\" role \"ovn-controller\" prohibit modification of table \"Chassis\".".into(),
        });
        r.on_result(&denied, 1);
        assert!(!r.may_send(1));
        assert!(!r.may_send(1));
        assert!(r.may_send(2));
        r.on_result(&denied, 2);
        r.on_result(&Ok(()), 2);
        assert!(r.may_send(2));
        r.on_result(&Err(TxnError::Conflict { op_index: 1 }), 3);
        assert!(r.may_send(3), "a conflict is planned again at once");
        r.on_result(&Err(TxnError::ConnectionLost), 3);
        assert!(r.may_send(3));
    }

    #[test]
    fn the_server_error_is_printed_as_ovs_prints_it() {
        let e = TxnError::Commit {
            error: "constraint violation".into(),
            details: "Transaction causes multiple rows in \"Encap\" table".into(),
        };
        assert_eq!(
            server_error(&e),
            r#"{"details":"Transaction causes multiple rows in \"Encap\" table","error":"constraint violation"}"#
        );
    }
}
