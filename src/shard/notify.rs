//! The shard's side of keyspace notifications: the flags the driver hands in, the events
//! its commands raised (the shell takes and publishes them), `keymiss` for reads, and
//! RENAME's and COPY's events, which no single key write knows.
//!
//! Decides which events a command raises; never publishes them (the shell does).

use bytes::Bytes;

use super::{Shard, ShardOp, ShardReply};
use crate::engine::kv::key_hash;
use crate::notify::{self, Class, Flags, KeyEvent, Notifier};

/// Which types of key a multi-key read looks past (it stops at the first other one).
type AcceptsKind = fn(Option<crate::engine::kv::KeyKind>) -> bool;

impl Shard {
    /// `notify-keyspace-events` may change at run time (CONFIG SET).
    pub fn set_notify_flags(&mut self, flags: Flags) {
        self.kv.notify.set_flags(flags);
    }

    /// Whether commands raised events since the last [`Shard::take_notifications`].
    pub fn has_notifications(&self) -> bool {
        self.kv.notify.has_pending()
    }

    /// The events raised since the last call, in the order raised, for the shell to
    /// publish.
    pub fn take_notifications(&mut self) -> Vec<KeyEvent> {
        self.kv.notify.take()
    }

    /// Events dropped since the last call because too many waited
    /// (`notify::PENDING_EVENTS_MAX`).
    pub fn take_notifications_dropped(&mut self) -> u64 {
        self.kv.notify.take_dropped()
    }

    /// `ShardOp::Quiet` (the step runs with only expiries raising) and `ShardOp::Notify`
    /// (the events a command across shards decided).
    pub(super) fn apply_notification_op(&mut self, op: ShardOp, now_ms: u64) -> ShardReply {
        match op {
            ShardOp::Quiet(op) => {
                let was_quiet = self.kv.notify.set_quiet(true);
                let reply = self.apply_op(*op, now_ms);
                self.kv.notify.set_quiet(was_quiet);
                reply
            }
            ShardOp::Notify(events) => {
                self.kv.notify.raise_all(events);
                ShardReply::Count(0)
            }
            ShardOp::Split(op) => self.apply_split(*op, now_ms),
            other => self.apply_op(other, now_ms),
        }
    }

    /// `ShardOp::Split`: the op one key at a time, each key's events taken as it ran
    /// (the events of earlier ops in the batch stay pending, for the shell thread to
    /// publish as usual). The parts run in one step, so the op stays atomic here.
    fn apply_split(&mut self, op: ShardOp, now_ms: u64) -> ShardReply {
        let parts = split_per_key(op);
        let mut events = Vec::with_capacity(parts.len());
        let mut joined: Option<ShardReply> = None;
        let mut failed = None;
        for (i, part) in parts.into_iter().enumerate() {
            let mark = self.kv.notify.mark();
            let reply = self.apply_op(part, now_ms);
            events.push(self.kv.notify.take_since(mark));
            if failed.is_none() && matches!(&reply, ShardReply::Frame(f) if f.is_error()) {
                failed = Some(i);
            }
            joined = Some(match joined {
                None => reply,
                Some(so_far) => join(so_far, reply),
            });
        }
        let reply = joined.unwrap_or(ShardReply::Count(0));
        ShardReply::Split { reply: Box::new(reply), events, failed }
    }

