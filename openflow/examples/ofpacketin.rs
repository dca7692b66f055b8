//! Receive `NXT_PACKET_IN2` from a switch through our connection and resume paused
//! pipelines with `NXT_RESUME`. Prints `ready` once packet-in2 is enabled, then one line
//! per packet-in: `packet_in2 table=N cookie=0x.. userdata=.. paused=yes|no len=N
//! metadata=<match>`. Exits after COUNT packet-ins (or after 20 s).
//!
//! Usage: `ofpacketin SOCKET COUNT`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use openflow::conn::client::ClientConfig;
use openflow::conn::connect;
use openflow::wire::{Message, PacketIn2, PacketInProp, SetPacketInFormat, SwitchConfig};

fn describe(pi: &PacketIn2) -> String {
    let mut table = 0;
    let mut cookie = 0;
    let mut paused = false;
    for p in &pi.props {
        match p {
            PacketInProp::TableId(t) => table = *t,
            PacketInProp::Cookie(c) => cookie = *c,
            PacketInProp::Continuation(_) => paused = true,
            _ => {}
        }
    }
    let userdata: Vec<String> = pi
        .userdata()
        .unwrap_or_default()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "packet_in2 table={table} cookie={cookie:#x} userdata={} paused={} len={} metadata={}",
        userdata.join("."),
        if paused { "yes" } else { "no" },
        pi.packet().map_or(0, <[u8]>::len),
        pi.metadata().map(ToString::to_string).unwrap_or_default()
    )
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(sock), Some(count)) = (
        args.first(),
        args.get(1).and_then(|c| c.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: ofpacketin SOCKET COUNT");
        return ExitCode::from(2);
    };
    let target = if sock.contains(':') {
        sock.clone()
    } else {
        format!("unix:{sock}")
    };
    let (conn, handle, mut asyncs) = match connect(&target, ClientConfig::default()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ofpacketin: {e}");
            return ExitCode::from(1);
        }
    };
    tokio::spawn(conn.run());
    let setup = async {
        let sid = handle.wait_connected().await?;
        handle
            .send(
                sid,
                &[
                    // Service connections (such as br-int.mgmt) get no asynchronous messages
                    // until they set a nonzero miss_send_len.
                    Message::SetConfig(SwitchConfig {
                        flags: 0,
                        miss_send_len: u16::MAX,
                    }),
                    Message::SetPacketInFormat(SetPacketInFormat { format: 2 }),
                ],
            )
            .await?;
        handle.barrier(sid).await?;
        Ok::<_, openflow::conn::ConnError>(sid)
    };
    // Resumes go to the session the packet-ins came from; a reconnect ends the run.
    let sid = match setup.await {
        Ok(sid) => sid,
        Err(e) => {
            eprintln!("ofpacketin: {e}");
            return ExitCode::from(1);
        }
    };
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut seen = 0;
    while seen < count {
        let Ok(Some(msg)) = tokio::time::timeout(Duration::from_secs(20), asyncs.recv()).await
        else {
            eprintln!("ofpacketin: only {seen} of {count} packet-ins");
            return ExitCode::from(1);
        };
        let Message::PacketIn2(pi) = msg.body else {
            continue;
        };
        println!("{}", describe(&pi));
        let _ = std::io::stdout().flush();
        seen += 1;
        // A paused pipeline continues when the packet, metadata and continuation go back.
        if let Some(resume) = pi.to_resume() {
            if let Err(e) = handle.send(sid, &[Message::Resume(resume)]).await {
                eprintln!("ofpacketin: {e}");
                return ExitCode::from(1);
            }
        }
    }
    match handle.barrier(sid).await {
        Ok(errors) if errors.is_empty() => ExitCode::SUCCESS,
        Ok(errors) => {
            eprintln!("ofpacketin: switch errors: {errors:?}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("ofpacketin: {e}");
            ExitCode::from(1)
        }
    }
}
