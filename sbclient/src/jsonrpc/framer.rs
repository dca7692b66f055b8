//! Incremental splitter of a byte stream into top-level JSON objects.
//!
//! OVSDB and unixctl JSON-RPC put messages back to back with no delimiter, so the
//! boundary of a message is the brace that closes its outermost object. The
//! splitter tracks string, escape and nesting state across reads and never looks
//! at a byte twice, so framing is linear in the size of the stream.
//! It does no I/O and never panics.

use thiserror::Error;

/// Why the stream cannot be framed. After an error the framer must be discarded
/// (the connection is broken).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A byte that cannot start a JSON-RPC message appeared between messages.
    #[error("unexpected byte 0x{byte:02x} at stream offset {offset} between messages")]
    Garbage { byte: u8, offset: u64 },
    /// A closing bracket appeared with nothing open.
    #[error("unbalanced closing bracket at stream offset {offset}")]
    Unbalanced { offset: u64 },
    /// A message grew past the configured limit.
    #[error("message exceeds {limit} bytes")]
    TooLarge { limit: usize },
}

/// The splitter. Feed bytes with [`Framer::push`], take messages with [`Framer::next_frame`].
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// Bytes before this offset belong to frames already handed out.
    consumed: usize,
    /// Bytes before this offset have been scanned.
    scanned: usize,
    /// Start of the message being scanned, if one has started.
    start: Option<usize>,
    depth: u32,
    in_string: bool,
    escape: bool,
    /// Stream offset of `buf[0]`, for error messages.
    base_offset: u64,
    max_frame: usize,
}

impl Default for Framer {
    fn default() -> Self {
        Self::new()
    }
}

impl Framer {
    /// A framer without a size limit.
    pub fn new() -> Self {
        Self::with_limit(usize::MAX)
    }

