//! Maelstrom's wire format: one JSON object per line,
//! `{"src": "n1", "dest": "c4", "body": {"type": "...", "msg_id": 7, "in_reply_to": 3, ...}}`.
//!
//! Owns parsing a line into an [`Envelope`] and writing one back, and the shapes of the
//! bodies every part of this crate shares (replies, errors, Meridian's peer frames).
//! Knows nothing of workloads, shards or replication; never does I/O.

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The longest line accepted from the outside (a Meridian anti-entropy frame of full
/// key states, base64-encoded, is the largest thing that travels).
pub const LINE_BYTES_MAX: usize = 64 << 20;

/// The `type` of a body that carries one Meridian replication frame between nodes.
pub const PEER_FRAME_TYPE: &str = "meridian_repl";

/// Maelstrom's error codes (its `error` bodies); the ones this crate answers.
pub mod code {
    /// Indefinite: the request may or may not have taken effect.
    pub const TIMEOUT: i64 = 0;
    pub const NOT_SUPPORTED: i64 = 10;
    /// Definite: the request did not take effect.
    pub const TEMPORARILY_UNAVAILABLE: i64 = 11;
    pub const MALFORMED_REQUEST: i64 = 12;
    /// Indefinite.
    pub const CRASH: i64 = 13;
    pub const KEY_DOES_NOT_EXIST: i64 = 20;
    pub const PRECONDITION_FAILED: i64 = 22;

    /// Whether an error with this code says the request certainly did not happen.
    pub fn is_definite(code: i64) -> bool {
        !matches!(code, TIMEOUT | CRASH)
    }
}

/// One Maelstrom message.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub src: String,
    pub dest: String,
    pub body: Map<String, Value>,
}

impl Envelope {
    /// Parse one line; `Err` says why it is not a Maelstrom message.
    pub fn parse(line: &str) -> Result<Envelope, String> {
        if line.len() > LINE_BYTES_MAX {
            return Err(format!("line of {} bytes, more than {LINE_BYTES_MAX}", line.len()));
        }
        let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(mut object) = value else { return Err("not a JSON object".into()) };
        let field = |object: &mut Map<String, Value>, name: &str| match object.remove(name) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(format!("no string field {name:?}")),
        };
        let src = field(&mut object, "src")?;
        let dest = field(&mut object, "dest")?;
        let Some(Value::Object(body)) = object.remove("body") else { return Err("no object field \"body\"".into()) };
        if !matches!(body.get("type"), Some(Value::String(_))) {
            return Err("the body has no string \"type\"".into());
        }
        Ok(Envelope { src, dest, body })
    }

    /// The line to write (no newline).
    pub fn to_line(&self) -> String {
        json!({"src": self.src, "dest": self.dest, "body": self.body}).to_string()
    }

    pub fn kind(&self) -> &str {
        self.body.get("type").and_then(Value::as_str).unwrap_or("")
    }

    pub fn msg_id(&self) -> Option<u64> {
        self.body.get("msg_id").and_then(Value::as_u64)
    }

    pub fn in_reply_to(&self) -> Option<u64> {
        self.body.get("in_reply_to").and_then(Value::as_u64)
    }

    /// A body field as an integer.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.body.get(name).and_then(Value::as_i64)
    }
}

/// A body of `kind` with these fields.
pub fn body(kind: &str, fields: Value) -> Map<String, Value> {
    let mut map = match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    map.insert("type".into(), Value::String(kind.into()));
    map
}

/// Maelstrom's error body.
pub fn error_body(code: i64, text: impl Into<String>) -> Map<String, Value> {
    body("error", json!({"code": code, "text": text.into()}))
}

/// A peer frame's body: the frame's bytes in base64, the link epoch it was written on,
/// and its place among the batches of that epoch (0 for frames that are not batches).
/// Epochs and places stand in for the TCP connection the server's links run on: see
/// `link`.
pub fn peer_frame_body(frame: &[u8], epoch: u64, place: u64) -> Map<String, Value> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(frame);
    body(PEER_FRAME_TYPE, json!({"frame": encoded, "epoch": epoch, "place": place}))
}

/// A peer frame body's bytes, epoch and place.
pub fn parse_peer_frame(body: &Map<String, Value>) -> Result<(Vec<u8>, u64, u64), String> {
    let encoded = body.get("frame").and_then(Value::as_str).ok_or("a peer frame without \"frame\"")?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|e| format!("peer frame not base64: {e}"))?;
    let epoch = body.get("epoch").and_then(Value::as_u64).ok_or("a peer frame without \"epoch\"")?;
    let place = body.get("place").and_then(Value::as_u64).ok_or("a peer frame without \"place\"")?;
    Ok((bytes, epoch, place))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_survives_a_round_trip_through_its_line() {
        let line = r#"{"src":"c1","dest":"n0","body":{"type":"add","msg_id":4,"element":7}}"#;
        let envelope = Envelope::parse(line).unwrap();
        assert_eq!((envelope.kind(), envelope.msg_id(), envelope.int("element")), ("add", Some(4), Some(7)));
        assert_eq!(Envelope::parse(&envelope.to_line()).unwrap(), envelope);
    }

    #[test]
    fn lines_that_are_not_maelstrom_messages_are_refused_with_a_reason() {
        for line in ["", "[]", r#"{"src":"a","dest":"b"}"#, r#"{"src":"a","dest":"b","body":{"msg_id":1}}"#] {
            assert!(Envelope::parse(line).is_err(), "{line}");
        }
    }

    #[test]
    fn a_peer_frame_keeps_its_bytes_epoch_and_place() {
        let body = peer_frame_body(&[0, 1, 255], 3, 9);
        assert_eq!(parse_peer_frame(&body).unwrap(), (vec![0, 1, 255], 3, 9));
    }
}
