//! The object-store requests the persistence state machines emit, and their results.
//! The shell carries them out with the `object_store` crate; the simulator with its
//! own in-memory store that injects faults.

use bytes::Bytes;

#[derive(Clone, Debug, PartialEq)]
pub enum StoreOp {
    /// Write an object; with `create_only`, fail if it exists (fencing).
    Put {
        path: String,
        data: Bytes,
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