    /// A framer that rejects messages longer than `max_frame` bytes.
    pub fn with_limit(max_frame: usize) -> Self {
        Self {
            buf: Vec::new(),
            consumed: 0,
            scanned: 0,
            start: None,
            depth: 0,
            in_string: false,
            escape: false,
            base_offset: 0,
            max_frame,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Bytes buffered but not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.consumed
    }

    /// True if a message has started but is not complete.
    pub fn in_message(&self) -> bool {
        self.start.is_some()
    }

    /// Returns the next complete top-level value, or `None` if more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let mut i = self.scanned;
        let len = self.buf.len();
        while i < len {
            let byte = self.buf[i];
            if self.start.is_none() {
                match byte {
                    b' ' | b'\t' | b'\r' | b'\n' => {
                        i += 1;
                        self.consumed = i;
                        continue;
                    }
                    b'{' => {
                        self.start = Some(i);
                        self.depth = 1;
                        i += 1;
                        continue;
                    }
                    _ => {
                        return Err(FrameError::Garbage {
                            byte,
                            offset: self.base_offset + i as u64,
                        })
                    }
                }
            }
            if self.in_string {
                // Skip quickly over the body of a string.
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                match self.buf[i..len]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\')
                {
                    None => i = len,
                    Some(pos) => {
                        i += pos;
                        if self.buf[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err(FrameError::Unbalanced {
                            offset: self.base_offset + i as u64,
                        });
                    }
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Ok(Some(self.take_frame(i + 1)));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.scanned = i;
        if let Some(start) = self.start {
            if len - start > self.max_frame {
                return Err(FrameError::TooLarge {
                    limit: self.max_frame,
                });
            }
        }
        self.compact();
        Ok(None)
    }

    fn take_frame(&mut self, end: usize) -> Vec<u8> {
        let start = self.start.take().unwrap_or(self.consumed);
        if start == 0 {
            // Hand out the buffer itself and keep only the (usually short) tail.
            let tail = self.buf.split_off(end);
            self.base_offset += end as u64;
            self.consumed = 0;
            self.scanned = 0;
            return std::mem::replace(&mut self.buf, tail);
        }
        self.consumed = end;
        self.scanned = end;
        self.buf[start..end].to_vec()
    }

    /// Drops handed-out bytes once per read, so many small frames cost linear time.
    fn compact(&mut self) {
        if self.consumed == 0 {
            return;
        }
        let keep_from = self.start.unwrap_or(self.consumed).min(self.consumed);
        self.buf.drain(..keep_from);
        self.base_offset += keep_from as u64;
        self.consumed -= keep_from;
        self.scanned -= keep_from;
        if let Some(start) = self.start.as_mut() {
            *start -= keep_from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fmt::Write as _;

    fn split_all(chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut framer = Framer::new();
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk);
            while let Some(frame) = framer.next_frame()? {
                out.push(frame);
            }
        }
        Ok(out)
    }

    const SAMPLE: &str = r#"{"id":1,"method":"echo","params":["a}b","c\"}{","\\"]}  {"id":2,"result":[{"x":[1,2,{"y":"]"}]}],"error":null}
{"method":"update3","params":[["monid","OVN_Southbound"],"00000000-0000-0000-0000-000000000000",{}],"id":null}"#;

    fn expected() -> Vec<serde_json::Value> {
        serde_json::Deserializer::from_str(SAMPLE)
            .into_iter::<serde_json::Value>()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    #[test]
    fn splits_back_to_back_messages() {
        let frames = split_all(&[SAMPLE.as_bytes()]).unwrap();
        let parsed: Vec<serde_json::Value> = frames
            .iter()
            .map(|f| serde_json::from_slice(f).unwrap())
            .collect();
        assert_eq!(parsed, expected());
    }

    #[test]
    fn splits_at_every_position() {
        let bytes = SAMPLE.as_bytes();
        for cut in 0..=bytes.len() {
            let frames = split_all(&[&bytes[..cut], &bytes[cut..]]).unwrap();
            assert_eq!(frames.len(), 3, "cut at {cut}");
            let parsed: Vec<serde_json::Value> = frames
                .iter()
                .map(|f| serde_json::from_slice(f).unwrap())
                .collect();
            assert_eq!(parsed, expected(), "cut at {cut}");
        }
    }

    #[test]
    fn byte_by_byte() {
        let chunks: Vec<&[u8]> = SAMPLE.as_bytes().chunks(1).collect();
        assert_eq!(split_all(&chunks).unwrap().len(), 3);
    }

    #[test]
    fn huge_object_in_small_reads() {
        let mut text = String::from(r#"{"id":7,"result":["#);
        for n in 0..200_000 {
            if n > 0 {
                text.push(',');
            }
            write!(text, r#"{{"k":"v{n}\"}}{{","n":[{n}]}}"#).unwrap();
        }
        text.push_str("],\"error\":null}{\"id\":8}");
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(4096).collect();
        let frames = split_all(&chunks).unwrap();
        assert_eq!(frames.len(), 2);
        let first: serde_json::Value = serde_json::from_slice(&frames[0]).unwrap();
        assert_eq!(first["result"].as_array().unwrap().len(), 200_000);
        assert_eq!(frames[1], b"{\"id\":8}");
    }

    #[test]
    fn garbage_between_messages_is_an_error() {
        let err = split_all(&[b"{\"id\":1} x{}"]).unwrap_err();
        assert_eq!(
            err,
            FrameError::Garbage {
                byte: b'x',
                offset: 9
            }
        );
        assert!(matches!(
            split_all(&[b"}"]),
            Err(FrameError::Garbage { .. })
        ));
        assert!(matches!(
            split_all(&[b"\"str\""]),
            Err(FrameError::Garbage { .. })
        ));
    }

    #[test]
    fn size_limit() {
        let mut framer = Framer::with_limit(10);
        framer.push(b"{\"aaaaaaaaaaaaaaaaaa");
        assert_eq!(framer.next_frame(), Err(FrameError::TooLarge { limit: 10 }));
    }

    #[test]
    fn incomplete_message_is_kept() {
        let mut framer = Framer::new();
        framer.push(b"{\"a\":\"}\\");
        assert_eq!(framer.next_frame().unwrap(), None);
        assert!(framer.in_message());
        framer.push(b"\"\"}");
        assert_eq!(framer.next_frame().unwrap().unwrap(), b"{\"a\":\"}\\\"\"}");
        assert_eq!(framer.buffered(), 0);
    }

    proptest! {
        #[test]
        fn any_split_gives_same_frames(
            values in proptest::collection::vec(arb_json(), 1..5),
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let text: String = values.iter().map(|v| serde_json::json!({"v": v}).to_string()).collect::<Vec<_>>().join(" \n");
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for p in points { chunks.push(&bytes[prev..p]); prev = p; }
            chunks.push(&bytes[prev..]);
            let frames = split_all(&chunks).unwrap();
            prop_assert_eq!(frames.len(), values.len());
            for (frame, value) in frames.iter().zip(&values) {
                let parsed: serde_json::Value = serde_json::from_slice(frame).unwrap();
                prop_assert_eq!(&parsed["v"], value);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut framer = Framer::new();
            for chunk in data.chunks(7) {
                framer.push(chunk);
                while let Ok(Some(_)) = framer.next_frame() {}
            }
        }
    }

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[\\\\\"{}\\[\\] a-z\u{e9}]{0,12}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z\"{}]{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
