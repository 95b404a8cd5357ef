//! An array of bulk strings held already encoded ([`EncodedBulks`]), for replies that
//! list many elements: LRANGE, ZRANGE without scores.
//!
//! Such an array is the same bytes in RESP2 and RESP3 (`*N` then `$len` lines), so a
//! command can write its elements straight into one buffer instead of copying each one
//! into a `Bytes` and wrapping it in a `Frame`. A `ZRANGE key 0 99` reply is then one
//! allocation instead of a hundred and two, and the encoder copies it with one
//! `memcpy` (`perf` put a third of a pipelined ZRANGE's time on those allocations and
//! the per-element encoding).
//!
//! This module owns the encoded body's format; it must never know what a command means.
//! Whoever reads a reply's elements (SORT, scripts, tests) goes through
//! [`EncodedBulks::iter`], never through the raw bytes.

use bytes::{BufMut, Bytes, BytesMut};

/// `count` bulk strings, RESP-encoded back to back in `body` (`$3\r\nabc\r\n...`),
/// without the array's own `*count` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedBulks {
    count: usize,
    body: Bytes,
}

impl EncodedBulks {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded elements, as the encoder writes them after the `*count` line.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Each element's bytes, in order (slices of the one buffer: no copy).
    pub fn iter(&self) -> impl Iterator<Item = Bytes> + '_ {
        let mut at = 0;
        (0..self.count).map(move |_| {
            let (start, end) = bulk_at(&self.body, at);
            at = end + 2;
            self.body.slice(start..end)
        })
    }
}

/// Where the bulk string that starts at `at` keeps its bytes: `(first, past_last)`.
/// The body was written by [`EncodedBulksBuilder`], so its format is trusted; a
/// malformed body is a bug in this module and panics.
fn bulk_at(body: &[u8], at: usize) -> (usize, usize) {
    assert_eq!(body[at], b'$', "an encoded bulk starts with '$'");
    let mut length = 0usize;
    let mut i = at + 1;
    while body[i] != b'\r' {
        length = length * 10 + usize::from(body[i] - b'0');
        i += 1;
    }
    let start = i + 2;
    (start, start + length)
}

/// Writes an [`EncodedBulks`] element by element.
pub struct EncodedBulksBuilder {
    count: usize,
    body: BytesMut,
}

impl EncodedBulksBuilder {
    /// `elements` and `element_bytes` are estimates that size the one allocation:
    /// how many elements, and their bytes in all (each element adds a few bytes of
    /// header and line ends on top).
    pub fn with_capacity(elements: usize, element_bytes: usize) -> EncodedBulksBuilder {
        EncodedBulksBuilder { count: 0, body: BytesMut::with_capacity(element_bytes + elements * BULK_OVERHEAD_ESTIMATE) }
    }

    pub fn push(&mut self, element: &[u8]) {
        self.body.put_u8(b'$');
        self.body.put_slice(itoa::Buffer::new().format(element.len()).as_bytes());
        self.body.put_slice(b"\r\n");
        self.body.put_slice(element);
        self.body.put_slice(b"\r\n");
        self.count += 1;
    }

    /// An integer element, written as its decimal text (as Redis replies with an
    /// integer-encoded list element).
    pub fn push_integer(&mut self, value: i64) {
        self.push(itoa::Buffer::new().format(value).as_bytes());
    }

    pub fn finish(self) -> EncodedBulks {
        EncodedBulks { count: self.count, body: self.body.freeze() }
    }
}

/// `$`, up to three length digits and two line ends: what a short element adds.
const BULK_OVERHEAD_ESTIMATE: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_back_as_written() {
        let elements: Vec<Vec<u8>> = vec![b"".to_vec(), b"a".to_vec(), vec![b'\r'; 10], vec![b'x'; 1234], b"$5\r\n".to_vec()];
        let mut builder = EncodedBulksBuilder::with_capacity(2, 1);
        for e in &elements {
            builder.push(e);
        }
        builder.push_integer(-42);
        let bulks = builder.finish();
        assert_eq!(bulks.len(), elements.len() + 1);
        let read: Vec<Bytes> = bulks.iter().collect();
        assert_eq!(&read[..elements.len()], &elements.iter().map(|e| Bytes::from(e.clone())).collect::<Vec<_>>()[..]);
        assert_eq!(read[elements.len()], Bytes::from_static(b"-42"));
        assert!(bulks.body().starts_with(b"$0\r\n\r\n$1\r\na\r\n$10\r\n"));
    }

    #[test]
    fn an_empty_array_has_no_body() {
        let bulks = EncodedBulksBuilder::with_capacity(0, 0).finish();
        assert!(bulks.is_empty());
        assert!(bulks.body().is_empty());
        assert_eq!(bulks.iter().count(), 0);
    }
}
