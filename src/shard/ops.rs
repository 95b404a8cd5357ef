//! The messages of a shard: the operations it runs ([`ShardOp`]), what it answers
//! ([`ShardReply`]) and the figures it reports ([`ShardStats`]). Plain data; the shard
//! state machine (`shard/mod.rs`) gives them meaning.

use bytes::Bytes;

use crate::command::bits::BitOp;
use crate::command::zset::ZRangeQuery;
use crate::command::{KeyCommand, KeyspaceCommand, SetAlgebra, SetOutput, ZsetMulti};
use crate::crdt::Hlc;
use crate::delta::Delta;
use crate::delta::outbox::OutboxBatch;
use crate::engine::kv::keys::KeySnapshot;
use crate::engine::kv::merkle::MerkleLeaves;
use crate::engine::kv::zset_query::Scored;
use crate::protocol::Frame;

/// One operation on one shard. Single-key commands come whole; multi-key and keyspace
/// commands come as this shard's part.
#[derive(Clone, Debug, PartialEq)]
pub enum ShardOp {
    Key(KeyCommand),
    MGet(Vec<Bytes>),
    MSet(Vec<(Bytes, Bytes)>),
    /// Only sent when every key is on this shard (or the shard is parked).
    MSetNx(Vec<(Bytes, Bytes)>),
    Del(Vec<Bytes>),
    CountExisting(Vec<Bytes>),
    Snapshot(Bytes),
    Restore {
        key: Bytes,
        snapshot: KeySnapshot,
        replace: bool,
    },
    /// RENAME/COPY with both keys on this shard.
    Rename {
        src: Bytes,
        dst: Bytes,
        nx: bool,
    },
    Copy {
        src: Bytes,
        dst: Bytes,
        replace: bool,
    },
    /// SMOVE with both keys on this shard.
    SetMove {
        src: Bytes,
        dst: Bytes,
        member: Bytes,
    },
    /// A multi-key set command with every key (and its destination) on this shard.
    SetAlgebra {
        op: SetAlgebra,
        keys: Vec<Bytes>,
        output: SetOutput,
    },
    /// The members of each of these set keys (`MemberLists`), or WRONGTYPE.
    SetMemberLists(Vec<Bytes>),
    /// Replace a key with a set of these members (an empty list deletes it); replies
    /// with the count.
    StoreSet {
        key: Bytes,
        members: Vec<Bytes>,
    },
    /// A multi-key sorted set command with every key on this shard (ZMPOP also runs
    /// here one key at a time across shards: a missing key answers a null array).
    ZsetMulti(ZsetMulti),
    /// The members and scores of each of these sorted set (or set) keys
    /// (`ScoredLists`), or WRONGTYPE.
    ScoredLists(Vec<Bytes>),
    /// The members a range query names on a sorted set key (`ScoredLists` of one).
    ZsetRange {
        key: Bytes,
        query: ZRangeQuery,
    },
    /// What a GEO STORE search finds on its source key (`ScoredLists` of one), for a
    /// destination on another shard.
    GeoMatches {
        search: Box<crate::command::geo::GeoSearch>,
        distances: bool,
    },
    /// Replace a key with a sorted set of these members (an empty list deletes it);
    /// replies with the count.
    StoreZset {
        key: Bytes,
        members: Vec<Scored>,
    },
    /// LMOVE/RPOPLPUSH with both keys on this shard, or LMPOP with every key here (it
    /// also runs here one key at a time across shards: a missing key answers a null
    /// array).
    ListMulti(crate::command::ListMulti),
    /// BITOP with every key (and its destination) on this shard.
    BitOp {
        op: BitOp,
        dst: Bytes,
        keys: Vec<Bytes>,
    },
    /// The string values of these keys (`Values`), or WRONGTYPE.
    StringValues(Vec<Bytes>),
    /// BITOP's write of its result (an empty one deletes the key); replies with the
    /// length.
    StoreBitOp {
        key: Bytes,
        value: Vec<u8>,
    },
    Keyspace(KeyspaceCommand),
    Stats,
    ResetStats,
    /// Up to `count` keys' full states from slot position `cursor` (checkpoints).
    ExportChunk {
        cursor: u64,
        count: usize,
    },
    /// The position of the newest recorded delta (WAITAOF's target).
    DeltaMark,
    /// Join key states (or flushes) received from a peer. Replies with the shard's
    /// delta-stream position once they are recorded (see `DeltaMark`).
    MergeRemote(Vec<Delta>),
    /// A peer's anti-entropy states of `leaves` (with its forget records): merged as
    /// `MergeRemote`, together with the removals what it has forgotten implies for the
    /// keys of those leaves held here (`shard::absence`).
    MergeLeaves {
        leaves: Vec<u16>,
        deltas: Vec<Delta>,
    },
    /// Tombstone GC: drop the tombstones the causally stable vector `stable` covers,
    /// sparing those that hold a counter of a node in `spared` (the peers given up on;
    /// `engine::kv::tombstone_gc`).
    ForgetStable {
        stable: crate::crdt::VersionVector,
        spared: Vec<crate::crdt::NodeId>,
    },
    /// Local writes since the last call, for the next replication batch. The shard's
    /// clock first moves up to `floor` (the highest clock of any shard at the previous
    /// drain), so that one busy shard's clock does not hold the node's `stable` back.
    DrainOutbox {
        floor: Hlc,
    },
    /// This shard's anti-entropy leaves.
    MerkleLeaves,
    /// WATCH: a token per key that changes with every change to the key (a write here,
    /// a write merged from a peer, an expiry); 0 for a missing key (`Tokens`).
    WatchTokens(Vec<Bytes>),
    /// MULTI/EXEC with every key on this shard: if every watched key still has its
    /// token, run `ops` in one step (nothing interleaves, and their deltas leave in the
    /// same replication batch); else run nothing (`Transaction(None)`).
    Transaction {
        watched: Vec<(Bytes, u64)>,
        ops: Vec<ShardOp>,
    },
    /// Every key state (live or tombstone) in these anti-entropy leaves.
    ExportLeaves(Vec<u16>),
    /// A coordinator's internal step of a command across shards (a TYPE probe, a
    /// source's delete in a RENAME): run with every keyspace notification but expiry
    /// held back, since the command's own events are raised by `Notify`.
    Quiet(Box<ShardOp>),
    /// Raise these keyspace notifications, as a command across shards decided them
    /// (`crate::notify`); each is published if its class is on. Replies `Count(0)`.
    Notify(Vec<crate::notify::KeyEvent>),
    /// This shard's part of a multi-key command across shards (MGET, MSET, DEL, EXISTS,
    /// TOUCH, the reads of SINTER, ZUNION, BITOP, LCS), run one key at a time so that
    /// the events each key raised come back with the reply (`ShardReply::Split`) for
    /// the shell to publish in argument order. Sent only while notifications are on.
    Split(Box<ShardOp>),
    /// FT.*: this shard's part of a search index (`engine::vector`).
    Vector(crate::engine::vector::VectorOp),
}

