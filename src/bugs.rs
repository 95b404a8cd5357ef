//! Planted bugs for the simulator's self-test (DESIGN §8: "the checker must be able to
//! fail"). With the `planted-bugs` feature off (the default, and every release build of
//! the server) [`active`] is a constant `false` and the hooks compile away. The `dst`
//! crate turns the feature on and plants one bug per run, per thread; the Jepsen-style
//! test (tests/jepsen/) builds the server binary with the feature and plants one bug in
//! it through `MERIDIAN_PLANTED_BUG` ([`plant_from_env`]).

/// A known, realistic bug that the simulator must catch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bug {
    /// Keys never expire, neither lazily nor actively.
    TtlNeverFires,
    /// A SET does not absorb earlier increments, so they come back on top of it.
    SetKeepsIncrements,
    /// PERSIST answers 1 but leaves the TTL in place.
    PersistIgnored,
    /// EXPIRE ... GT applies when the new TTL is *smaller*.
    ExpireGtInverted,
    /// The HLC follows the physical clock backwards instead of staying monotonic.
    HlcFollowsClockBack,
    /// The streamer leaves the last delta of a busy interval out of its segment.
    StreamerDropsLastDelta,
    /// Recovery starts replaying one segment after the manifest's first segment.
    RecoverySkipsFirstSegment,
    /// An expiry is not recorded for persistence (a restart can revive the key).
    ExpiryNotPersisted,
    /// Deltas merged from a peer are put in the outbox and sent on (echoed).
    ReplicationEchoes,
    /// Concurrent SETs resolve to the *smaller* `(hlc, node)`.
    LwwTieBreakInverted,
    /// A deleted key's removal metadata is dropped at once (garbage-collected before
    /// every replica has it), so an older write arriving later resurrects the key.
    TombstonesDropped,
    /// Tombstone GC trusts this node's own knowledge alone: a tombstone goes once this
    /// node has merged what it covers, before the other nodes have the removal.
    TombstoneGcUnstable,
    /// Writes leave the node whatever their stamps and a restarted node starts its
    /// clock at the newest stamp it recovered, so it can stamp a new write with a stamp
    /// that had already left before the crash.
    ReservationIgnored,
    /// A hash write's field-sized delta reaches the replication outbox but not the
    /// persistence log, so a restart loses the fields written since the last checkpoint.
    HashFieldsNotPersisted,
    /// HDEL (or SREM) removes the element here but its delta revives it: the element
    /// delta ships the element's state from before the removal.
    HdelShipsOldField,
    /// An element merge lets a remove win over a concurrent add (SADD ∥ SREM, ZADD ∥
    /// ZREM, HSET ∥ HDEL): a replica that merges an element's tombstone into a live
    /// element (or a live element into its tombstone) the other had not seen drops the
    /// element's values.
    RemoveWinsMerge,
    /// ZINCRBY (or ZADD ... INCR) of an existing member is replicated as a value: the
    /// member's register is written with the resulting score instead of its counter
    /// incremented, so concurrent increments in two regions overwrite each other.
    ZincrbyShipsScore,
    /// A list orders concurrent inserts into one place by their arrival instead of by
    /// their ids: positions compare by their digits alone, and equal digits (two
    /// regions' pushes at one end) go in the order the elements arrived at the replica.
    ListOrderByArrival,
    /// An FT.* index follows a peer's delete of an indexed hash (a merged DEL, or an
    /// HDEL of its last field) by leaving the document in place: the node's index no
    /// longer equals the one rebuilt from its data.
    MergedDeleteStaysIndexed,
    /// A graph's view keeps an edge whose endpoint is gone (a node deleted in one region
    /// while an edge to it was created in another) and shows the endpoint as a bare
    /// node: queries return the edge and a node that was deleted.
    GraphEdgeOutlivesEndpoint,
    /// Keyspace notifications: a collection created by its first element (SADD, HSET,
    /// RPUSH, ZADD) raises its command's event but no `new`; only a key created as a
    /// string does.
    NewOnlyForStrings,
    /// An FT.* index follows a rewrite of an indexed hash by adding the new TEXT terms
    /// but leaving the old ones in the postings: a search for a word the document no
    /// longer holds still finds it, and the index no longer equals its rebuild.
    TextUpdateKeepsOldTerms,
    /// Stream ids generated with `*` on a node with peers leave the node out of the
    /// sequence (Redis's lone-node rule): two regions adding in the same millisecond
    /// after the same last id make the same id, and one of the two entries is lost.
    StreamIdsIgnoreNode,
    /// Anti-entropy ignores what a peer has forgotten (`shard::absence`): a node that
    /// missed a removal whose tombstone the others collected after giving up on it
    /// keeps the removed writes, and they never converge.
    AbsenceIgnored,
    /// RENAME writes its destination without the source's TTL: a key meant to expire
    /// lives for ever under its new name.
    RenameDropsTtl,
    /// RESTORE ... ABSTTL takes its unix time as a duration: the restored key expires
    /// decades late instead of at the instant given.
    RestoreAbsttlIgnored,
}