    /// `keymiss` (class `m`) for each key a read finds missing, raised before the
    /// command runs, as Redis raises it when its lookup misses (after `expired` if the
    /// lookup expired the key), in the order of the keys. Covers the single-key reads,
    /// MGET, EXISTS, TOUCH, COPY's source and the sources of the multi-key reads and
    /// STORE commands (SINTER.., ZUNION.., ZRANGESTORE, BITOP, LCS). Redis looks no
    /// further than a key of a type the command refuses (it answers WRONGTYPE there).
    pub(super) fn raise_key_misses(&mut self, op: &ShardOp, now_ms: u64) {
        use crate::command::ZsetMulti;
        use crate::engine::kv::{KeyKind, KeyState};
        let (keys, accepts): (&[Bytes], AcceptsKind) = match op {
            ShardOp::Key(cmd) if reads_its_key(cmd) => (std::slice::from_ref(cmd.key()), |_| true),
            ShardOp::MGet(keys) | ShardOp::CountExisting(keys) => (keys, |_| true),
            ShardOp::Copy { src, dst, .. } if src != dst => (std::slice::from_ref(src), |_| true),
            ShardOp::Snapshot(src) => (std::slice::from_ref(src), |_| true),
            ShardOp::ZsetMulti(ZsetMulti::RangeStore { src, .. }) | ShardOp::ZsetRange { key: src, .. } => {
                (std::slice::from_ref(src), |_| true)
            }
            ShardOp::ZsetMulti(ZsetMulti::GeoStore { search, .. }) | ShardOp::GeoMatches { search, .. } => {
                (std::slice::from_ref(&search.key), |_| true)
            }
            ShardOp::SetAlgebra { keys, .. } | ShardOp::SetMemberLists(keys) => (keys, |kind| kind == Some(KeyKind::Set)),
            ShardOp::ZsetMulti(ZsetMulti::Algebra { keys, .. }) | ShardOp::ScoredLists(keys) => {
                (keys, |kind| matches!(kind, Some(KeyKind::Set | KeyKind::Zset)))
            }
            ShardOp::BitOp { keys, .. } | ShardOp::StringValues(keys) => (keys, |kind| kind == Some(KeyKind::String)),
            _ => return,
        };
        for key in keys {
            match self.kv.live(key, key_hash(key), now_ms).map(KeyState::kind) {
                None => self.kv.notify.raise(Class::KeyMiss, "keymiss", key),
                Some(kind) if !accepts(kind) => break,
                Some(_) => {}
            }
        }
    }
}

/// Whether a single-key command looks its key up for reading, as Redis's
/// `lookupKeyRead` does: the reads but OBJECT and MEMORY USAGE (which look quietly),
/// and the writes that answer the old value (GETDEL, GETEX, SET ... GET, GETSET).
fn reads_its_key(cmd: &crate::command::KeyCommand) -> bool {
    use crate::command::{KeyCommand, SetReply};
    match cmd {
        KeyCommand::Object { .. } | KeyCommand::MemoryUsage(_) => false,
        KeyCommand::GetDel(_) | KeyCommand::GetEx { .. } | KeyCommand::Set { reply: SetReply::OldValue, .. } => true,
        other => !other.is_write(),
    }
}

/// The parts of a `ShardOp::Split`: one op per key for the ops a multi-key command
/// sends a shard (MGET, MSET, DEL, EXISTS/TOUCH, and the reads of the multi-key
/// commands); any other op is one part.
fn split_per_key(op: ShardOp) -> Vec<ShardOp> {
    match op {
        ShardOp::MGet(keys) => keys.into_iter().map(|k| ShardOp::MGet(vec![k])).collect(),
        ShardOp::MSet(pairs) => pairs.into_iter().map(|p| ShardOp::MSet(vec![p])).collect(),
        ShardOp::Del(keys) => keys.into_iter().map(|k| ShardOp::Del(vec![k])).collect(),
        ShardOp::CountExisting(keys) => keys.into_iter().map(|k| ShardOp::CountExisting(vec![k])).collect(),
        ShardOp::SetMemberLists(keys) => keys.into_iter().map(|k| ShardOp::SetMemberLists(vec![k])).collect(),
        ShardOp::ScoredLists(keys) => keys.into_iter().map(|k| ShardOp::ScoredLists(vec![k])).collect(),
        ShardOp::StringValues(keys) => keys.into_iter().map(|k| ShardOp::StringValues(vec![k])).collect(),
        other => vec![other],
    }
}