impl ShardOp {
    /// The keys this operation may add list or sorted set elements to: a client blocked
    /// on one of them is woken to try again. Only what can add counts: a pop (the
    /// woken client's own retry included) must never wake anyone, or blocked clients
    /// would wake each other forever. Covers local writes and writes merged from peers.
    pub fn written_keys(&self) -> Vec<Bytes> {
        use crate::command::list::ListCommand;
        use crate::command::zset::ZsetCommand;
        use crate::command::{ListMulti, ZsetMulti};
        match self {
            ShardOp::Key(KeyCommand::List(ListCommand::Push { key, .. } | ListCommand::Insert { key, .. }))
            | ShardOp::Key(KeyCommand::Zset(ZsetCommand::Add { key, .. } | ZsetCommand::IncrBy { key, .. })) => vec![key.clone()],
            ShardOp::Key(KeyCommand::Restore(cmd)) => vec![cmd.key.clone()],
            ShardOp::Key(KeyCommand::Stream(cmd)) if cmd.wakes_readers() => vec![cmd.key().clone()],
            // A key removed or replaced by another type: a client blocked in XREADGROUP
            // on it is answered that the stream is gone (a client blocked in a pop tries
            // again, finds nothing to pop, and waits on).
            ShardOp::Key(KeyCommand::Set { key, .. }) => vec![key.clone()],
            ShardOp::Del(keys) => keys.clone(),
            ShardOp::Restore { key, .. } | ShardOp::StoreZset { key, .. } => vec![key.clone()],
            ShardOp::Rename { src, dst, .. } => vec![src.clone(), dst.clone()],
            ShardOp::Copy { dst, .. } => vec![dst.clone()],
            ShardOp::ListMulti(ListMulti::Move { dst, .. }) => vec![dst.clone()],
            ShardOp::ZsetMulti(cmd) => match cmd {
                ZsetMulti::MPop { .. } => Vec::new(),
                other => other.keys().into_iter().cloned().collect(),
            },
            ShardOp::MergeRemote(deltas) | ShardOp::MergeLeaves { deltas, .. } => deltas
                .iter()
                .filter_map(|d| match d {
                    Delta::Key { key, state } if state.exists() => Some(key.clone()),
                    _ => None,
                })
                .collect(),
            ShardOp::Transaction { ops, .. } => ops.iter().flat_map(ShardOp::written_keys).collect(),
            ShardOp::Quiet(op) | ShardOp::Split(op) => op.written_keys(),
            _ => Vec::new(),
        }
    }
}

