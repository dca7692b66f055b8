//! Capture golden vectors: a tiny fake switch on a Unix socket that the real
//! `ovs-ofctl --no-names -O OpenFlow15 add-flow/add-group/add-meter` talks to.
//!
//! Usage: `cargo run -p openflow --example capture_golden -- INPUT > OUTPUT`
//! where INPUT has lines `flow <add-flow text>`, `group <add-group text>` or
//! `meter <add-meter text>`. OUTPUT is `# <kind> <text>` followed by the hex of every
//! modification message ovs-ofctl sent for it.

use std::io::{BufRead, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Command;

use openflow::wire::{Echo, Empty, FeaturesReply, Hello, Message, OfpMessage};

fn read_msg(s: &mut UnixStream) -> Option<Vec<u8>> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).ok()?;
    let len = u16::from_be_bytes([h[2], h[3]]) as usize;
    let mut body = vec![0u8; len.saturating_sub(8)];
    s.read_exact(&mut body).ok()?;
    let mut all = h.to_vec();
    all.extend(body);
    Some(all)
}

fn send(s: &mut UnixStream, xid: u32, m: Message) {
    let _ = s.write_all(&OfpMessage::new(xid, m).to_bytes().unwrap());
}

/// Serve one ovs-ofctl connection; return the raw modification messages it sent.
fn serve(mut s: UnixStream) -> Vec<Vec<u8>> {
    let mut mods = Vec::new();
    send(&mut s, 0, Message::Hello(Hello::with_versions(&[6])));
    while let Some(raw) = read_msg(&mut s) {
        let Ok(m) = OfpMessage::decode(&raw) else {
            mods.push(raw);
            continue;
        };
        match m.body {
            Message::FeaturesRequest(_) => send(
                &mut s,
                m.xid,
                Message::FeaturesReply(FeaturesReply {
                    datapath_id: 1,
                    n_tables: 254,
                    ..FeaturesReply::default()
                }),
            ),
            Message::EchoRequest(e) => {
                send(&mut s, m.xid, Message::EchoReply(Echo { data: e.data }));
            }
            Message::BarrierRequest(_) => send(&mut s, m.xid, Message::BarrierReply(Empty)),
            Message::Hello(_) => {}
            _ => mods.push(raw),
        }
    }
    mods
}

fn main() {
    let input = std::env::args()
        .nth(1)
        .expect("usage: capture_golden INPUT");
    let dir = std::env::temp_dir().join(format!("of-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let sock = dir.join("sw.sock");
    let listener = UnixListener::bind(&sock).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let file = std::fs::File::open(&input).expect("open input");
    for line in std::io::BufReader::new(file).lines() {
        let line = line.expect("read");
        let Some((kind, text)) = line.split_once(' ') else {
            continue;
        };
        let cmd = match kind {
            "flow" => "add-flow",
            "group" => "add-group",
            "meter" => "add-meter",
            _ => continue,
        };
        let target = format!("unix:{}", sock.display());
        let mut child = Command::new("ovs-ofctl")
            .args(["--no-names", "-O", "OpenFlow15", cmd, &target, text])
            .spawn()
            .expect("ovs-ofctl");
        // ovs-ofctl may reject the text before connecting: do not wait for it forever.
        let conn = loop {
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Ok(Some(st)) = child.try_wait() {
                        panic!("ovs-ofctl exited ({st}) without connecting for: {text}");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        conn.set_nonblocking(false).expect("blocking");
        let mods = serve(conn);
        let status = child.wait().expect("wait");
        assert!(status.success(), "ovs-ofctl failed for: {text}");
        println!("# {kind} {text}");
        for m in mods {
            let hex = hex::encode(&m);
            println!("{hex}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
