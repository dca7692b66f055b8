//! Dump the flow table (or the groups) of a switch through our OpenFlow 1.5 connection,
//! one line per entry, in `ovs-ofctl dump-flows` / `dump-groups` syntax (no statistics).
//!
//! Usage: `ofdump SOCKET [flows|groups] [--no-stats]`; with `--no-stats` flows print as
//! `ovs-ofctl dump-flows --no-stats` does (zero cookie and table left out).

use std::process::ExitCode;

use openflow::conn::client::ClientConfig;
use openflow::conn::connect;
use openflow::text::Flow;
use openflow::wire::{
    FlowStatsRequest, Message, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(sock) = args.first() else {
        eprintln!("usage: ofdump SOCKET [flows|groups]");
        return ExitCode::from(2);
    };
    let what = args.get(1).map_or("flows", String::as_str);
    let no_stats = args.iter().any(|a| a == "--no-stats");
    let target = if sock.contains(':') {
        sock.clone()
    } else {
        format!("unix:{sock}")
    };
    let cfg = ClientConfig {
        reconnect: false,
        ..ClientConfig::default()
    };
    let (conn, handle, _asyncs) = match connect(&target, cfg) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ofdump: {e}");
            return ExitCode::from(1);
        }
    };
    let task = tokio::spawn(conn.run());
    let body = match what {
        "flows" => MultipartRequestBody::FlowDesc(FlowStatsRequest::default()),
        "groups" => MultipartRequestBody::GroupDesc(0xffff_fffc),
        _ => {
            eprintln!("ofdump: unknown table `{what}`");
            return ExitCode::from(2);
        }
    };
    let result = async {
        let sid = handle.wait_connected().await?;
        handle
            .request(
                sid,
                &Message::MultipartRequest(MultipartRequest { flags: 0, body }),
            )
            .await
    }
    .await;
    drop(handle);
    let _ = task.await;
    let parts = match result {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ofdump: {e}");
            return ExitCode::from(1);
        }
    };
    for part in parts {
        match part.body {
            Message::MultipartReply(r) => match r.body {
                MultipartReplyBody::FlowDesc(v) => {
                    for fd in v {
                        let f = Flow::from_flow_desc(&fd);
                        if no_stats {
                            println!(" {}", f.to_no_stats_string());
                        } else {
                            println!(" {f}");
                        }
                    }
                }
                MultipartReplyBody::GroupDesc(v) => {
                    for g in v {
                        println!(" {g}");
                    }
                }
                _ => {}
            },
            other => {
                eprintln!("ofdump: unexpected reply {:?}", other.kind());
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