impl Bug {
    pub const ALL: [Bug; 26] = [
        Bug::TtlNeverFires,
        Bug::SetKeepsIncrements,
        Bug::PersistIgnored,
        Bug::ExpireGtInverted,
        Bug::HlcFollowsClockBack,
        Bug::StreamerDropsLastDelta,
        Bug::RecoverySkipsFirstSegment,
        Bug::ExpiryNotPersisted,
        Bug::ReplicationEchoes,
        Bug::LwwTieBreakInverted,
        Bug::TombstonesDropped,
        Bug::TombstoneGcUnstable,
        Bug::ReservationIgnored,
        Bug::HashFieldsNotPersisted,
        Bug::HdelShipsOldField,
        Bug::RemoveWinsMerge,
        Bug::ZincrbyShipsScore,
        Bug::ListOrderByArrival,
        Bug::MergedDeleteStaysIndexed,
        Bug::GraphEdgeOutlivesEndpoint,
        Bug::NewOnlyForStrings,
        Bug::TextUpdateKeepsOldTerms,
        Bug::StreamIdsIgnoreNode,
        Bug::AbsenceIgnored,
        Bug::RenameDropsTtl,
        Bug::RestoreAbsttlIgnored,
    ];

    /// Whether the bug lives in replication (the simulator must run replicated nodes
    /// to reach it).
    pub fn needs_replication(self) -> bool {
        matches!(
            self,
            Bug::ReplicationEchoes
                | Bug::LwwTieBreakInverted
                | Bug::TombstonesDropped
                | Bug::TombstoneGcUnstable
                | Bug::ReservationIgnored
                | Bug::RemoveWinsMerge
                | Bug::ZincrbyShipsScore
                | Bug::ListOrderByArrival
                | Bug::MergedDeleteStaysIndexed
                | Bug::GraphEdgeOutlivesEndpoint
                | Bug::StreamIdsIgnoreNode
                | Bug::AbsenceIgnored
                | Bug::RenameDropsTtl
        )
    }

    /// Whether the bug lives in the graph engine (the simulator must send graph writes,
    /// `SimConfig::graph`, to reach it).
    pub fn needs_graph_writes(self) -> bool {
        matches!(self, Bug::GraphEdgeOutlivesEndpoint)
    }

    /// Whether the bug lives in the stream engine (the simulator must send stream
    /// writes, `SimConfig::streams`, to reach it).
    pub fn needs_stream_writes(self) -> bool {
        matches!(self, Bug::StreamIdsIgnoreNode)
    }

    /// Whether the bug lives in RENAME (the simulator must send renames,
    /// `SimConfig::renames`, to reach it: only replicated runs do).
    pub fn needs_renames(self) -> bool {
        matches!(self, Bug::RenameDropsTtl)
    }