/// Figures a shard reports for INFO.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardStats {
    pub keys: usize,
    pub expiring_keys: usize,
    /// The sum of those keys' expiry instants, ms (INFO's `avg_ttl`).
    pub expiry_sum_ms: u128,
    pub expired_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub deltas_produced: u64,
    /// Changes made to this shard's data since start: its own writes' (one a key or an
    /// element, as Redis counts `dirty`) and the deltas merged from peers (as a Redis
    /// replica counts the commands it applies). INFO's `rdb_changes_since_last_save`.
    pub changes: u64,
    pub delta_log_len: usize,
    pub delta_log_bytes: usize,
    pub ops_applied: u64,
    pub tombstones: usize,
    /// Tombstones collected as causally stable since start.
    pub tombstones_dropped: u64,
    pub clock_skew_events: u64,
    pub outbox_overflows: u64,
    pub remote_deltas_merged: u64,
    /// Keys anti-entropy removed writes from because a peer had forgotten them
    /// (`shard::absence`).
    pub absence_removals: u64,
    /// Keys shipped again after a round brought back a write of this node a crash had
    /// lost here.
    pub own_writes_shipped_back: u64,
    /// XOR of the Merkle leaves (of every key digest): equal on converged nodes.
    pub keyspace_digest: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ShardReply {
    Frame(Frame),
    Snapshot(Option<KeySnapshot>),
    Restored(bool),
    /// Each key's members, `None` for a missing key.
    MemberLists(Vec<Option<Vec<Bytes>>>),
    /// Each key's members and scores, `None` for a missing key.
    ScoredLists(Vec<Option<Vec<Scored>>>),
    /// Each key's string value, `None` for a missing key.
    Values(Vec<Option<Bytes>>),
    Keys(Vec<Bytes>),
    ScanPage {
        keys: Vec<Bytes>,
        next: u64,
    },
    RandomKey(Option<Bytes>),
    Count(i64),
    /// Boxed: the largest reply by far, and rare; see the size assertions below.
    Stats(Box<ShardStats>),
    /// A checkpoint chunk and the next cursor (`SLOT_SPACE` when done).
    Chunk {
        deltas: Vec<Delta>,
        next: u64,
    },
    /// The outbox's batch, an HLC below which this shard will never stamp again, and
    /// the position in its delta stream that holds every write stamped below it.
    /// `rounds_wanted`: since the last drain a peer's anti-entropy states removed here
    /// something a reader saw, which this node may have passed on to other peers
    /// before (`shard::absence`): every link should compare trees now.
    Outbox {
        batch: OutboxBatch,
        stable: Hlc,
        recorded: u64,
        rounds_wanted: bool,
    },
    Merkle(MerkleLeaves),
    Deltas(Vec<Delta>),
    /// `MergeRemote` refused whole while persistence can't keep up: the deltas come
    /// back untouched, for the caller to offer again (no copy kept for a retry).
    MergeRefused(Vec<Delta>),
    /// Each watched key's token (`WatchTokens`).
    Tokens(Vec<u64>),
    /// A transaction's replies, or `None` when a watched key had changed.
    Transaction(Option<Vec<ShardReply>>),
    /// FT.*: this shard's answer (`engine::vector`).
    Vector(crate::engine::vector::VectorReply),
    /// `Split`'s answer: the reply the op answers whole, the events each of its keys
    /// raised (one list per key, in the op's order), and the first key whose part
    /// answered an error.
    Split {
        reply: Box<ShardReply>,
        events: Vec<Vec<crate::notify::KeyEvent>>,
        failed: Option<usize>,
    },
}

impl ShardReply {
    /// The reply as a frame (used where the op always answers with one).
    pub fn into_frame(self) -> Frame {
        match self {
            ShardReply::Frame(frame) => frame,
            ShardReply::Count(n) => Frame::Integer(n),
            other => Frame::error(format!("ERR internal: unexpected shard reply {other:?}")),
        }
    }
}

// Every command is moved by value several times between its parse and its shard (into
// the op, through `Shard::apply` to the engine) and its reply back: up to 128 bytes the
// compiler copies one inline, past that it calls memcpy (measured: nine calls of ~30
// instructions a GET when the op was 176 bytes). Rare large variants are boxed to keep
// these under the line.
const _: () = assert!(std::mem::size_of::<ShardOp>() <= 128);
const _: () = assert!(std::mem::size_of::<ShardReply>() <= 128);
