//! A string key's stored value ([`StrVal`]: an integer when it is the canonical text
//! of one, else bytes) and how counters render as text. Part of `value`: the CRDT state
//! around it lives there.

use bytes::Bytes;

/// A stored string, kept as an integer when it is the canonical text of one (as Redis's
/// `int` encoding), so counters don't parse on every INCR; else its bytes in one
/// exact-size allocation. 16 bytes (asserted below): a `Bytes` handle was 32, and a
/// string key's entry holds one of these inline (issue 16's key memory). The price: a
/// value is always its own copy, so a reply or a delta copies the bytes instead of
/// sharing them (what replies of small values already did), and a value of
/// [`COPY_VALUE_BYTES_MAX`] bytes or more is copied once out of the read buffer that
/// was reserved for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StrVal {
    Int(i64),
    Raw(Box<[u8]>),
}

const _: () = assert!(std::mem::size_of::<StrVal>() == 16);

/// Values shorter than this are copied out of the connection's read buffer when
/// stored; longer ones had their buffer reserved for them alone, and are moved out of
/// it where the buffer allows (`Vec::from(Bytes)` takes a unique buffer whole).
pub const COPY_VALUE_BYTES_MAX: usize = 64 * 1024;

impl StrVal {
    /// A value of exactly these bytes (no integer detection: see [`StrVal::from_bytes`]).
    pub fn raw(bytes: impl AsRef<[u8]>) -> StrVal {
        StrVal::Raw(Box::from(bytes.as_ref()))
    }

    pub fn from_bytes(bytes: Bytes) -> StrVal {
        if bytes.len() < COPY_VALUE_BYTES_MAX {
            StrVal::from_slice(&bytes)
        } else {
            // Far past any integer's text.
            StrVal::Raw(Vec::from(bytes).into_boxed_slice())
        }
    }

    /// A stored copy of borrowed `bytes` (an integer when they are one's canonical
    /// text). For a command argument that stays with the command: cloning its `Bytes`
    /// to call [`StrVal::from_bytes`] costs two atomic reference-count updates and still
    /// copies, as the clone shares the read buffer.
    pub fn from_slice(bytes: &[u8]) -> StrVal {
        match parse_canonical_i64(bytes) {
            Some(n) => StrVal::Int(n),
            None => StrVal::raw(bytes),
        }
    }

    pub fn to_bytes(&self) -> Bytes {
        match self {
            StrVal::Int(n) => Bytes::from(itoa::Buffer::new().format(*n).to_owned()),
            StrVal::Raw(b) => Bytes::copy_from_slice(b),
        }
    }

    /// The value's bytes, taking an owned value's allocation (no copy).
    pub fn into_bytes(self) -> Bytes {
        match self {
            StrVal::Int(_) => self.to_bytes(),
            StrVal::Raw(b) => Bytes::from(b),
        }
    }

    /// The value's bytes for a reply (a copy: see [`StrVal`]).
    pub fn to_reply_bytes(&self) -> Bytes {
        self.to_bytes()
    }

    pub fn len(&self) -> usize {
        match self {
            StrVal::Int(n) => itoa::Buffer::new().format(*n).len(),
            StrVal::Raw(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value as an integer, if its text is one (Redis's `string2ll` rules).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            StrVal::Int(n) => Some(*n),
            StrVal::Raw(b) => parse_i64(b),
        }
    }

    /// The value as a float, if its text is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            StrVal::Int(n) => Some(*n as f64),
            StrVal::Raw(b) => parse_f64(b),
        }
    }
}

pub use crate::command::numbers::{parse_canonical_i64, parse_f64, parse_i64};

/// Render a float counter: at most 15 significant digits (hiding binary noise such as
/// 0.1 + 0.2), no exponent, no trailing zeros. Redis computes in 80-bit long double and
/// prints 17 decimals; for the values people add (decimal fractions) both print the same.
pub fn format_float(value: f64) -> String {
    debug_assert!(value.is_finite());
    if value == 0.0 {
        return "0".to_owned();
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (14 - magnitude).clamp(0, 340) as usize;
    let mut text = format!("{value:.decimals$}");
    if text.contains('.') {
        while text.ends_with('0') {
            text.pop();
        }
        if text.ends_with('.') {
            text.pop();
        }
    }
    if text == "-0" { "0".to_owned() } else { text }
}
