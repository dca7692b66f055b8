//! Handling of incoming messages: requests, notifications, responses.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{parse, Driver, End, Pending, Phase, Session, SERVER_DB};
use crate::client::{ClientError, Event};
use crate::jsonrpc::{encode_response, Incoming};
use crate::transaction::TxnError;

impl Driver {
    pub(super) async fn handle_frame(&mut self, s: &mut Session, frame: &[u8]) -> Result<(), End> {
        let msg = match Incoming::decode(frame) {
            Ok(m) => m,
            Err(e) => {
                self.stat(|st| st.bad_messages += 1);
                return Err(End::Protocol(e.to_string()));
            }
        };
        match msg {
            Incoming::Request { id, method, params } => {
                if method == "echo" {
                    let params: Value = serde_json::from_str(params.get()).unwrap_or(Value::Null);
                    let bytes =
                        encode_response(params, id).map_err(|e| End::Protocol(e.to_string()))?;
                    s.write(&bytes).await?;
                } else {
                    tracing::debug!(%method, "ignoring request from server");
                }
                Ok(())
            }
            Incoming::Notification { method, params } => {
                self.notification(s, &method, params).await
            }
            Incoming::Response { id, outcome } => {
                let Some(pending) = id.as_u64().and_then(|n| s.pending.remove(&n)) else {
                    tracing::debug!(%id, "reply to an unknown request");
                    return Ok(());
                };
                self.response(s, pending, outcome).await
            }
        }
    }

    async fn notification(
        &mut self,
        s: &mut Session,
        method: &str,
        params: &RawValue,
    ) -> Result<(), End> {
        match method {
            "update2" => {
                let (monid, updates): (Value, &RawValue) = parse(params)?;
                if monid == json!(["monid", SERVER_DB]) {
                    s.server
                        .apply_update(updates)
                        .map_err(|e| End::Protocol(e.to_string()))?;
                    return self.check_server(s);
                }
                self.stat(|st| st.updates += 1);
                self.emit(Event::Update(updates.to_owned())).await
            }
            "update3" => {
                let (_monid, txn_id, updates): (Value, String, &RawValue) = parse(params)?;
                self.monitor.on_update3(&txn_id);
                self.stat(|st| st.updates += 1);
                self.emit(Event::Update(updates.to_owned())).await
            }
            "monitor_canceled" => Err(End::Protocol("server canceled the monitor".into())),
            _ => {
                tracing::debug!(%method, "ignoring notification");
                Ok(())
            }
        }
    }

    async fn response(
        &mut self,
        s: &mut Session,
        pending: Pending,
        outcome: Result<&RawValue, Value>,
    ) -> Result<(), End> {
        match pending {
            Pending::ServerMonitor => {
                match outcome {
                    Ok(updates) => {
                        s.server
                            .apply_snapshot(updates)
                            .map_err(|e| End::Protocol(e.to_string()))?;
                        self.check_server(s)?;
                    }
                    // A server without _Server (very old): treat as standalone, and ask
                    // for the schema itself (to monitor and write only the columns it has).
                    Err(e) => {
                        tracing::debug!(error = %e, "no _Server database");
                        let db = self.config.database.clone();
                        return s.send("get_schema", json!([db]), Pending::GetSchema).await;
                    }
                }
                self.start_data_monitor(s, true).await
            }
            Pending::GetSchema => {
                match outcome {
                    Ok(raw) => s.schema_text = Some(raw.get().to_owned()),
                    Err(e) => tracing::debug!(error = %e, "get_schema refused"),
                }
                self.start_data_monitor(s, true).await
            }
            Pending::Monitor { since } => self.monitor_reply(s, since, outcome).await,
            Pending::CondChange => {
                match outcome {
                    Ok(_) => {
                        self.monitor.on_change_acked();
                        self.stat(|st| st.condition_changes_acked += 1);
                        let seq = self.monitor.acked_seqno();
                        self.emit(Event::ConditionsAcked(seq)).await?;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "monitor_cond_change refused");
                        if let Some(seqno) = self.monitor.on_change_failed() {
                            self.emit(Event::ConditionsRefused {
                                seqno,
                                error: e.to_string(),
                            })
                            .await?;
                        }
                    }
                }
                self.send_condition_change(s).await
            }
            Pending::Transact(txn, reply) => {
                let result = match outcome {
                    Ok(raw) => serde_json::from_str::<Value>(raw.get())
                        .map_err(|e| TxnError::Malformed(e.to_string()))
                        .and_then(|v| txn.decode_reply(&v)),
                    Err(e) => Err(TxnError::Rpc(e.to_string())),
                };
                let _ = reply.send(result);
                Ok(())
            }
            Pending::Request(reply) => {
                let result = match outcome {
                    Ok(raw) => serde_json::from_str(raw.get())
                        .map_err(|e| ClientError::Server(e.to_string())),
                    Err(e) => Err(ClientError::Server(e.to_string())),
                };
                let _ = reply.send(result);
                Ok(())
            }
            Pending::Ignore => Ok(()),
        }
    }

    async fn monitor_reply(
        &mut self,
        s: &mut Session,
        since: bool,
        outcome: Result<&RawValue, Value>,
    ) -> Result<(), End> {
        let result = match outcome {
            Ok(r) => r,
            Err(e) if since => {
                tracing::info!(error = %e, "monitor_cond_since refused, falling back to monitor_cond");
                self.monitor.on_disconnect();
                self.monitor.reset_resume();
                return self.start_data_monitor(s, false).await;
            }
            Err(e) => return Err(End::Protocol(format!("monitor_cond failed: {e}"))),
        };
        let (found, txn_id, updates) = if since {
            let (found, txn_id, updates): (bool, String, &RawValue) = parse(result)?;
            (found, Some(txn_id), updates)
        } else {
            (false, None, result)
        };
        self.monitor.on_monitor_reply(txn_id);
        if found {
            s.resumed = true;
            self.stat(|st| st.resumed += 1);
            self.emit(Event::Update(updates.to_owned())).await?;
        } else {
            self.stat(|st| st.snapshots += 1);
            self.emit(Event::Snapshot(updates.to_owned())).await?;
        }
        s.phase = Phase::Monitoring;
        self.tls.connected();
        self.connections += 1;
        self.stat(|st| {
            st.connections += 1;
            st.connected = true;
        });
        s.send("set_db_change_aware", json!([true]), Pending::Ignore)
            .await?;
        let event = Event::Connected {
            remote: s.remote.clone(),
            resumed: s.resumed,
            connection: self.connections,
            missing_columns: s.missing_columns.clone(),
        };
        self.emit(event).await?;
        let seq = self.monitor.acked_seqno();
        self.emit(Event::ConditionsAcked(seq)).await?;
        self.send_condition_change(s).await?;
        while let Some(cmd) = self.queued.pop_front() {
            self.command(s, cmd).await?;
        }
        Ok(())
    }
}
