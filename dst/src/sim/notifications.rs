//! Keyspace notifications on simulated nodes: every node runs with
//! [`oracle_notify::FLAGS`]; after each command, active-expiry tick and merged batch the
//! events the node's shards raised are taken and checked by [`crate::oracle_notify`]
//! (for a command, against the model's view of its keys before and after it).
//!
//! Owns the taking and the bookkeeping only; the rules live in the oracle. Takes every
//! event a checked step raised, so none is left to be blamed on the next step.

use bytes::Bytes;
use meridian::command::{Command, MultiKeyCommand, SetOutput, parse_command};
use meridian::notify::{Flags, KeyEvent};

use super::{Node, Sim};
use crate::model::Model;
use crate::oracle_notify::{self, CommandView, KeyView};

/// A command's keys in lookup order (repeats kept) and whether it writes; `None` for a
/// command whose keys the oracle does not follow (a transaction, a parse error).
fn keys_of(args: &[Bytes]) -> Option<(Vec<Bytes>, bool)> {
    match parse_command(args.to_vec()).ok()? {
        Command::Key(cmd) => Some((vec![cmd.key().clone()], cmd.is_write())),
        Command::Multi(MultiKeyCommand::MGet(keys) | MultiKeyCommand::Exists(keys)) => Some((keys, false)),
        Command::Multi(MultiKeyCommand::Del(keys)) => Some((keys, true)),
        Command::Multi(MultiKeyCommand::MSet(pairs)) => Some((pairs.into_iter().map(|p| p.0).collect(), true)),
        Command::Multi(MultiKeyCommand::SetMove { src, dst, .. }) => Some((vec![src, dst], true)),
        // The sources are looked up first, then the destination is written.
        Command::Multi(MultiKeyCommand::SetAlgebra { mut keys, output, .. }) => match output {
            SetOutput::Store(dst) => {
                keys.push(dst);
                Some((keys, true))
            }
            _ => Some((keys, false)),
        },
        Command::Keyspace(_) => Some((Vec::new(), false)),
        _ => None,
    }
}

fn view_of(model: &Model, key: &Bytes, now: u64) -> (bool, Option<crate::model::ModelEntry>) {
    match model.keys.get(key) {
        None => (false, None),
        Some(e) if e.expire_at_ms.is_some_and(|at| now > at) => (true, None),
        Some(e) => (false, Some(e.clone())),
    }
}

/// What the oracle needs from before a command runs.
pub(super) struct Before {
    keys: Vec<Bytes>,
    write: bool,
    views: Vec<KeyView>,
    /// Each view's key as the model held it, TTL passed or not.
    held_before: Vec<Option<crate::model::ModelEntry>>,
}

/// The model's view of `key` after a write: as [`view_of`], except that an entry the
/// write itself stored with a TTL already passed (`SET k v PXAT <past>`) is there. Redis
/// 7.0 stores it (raising `new` if it created the key, never `del`) and expires it at
/// the next lookup; the model drops it at once.
/// Also says whether the model cannot tell (`KeyView::after_unknown`).
fn view_after(
    model: &Model,
    key: &Bytes,
    now: u64,
    held_before: Option<&crate::model::ModelEntry>,
) -> (Option<crate::model::ModelEntry>, bool) {
    match model.keys.get(key) {
        Some(e) if e.expire_at_ms.is_some_and(|at| now > at) => {
            let unchanged = Some(e) == held_before;
            ((!unchanged).then(|| e.clone()), unchanged)
        }
        other => (other.cloned(), false),
    }
}

impl Node {
    /// Every shard of the node raises events (a restarted node's shards start without).
    pub(super) fn notify_on(&mut self) {
        let flags = Flags::parse(oracle_notify::FLAGS).expect("valid flags");
        for shard in &mut self.shards {
            shard.set_notify_flags(flags);
        }
    }

    /// The events a step raised: those a command across shards gathered in argument
    /// order (`raised`), then what the shards hold, shard by shard.
    pub(super) fn take_events(&mut self) -> Vec<KeyEvent> {
        let mut events = std::mem::take(&mut self.raised);
        for shard in &mut self.shards {
            events.extend(shard.take_notifications());
        }
        events
    }
}

impl Sim {
    /// Before a command: notifications on, nothing left over from steps no oracle
    /// checks (a recovery's replay), and the model's view of the command's keys.
    pub(super) fn notify_before(&mut self, node: usize, args: &[Bytes]) -> Option<Before> {
        let n = &mut self.nodes[node];
        n.notify_on();
        n.take_events();
        let (keys, write) = keys_of(args)?;
        let now = n.local_ms(self.now);
        let mut views: Vec<KeyView> = Vec::new();
        let mut held_before = Vec::new();
        for key in &keys {
            if views.iter().any(|v| v.key == *key) {
                continue;
            }
            let (expired_before, before) = view_of(&n.model, key, now);
            views.push(KeyView { key: key.clone(), expired_before, before, after: None, after_unknown: false });
            held_before.push(n.model.keys.get(key).cloned());
        }
        Some(Before { keys, write, views, held_before })
    }

    /// After a command: check what it raised. `exact`: the model follows this node
    /// alone (no replication), so the rules about each key's before and after apply;
    /// otherwise only the order and the keys are checked.
    pub(super) fn notify_after(&mut self, node: usize, line: &str, before: Option<Before>, exact: bool) {
        let n = &mut self.nodes[node];
        let events = n.take_events();
        let Some(mut before) = before else { return };
        let now = n.local_ms(self.now);
        if exact {
            for (view, held) in before.views.iter_mut().zip(&before.held_before) {
                (view.after, view.after_unknown) = view_after(&n.model, &view.key, now, held.as_ref());
            }
        } else {
            before.views.clear();
        }
        let cmd = CommandView { line, keys: &before.keys, write: before.write, views: &before.views };
        if let Err(why) = oracle_notify::check_command(&cmd, &events) {
            self.fail(format!("n{node} keyspace notifications: {why}"));
        }
    }

    /// Around an active-expiry tick: the keys the model (when it follows this node
    /// alone) says are due, for [`Sim::notify_tick_after`].
    pub(super) fn notify_tick_before(&mut self, node: usize, local: u64) -> Option<Vec<Bytes>> {
        let n = &mut self.nodes[node];
        n.notify_on();
        n.take_events();
        let due = n.model.keys.iter().filter(|(_, e)| e.expire_at_ms.is_some_and(|at| local > at)).map(|(k, _)| k.clone());
        (!self.cfg.replicate).then(|| due.collect())
    }

    pub(super) fn notify_tick_after(&mut self, node: usize, due: Option<Vec<Bytes>>) {
        let events = self.nodes[node].take_events();
        let checked = oracle_notify::check_expiry(|key| due.as_ref().is_none_or(|due| due.contains(key)), &events);
        if let Err(why) = checked {
            self.fail(format!("n{node} keyspace notifications: {why}"));
        }
    }

    /// After one shard merged one batch of a peer's changes.
    pub(super) fn notify_merged(&mut self, node: usize, shard: usize) {
        let events = self.nodes[node].shards[shard].take_notifications();
        if let Err(why) = oracle_notify::check_merge(&events) {
            self.fail(format!("n{node} keyspace notifications: {why}"));
        }
    }
}
