//! The object-store requests the persistence state machines emit, and their results.
//! The shell carries them out with the `object_store` crate; the simulator with its
//! own in-memory store that injects faults.

use bytes::Bytes;

/// An object's bytes, in one or more chunks: a segment is its header and the shards'
/// drained logs, handed to the store as they are (never copied into one buffer).
#[derive(Clone, Debug, Default)]
pub struct Payload {
    chunks: Vec<Bytes>,
}

impl Payload {
    pub fn from_chunks(chunks: Vec<Bytes>) -> Payload {
        Payload { chunks }
    }

    pub fn chunks(&self) -> &[Bytes] {
        &self.chunks
    }

    pub fn into_chunks(self) -> Vec<Bytes> {
        self.chunks
    }

    pub fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes in one buffer (a copy unless there is one chunk).
    pub fn to_bytes(&self) -> Bytes {
        match self.chunks.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        }
    }

    /// Whether `stored` holds exactly these bytes.
    pub fn same_bytes(&self, stored: &[u8]) -> bool {
        let mut rest = stored;
        for chunk in &self.chunks {
            match rest.strip_prefix(chunk.as_ref()) {
                Some(after) => rest = after,
                None => return false,
            }
        }
        rest.is_empty()
    }
}

impl From<Bytes> for Payload {
    fn from(bytes: Bytes) -> Payload {
        Payload { chunks: vec![bytes] }
    }
}

/// Equal when the bytes are, however they are cut into chunks.
impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        self.same_bytes(&other.to_bytes())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StoreOp {
    /// Write an object; with `create_only`, fail if it exists (fencing).
    Put {
        path: String,
        data: Payload,
        create_only: bool,
    },
    Get {
        path: String,
    },
    /// Every path under a prefix.
    List {
        prefix: String,
    },
    Delete {
        path: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum StoreResult {
    Stored,
    /// A create-only put found the object already there.
    AlreadyExists,
    Data(Bytes),
    Listing(Vec<String>),
    NotFound,
    Deleted,
    /// Transient or permanent failure, with the store's message.
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_compare_by_bytes_whatever_their_chunks() {
        let whole = Payload::from(Bytes::from_static(b"header+body"));
        let cut = Payload::from_chunks(vec![Bytes::from_static(b"header"), Bytes::new(), Bytes::from_static(b"+body")]);
        assert_eq!(whole, cut);
        assert_eq!((cut.len(), cut.to_bytes()), (11, Bytes::from_static(b"header+body")));
        assert!(cut.same_bytes(b"header+body"));
        assert!(!cut.same_bytes(b"header+bod") && !cut.same_bytes(b"header+body!") && !cut.same_bytes(b"Header+body"));
    }
}