    /// Whether the bug lives in DUMP or RESTORE (the simulator must send them,
    /// `SimConfig::dumps`, to reach it: only single-node runs do).
    pub fn needs_dumps(self) -> bool {
        matches!(self, Bug::RestoreAbsttlIgnored)
    }

    pub fn name(self) -> &'static str {
        match self {
            Bug::TtlNeverFires => "ttl-never-fires",
            Bug::SetKeepsIncrements => "set-keeps-increments",
            Bug::PersistIgnored => "persist-ignored",
            Bug::ExpireGtInverted => "expire-gt-inverted",
            Bug::HlcFollowsClockBack => "hlc-follows-clock-back",
            Bug::StreamerDropsLastDelta => "streamer-drops-last-delta",
            Bug::RecoverySkipsFirstSegment => "recovery-skips-first-segment",
            Bug::ExpiryNotPersisted => "expiry-not-persisted",
            Bug::ReplicationEchoes => "replication-echoes",
            Bug::LwwTieBreakInverted => "lww-tie-break-inverted",
            Bug::TombstonesDropped => "tombstones-dropped",
            Bug::TombstoneGcUnstable => "tombstone-gc-unstable",
            Bug::ReservationIgnored => "reservation-ignored",
            Bug::HashFieldsNotPersisted => "hash-fields-not-persisted",
            Bug::HdelShipsOldField => "hdel-ships-old-field",
            Bug::RemoveWinsMerge => "remove-wins-merge",
            Bug::ZincrbyShipsScore => "zincrby-ships-score",
            Bug::ListOrderByArrival => "list-order-by-arrival",
            Bug::MergedDeleteStaysIndexed => "merged-delete-stays-indexed",
            Bug::GraphEdgeOutlivesEndpoint => "graph-edge-outlives-endpoint",
            Bug::NewOnlyForStrings => "new-only-for-strings",
            Bug::TextUpdateKeepsOldTerms => "text-update-keeps-old-terms",
            Bug::StreamIdsIgnoreNode => "stream-ids-ignore-node",
            Bug::AbsenceIgnored => "absence-ignored",
            Bug::RenameDropsTtl => "rename-drops-ttl",
            Bug::RestoreAbsttlIgnored => "restore-absttl-ignored",
        }
    }

    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

#[cfg(feature = "planted-bugs")]
thread_local! {
    static PLANTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether `bug` is planted on this thread.
#[inline(always)]
pub fn active(bug: Bug) -> bool {
    #[cfg(feature = "planted-bugs")]
    {
        PLANTED.with(|p| p.get() & bug.bit() != 0)
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        let _ = bug.bit();
        false
    }
}

/// Plant exactly these bugs on this thread (empty: none).
#[cfg(feature = "planted-bugs")]
pub fn plant(bugs: &[Bug]) {
    PLANTED.with(|p| p.set(bugs.iter().fold(0, |acc, b| acc | b.bit())));
}

/// The environment variable naming the bug a server built with `planted-bugs` plants.
pub const PLANTED_BUG_ENV: &str = "MERIDIAN_PLANTED_BUG";

/// Plant on this thread the bug `MERIDIAN_PLANTED_BUG` names, if any. A name that is no
/// bug, or any name in a binary built without the feature, is an error: a test that
/// asks for a bug must never run without it and pass by accident.
pub fn plant_from_env() -> Result<Option<Bug>, String> {
    let Some(name) = std::env::var_os(PLANTED_BUG_ENV) else {
        return Ok(None);
    };
    let name = name.to_string_lossy();
    let bug = Bug::from_name(&name).ok_or_else(|| format!("{PLANTED_BUG_ENV}={name}: no such planted bug"))?;
    #[cfg(feature = "planted-bugs")]
    {
        plant(&[bug]);
        Ok(Some(bug))
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        Err(format!("{PLANTED_BUG_ENV}={}: this binary was built without the planted-bugs feature", bug.name()))
    }
}