/// Two parts' replies as the op whole answers: counts add up, lists follow each other,
/// the first error stands (an op whole stops at its first error), and MSET's OK stays.
fn join(so_far: ShardReply, next: ShardReply) -> ShardReply {
    use crate::protocol::Frame;
    match (so_far, next) {
        (ShardReply::Frame(error), _) if error.is_error() => ShardReply::Frame(error),
        (_, ShardReply::Frame(error)) if error.is_error() => ShardReply::Frame(error),
        (ShardReply::Count(a), ShardReply::Count(b)) => ShardReply::Count(a + b),
        (ShardReply::Frame(Frame::Array(mut a)), ShardReply::Frame(Frame::Array(b))) => {
            a.extend(b);
            ShardReply::Frame(Frame::Array(a))
        }
        (ShardReply::MemberLists(mut a), ShardReply::MemberLists(b)) => {
            a.extend(b);
            ShardReply::MemberLists(a)
        }
        (ShardReply::ScoredLists(mut a), ShardReply::ScoredLists(b)) => {
            a.extend(b);
            ShardReply::ScoredLists(a)
        }
        (ShardReply::Values(mut a), ShardReply::Values(b)) => {
            a.extend(b);
            ShardReply::Values(a)
        }
        (so_far, _) => so_far,
    }
}

/// What a key was before a peer's deltas were merged into it: whether it existed, and
/// its digest (any change to the key changes it).
type Before = (bool, u64);

/// The keys a batch of merged deltas changed, as they were before the batch; bounded by
/// the batch (one entry per key it names).
#[derive(Default)]
pub(super) struct MergeWatch {
    keys: indexmap::IndexMap<Bytes, Before>,
}

impl Shard {
    /// Whether merges raise events now (`merged`, class g; `new`, class n).
    pub(super) fn merge_watch(&self) -> Option<MergeWatch> {
        self.kv.notify.wants(&[Class::Generic, Class::New]).then(MergeWatch::default)
    }

    fn key_now(&self, key: &[u8]) -> Before {
        match self.kv.keys.get(key, key_hash(key)) {
            None => (false, 0),
            Some(entry) if entry.kept_digest() != 0 => (true, entry.kept_digest()),
            Some(entry) => (true, crate::engine::kv::merkle::digest(key, entry.state())),
        }
    }

    /// Note `key` before a delta for it is merged (the first note of a batch counts).
    pub(super) fn watch_merge(&self, watch: &mut MergeWatch, key: &Bytes) {
        if !watch.keys.contains_key(key) {
            let before = self.key_now(key);
            watch.keys.insert(key.clone(), before);
        }
    }

    /// After a batch of a peer's deltas: every key it changed raises `merged` (after
    /// `new` if the merge added it). The peer's node raised the command's own events
    /// where the client ran it; here subscribers learn that the key changed.
    pub(super) fn raise_merged(&mut self, watch: MergeWatch) {
        for (key, before) in watch.keys {
            let after = self.key_now(&key);
            if after == before {
                continue;
            }
            if after.0 && !before.0 {
                self.kv.notify.raise_for(Class::New, "new", Some(&key));
            }
            self.kv.notify.raise_for(Class::Generic, "merged", Some(&key));
        }
    }
}

/// RENAME's events ([`notify::renamed`]) when any of their classes is on; nothing (and
/// no copy of either key) otherwise.
pub(super) fn renamed_if_wanted(notifier: &Notifier, src: &Bytes, dst: &Bytes) -> Vec<KeyEvent> {
    if notifier.wants(&[Class::Generic, Class::New]) { notify::renamed(src, dst) } else { Vec::new() }
}

