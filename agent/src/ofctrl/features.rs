//! The feature probe connection, as ovn-controller keeps one beside its flow and pinctrl
//! connections: on each new session it asks the switch what its meters can do
//! (`OFPMP_METER_FEATURES`) and reports a change of meter support; the session stays up
//! (probing every 5 s and answering the switch's echo requests) so that the next switch
//! restart is seen.

use std::time::Duration;

use openflow::conn::{connect, ConnError, Handle};
use openflow::wire::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
use openflow::wire::Message;
use tokio::sync::watch;

/// ovn-controller's probe interval on this connection.
const PROBE_INTERVAL: Duration = Duration::from_secs(5);

/// The running probe: whether the datapath has meters (`None` until the switch said).
pub struct FeatureProbe {
    pub meter_support: watch::Receiver<Option<bool>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FeatureProbe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Connects to `target` (`unix:<rundir>/<bridge>.mgmt`) and keeps probing.
pub fn spawn(target: &str) -> Result<FeatureProbe, ConnError> {
    let mut cfg = openflow::conn::client::ClientConfig::default();
    cfg.session.probe_interval = PROBE_INTERVAL;
    let (conn, handle, mut unsolicited) = connect(target, cfg)?;
    let (tx, rx) = watch::channel(None);
    let target = target.to_owned();
    let task = tokio::spawn(async move {
        let run = tokio::spawn(conn.run());
        // Nothing asynchronous on this connection is ours to handle.
        let drain = tokio::spawn(async move { while unsolicited.recv().await.is_some() {} });
        probe(&target, &handle, &tx).await;
        run.abort();
        drain.abort();
    });
    Ok(FeatureProbe {
        meter_support: rx,
        task,
    })
}

async fn probe(target: &str, handle: &Handle, tx: &watch::Sender<Option<bool>>) {
    let mut state = handle.state();
    loop {
        let Ok(session) = handle.wait_connected().await else {
            return;
        };
        tracing::info!(target: "features", "{target}: connected");
        let request = Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::MeterFeatures,
        });
        match handle.request(session, &request).await {
            Ok(replies) => {
                let max_meter = replies.into_iter().find_map(|r| match r.body {
                    Message::MultipartReply(m) => match m.body {
                        MultipartReplyBody::MeterFeatures(f) => Some(f.max_meter),
                        _ => None,
                    },
                    _ => None,
                });
                let supported = max_meter.is_some_and(|m| m > 0);
                if *tx.borrow() != Some(supported) {
                    let text = if supported {
                        "supported"
                    } else {
                        "not supported"
                    };
                    tracing::info!(target: "features", "OVS Feature: meter_support, state: {text}");
                    tx.send_replace(Some(supported));
                }
            }
            Err(e) => tracing::debug!(target: "features", "meter features request: {e}"),
        }
        // Until this session ends.
        while *state.borrow() == Some(session) {
            if state.changed().await.is_err() {
                return;
            }
        }
    }
}
