//! A reply value, independent of the protocol version it will be written in.
//!
//! The encoder decides how each variant looks in RESP2 and RESP3 (a `Map` is a flat
//! array in RESP2, a `Null` is `$-1` there and `_` in RESP3, and so on), so command code
//! builds one `Frame` and never branches on the client's protocol.

use bytes::Bytes;

use super::bulks::EncodedBulks;

/// Equality is reply equality: an [`EncodedBulks`] equals the `Array` of `Bulk`s it
/// encodes, since both are the same bytes on the wire in either protocol.
#[derive(Clone, Debug)]
pub enum Frame {
    /// `+OK`
    Simple(Bytes),
    /// `-ERR message`: the bytes hold the whole line after '-', error code included.
    Error(Bytes),
    Integer(i64),
    Bulk(Bytes),
    /// A missing bulk string (`$-1` in RESP2).
    Null,
    /// A missing array (`*-1` in RESP2).
    NullArray,
    Array(Vec<Frame>),
    /// An array of bulk strings already encoded (the same bytes in RESP2 and RESP3):
    /// long range replies, built without a `Frame` per element.
    Bulks(EncodedBulks),
    /// Key/value pairs (a flat array in RESP2).
    Map(Vec<(Frame, Frame)>),
    /// Pairs that may repeat (HRANDFIELD ... WITHVALUES): an array of two-element
    /// arrays in RESP3, a flat array in RESP2.
    Pairs(Vec<(Frame, Frame)>),
    /// Key/value pairs that RESP2 shows as an array of two-element arrays (XREAD's and
    /// XREADGROUP's reply: a map in RESP3).
    PairMap(Vec<(Frame, Frame)>),
    /// An unordered collection (an array in RESP2).
    Set(Vec<Frame>),
    /// A double (a bulk string in RESP2).
    Double(f64),
    /// A double already written as text (GEOPOS's coordinates, written as Redis writes
    /// a long double: 17 decimals): a bulk string in RESP2, `,text` in RESP3.
    DoubleText(Bytes),
    /// A boolean (the integer 1 or 0 in RESP2).
    Boolean(bool),
    /// Verbatim text with a three-letter format, e.g. `txt` (a bulk string in RESP2).
    Verbatim(&'static str, Bytes),
    /// Out-of-band data (Pub/Sub messages and subscription replies): `>` in RESP3, an
    /// array in RESP2.
    Push(Vec<Frame>),
    /// Several replies to one command, sent back to back (SUBSCRIBE answers once per
    /// channel).
    Replies(Vec<Frame>),
}

impl Frame {
    pub const fn ok() -> Frame {
        Frame::Simple(Bytes::from_static(b"OK"))
    }

    pub fn simple(text: &'static str) -> Frame {
        Frame::Simple(Bytes::from_static(text.as_bytes()))
    }

    /// An error reply; `text` starts with the error code (`ERR`, `WRONGTYPE`, ...).
    pub fn error(text: impl Into<String>) -> Frame {
        Frame::Error(Bytes::from(text.into()))
    }

    pub fn static_error(text: &'static str) -> Frame {
        Frame::Error(Bytes::from_static(text.as_bytes()))
    }

    pub fn bulk(bytes: impl Into<Bytes>) -> Frame {
        Frame::Bulk(bytes.into())
    }

    pub fn bulk_str(text: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(text.as_bytes()))
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}

impl PartialEq for Frame {
    fn eq(&self, other: &Frame) -> bool {
        use Frame::*;
        match (self, other) {
            (Bulks(a), Bulks(b)) => a == b,
            (Bulks(bulks), Array(items)) | (Array(items), Bulks(bulks)) => {
                bulks.len() == items.len() && bulks.iter().zip(items).all(|(b, item)| matches!(item, Bulk(i) if *i == b))
            }
            (Simple(a), Simple(b)) | (Error(a), Error(b)) | (Bulk(a), Bulk(b)) => a == b,
            (Integer(a), Integer(b)) => a == b,
            (Null, Null) | (NullArray, NullArray) => true,
            (Array(a), Array(b)) | (Set(a), Set(b)) | (Push(a), Push(b)) | (Replies(a), Replies(b)) => a == b,
            (Map(a), Map(b)) | (Pairs(a), Pairs(b)) => a == b,
            (Double(a), Double(b)) => a == b,
            (DoubleText(a), DoubleText(b)) => a == b,
            (Boolean(a), Boolean(b)) => a == b,
            (Verbatim(fa, a), Verbatim(fb, b)) => fa == fb && a == b,
            _ => false,
        }
    }
}