/// COPY's events ([`notify::copied`]) when any of their classes is on.
pub(super) fn copied_if_wanted(notifier: &Notifier, dst: &Bytes) -> Vec<KeyEvent> {
    if notifier.wants(&[Class::Generic, Class::New]) { notify::copied(dst) } else { Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{KeyCommand, SetCommand};
    use crate::crdt::{Dot, Hlc};
    use crate::delta::Delta;
    use crate::engine::kv::{KeyState, StrVal};
    use crate::shard::ShardConfig;

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    fn events(shard: &mut Shard) -> Vec<(&'static str, Bytes)> {
        shard.take_notifications().into_iter().map(|e| (e.event, e.key)).collect()
    }

    fn sets(cmd: SetCommand) -> ShardOp {
        ShardOp::Key(KeyCommand::SetFamily(cmd))
    }

    #[test]
    fn a_command_raises_new_then_its_event_then_del_when_it_empties_the_key() {
        let mut shard = Shard::new(ShardConfig::new(0, 1));
        shard.set_notify_flags(Flags::parse("KAn").unwrap());
        shard.apply(sets(SetCommand::Add { key: b("s"), members: vec![b("a")] }), 10);
        shard.apply(sets(SetCommand::Add { key: b("s"), members: vec![b("a")] }), 11);
        shard.apply(sets(SetCommand::Rem { key: b("s"), members: vec![b("a")] }), 12);
        assert_eq!(
            events(&mut shard),
            [("new", b("s")), ("sadd", b("s")), ("srem", b("s")), ("del", b("s"))],
            "no sadd for a member already there"
        );
    }

    #[test]
    fn off_nothing_is_raised_and_a_quiet_step_raises_only_expiries() {
        let mut shard = Shard::new(ShardConfig::new(0, 1));
        shard.apply(sets(SetCommand::Add { key: b("s"), members: vec![b("a")] }), 10);
        assert!(!shard.has_notifications(), "off by default");
        shard.set_notify_flags(Flags::parse("KEA").unwrap());
        shard.apply(ShardOp::Quiet(Box::new(sets(SetCommand::Rem { key: b("s"), members: vec![b("a")] }))), 11);
        assert!(!shard.has_notifications());
        shard.apply(ShardOp::Notify(vec![KeyEvent::new(Class::Set, "srem", b("s"))]), 12);
        assert_eq!(events(&mut shard), [("srem", b("s"))]);
    }

    #[test]
    fn a_read_of_a_missing_key_raises_keymiss_after_the_expiry_it_caused() {
        let mut shard = Shard::new(ShardConfig::new(0, 1));
        let set = KeyCommand::Set {
            key: b("k"),
            value: b("v"),
            condition: crate::command::SetCondition::Always,
            ttl: crate::command::TtlChange::AtMs(20),
            reply: crate::command::SetReply::Ok,
            command: "set",
        };
        shard.apply(ShardOp::Key(set), 10);
        shard.set_notify_flags(Flags::parse("KExm").unwrap());
        shard.apply(ShardOp::Key(KeyCommand::Get(b("k"))), 30);
        shard.apply(ShardOp::Key(KeyCommand::Get(b("k"))), 31);
        assert_eq!(events(&mut shard), [("expired", b("k")), ("keymiss", b("k")), ("keymiss", b("k"))]);
    }

    #[test]
    fn a_merge_that_changes_a_key_raises_merged_and_one_that_changes_nothing_raises_nothing() {
        let mut config = ShardConfig::new(0, 1);
        config.replicate = true;
        let mut shard = Shard::new(config);
        shard.set_notify_flags(Flags::parse("KEAn").unwrap());
        let remote =
            |ms: u64| Delta::Key { key: b("k"), state: KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), 2), StrVal::Int(1), None) };
        shard.apply(ShardOp::MergeRemote(vec![remote(5), remote(6)]), 10);
        assert_eq!(events(&mut shard), [("new", b("k")), ("merged", b("k"))], "once per key per batch");
        shard.apply(ShardOp::MergeRemote(vec![remote(6)]), 11);
        assert!(!shard.has_notifications(), "a state already here changes nothing");
    }
}
