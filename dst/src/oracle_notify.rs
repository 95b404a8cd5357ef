//! The oracle of keyspace notifications (docs/pubsub.md): what a node must raise for a
//! command it ran, for its active expiry and for a peer's changes it merged, checked
//! against the sequential model's view of the command's keys before and after it.
//!
//! Written from Redis's rules, independently of where the engine raises what:
//! - every event of a command names one of its keys, and the events come in argument
//!   order (a key's events, then the next key's: never grouped by shard);
//! - `expired` for a key the command found with its TTL passed, before its other events;
//! - `new` exactly when the command added the key, before the command's own event;
//!   `del` exactly when a write removed a key that was there, after its own event;
//! - a write that changed a key raised at least one event for it; a read raises only
//!   `expired` and `keymiss`, the latter only for a missing key (a write that answers
//!   the old value too, before its own events);
//! - active expiry raises `expired` only, for keys whose TTL passed, once each;
//! - a merge of a peer's changes raises `merged` (after `new` when it added the key),
//!   once per key per batch, and nothing named after a command.
//!
//! Pure: no I/O, no clock, no randomness. Decides nothing for the engine.

use std::collections::BTreeSet;

use bytes::Bytes;
use meridian::notify::KeyEvent;

use crate::model::ModelEntry;

/// The `notify-keyspace-events` simulated nodes run with: every class, `new` and
/// `keymiss` included, on both channel kinds.
pub const FLAGS: &str = "KEAnm";

/// Events kept for one check; past it a run fails (a command of the workload raises a
/// few dozen at most).
pub const EVENTS_PER_CHECK_MAX: usize = 100_000;

/// One key of a command as the model saw it.
#[derive(Clone, Debug)]
pub struct KeyView {
    pub key: Bytes,
    /// Held before the command with its TTL passed (the command's lookup expires it).
    pub expired_before: bool,
    pub before: Option<ModelEntry>,
    pub after: Option<ModelEntry>,
    /// The model cannot tell whether the write stored the key again: it holds the same
    /// entry as before, with its TTL passed (`SET k v PXAT <past>` twice). Then `new`
    /// and `del` are checked for their place only, not for whether they are due.
    pub after_unknown: bool,
}

/// A command's keys (in argument order, repeats kept), whether it writes, and the
/// model's view of each distinct key.
pub struct CommandView<'a> {
    pub line: &'a str,
    pub keys: &'a [Bytes],
    pub write: bool,
    pub views: &'a [KeyView],
}

fn named(events: &[KeyEvent]) -> String {
    let shown: Vec<String> = events.iter().map(|e| format!("{}:{}", String::from_utf8_lossy(&e.key), e.event)).collect();
    format!("[{}]", shown.join(", "))
}

/// Check the events a node raised for one command.
pub fn check_command(cmd: &CommandView<'_>, events: &[KeyEvent]) -> Result<(), String> {
    let fail = |why: String| Err(format!("`{}` raised {}: {why}", cmd.line, named(events)));
    if events.len() > EVENTS_PER_CHECK_MAX {
        return fail(format!("more than {EVENTS_PER_CHECK_MAX} events"));
    }
    if events.iter().any(|e| e.event == "merged") {
        return fail("`merged` for a command's own write".into());
    }
    if let Some(stray) = events.iter().find(|e| !cmd.keys.contains(&e.key)) {
        return fail(format!("an event for `{}`, a key the command does not name", String::from_utf8_lossy(&stray.key)));
    }
    // A command looks its keys up before it acts (SMOVE: source, then destination), so
    // the lookups' `expired`/`keymiss` may come before an earlier key's own events:
    // each kind is in argument order among itself.
    let (lookups, own): (Vec<KeyEvent>, Vec<KeyEvent>) = events.iter().cloned().partition(|e| e.event == "expired" || e.event == "keymiss");
    if !in_argument_order(cmd.keys, &lookups) || !in_argument_order(cmd.keys, &own) {
        return fail("events out of argument order".into());
    }
    // RESTORE adds its key anew even over one it replaces (Redis deletes the old one
    // without a `del`, then adds): `new` comes first whenever it writes.
    let adds_anew = cmd.line.get(..8).is_some_and(|name| name.eq_ignore_ascii_case("RESTORE "));
    for view in cmd.views {
        let own: Vec<&KeyEvent> = events.iter().filter(|e| e.key == view.key).collect();
        if let Err(why) = check_key(cmd.write, adds_anew, view, &own) {
            return fail(format!("key `{}`: {why}", String::from_utf8_lossy(&view.key)));
        }
    }
    Ok(())
}

/// Whether the events' keys, runs of one key taken as one, follow the arguments.
fn in_argument_order(keys: &[Bytes], events: &[KeyEvent]) -> bool {
    let mut args = keys.iter();
    let mut current: Option<&Bytes> = None;
    for event in events {
        if current == Some(&event.key) {
            continue;
        }
        match args.by_ref().find(|k| **k == event.key) {
            Some(key) => current = Some(key),
            None => return false,
        }
    }
    true
}

fn check_key(write: bool, adds_anew: bool, view: &KeyView, own: &[&KeyEvent]) -> Result<(), String> {
    let names: Vec<&str> = own.iter().map(|e| e.event).collect();
    let count = |name: &str| names.iter().filter(|n| **n == name).count();
    let expired = count("expired");
    if expired > 1 || (expired == 1 && (names[0] != "expired" || !view.expired_before)) {
        return Err("`expired` must come first, once, and only for a key whose TTL had passed".into());
    }
    let rest = &names[expired..];
    if !write {
        if let Some(other) = rest.iter().find(|n| **n != "keymiss") {
            return Err(format!("a read raised `{other}`"));
        }
        if !rest.is_empty() && view.before.is_some() {
            return Err("`keymiss` for a key that exists".into());
        }
        return Ok(());
    }
    // A write that answers the old value (GETDEL, SET ... GET) looked the key up first.
    let misses = rest.iter().take_while(|n| **n == "keymiss").count();
    if misses > 0 && view.before.is_some() {
        return Err("`keymiss` for a key that exists".into());
    }
    let rest = &rest[misses..];
    // A RESTORE refused (BUSYKEY, a bad payload) raises nothing and adds nothing.
    let added = (view.before.is_none() || (adds_anew && rest.contains(&"restore"))) && view.after.is_some();
    let removed = view.before.is_some() && view.after.is_none();
    let news = rest.iter().filter(|n| **n == "new").count();
    if view.after_unknown {
        if news > 1 || (news == 1 && rest[0] != "new") || rest.iter().filter(|n| **n == "del").count() > 1 {
            return Err("`new` must come first and `del` last, once each".into());
        }
        return Ok(());
    }
    if news != usize::from(added) || (added && rest[0] != "new") {
        return Err(format!("`new` must come first exactly when the write added the key (added: {added})"));
    }
    let dels = rest.iter().filter(|n| **n == "del").count();
    if dels != usize::from(removed) || (removed && rest.last() != Some(&"del")) {
        return Err(format!("`del` must come last exactly when the write removed the key (removed: {removed})"));
    }
    if rest.contains(&"keymiss") {
        return Err("`keymiss` after the write's own events".into());
    }
    let own_events = rest.iter().filter(|n| **n != "new").count();
    if view.before != view.after && own_events == 0 {
        return Err("the write changed the key and raised no event for it".into());
    }
    Ok(())
}

/// Check what a node's active expiry raised: `expired` only, once per key, each for a
/// key `due` says had its TTL passed.
pub fn check_expiry(due: impl Fn(&Bytes) -> bool, events: &[KeyEvent]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for event in events {
        if event.event != "expired" || !due(&event.key) || !seen.insert(&event.key) {
            return Err(format!("active expiry raised {}: only `expired`, once, for keys whose TTL passed", named(events)));
        }
    }
    Ok(())
}

/// Check what merging one batch of a peer's changes raised: `merged` once per key,
/// right after `new` when the merge added it; `expired` for a key the merge found
/// expired.
pub fn check_merge(events: &[KeyEvent]) -> Result<(), String> {
    let mut merged = BTreeSet::new();
    for (i, event) in events.iter().enumerate() {
        let fine = match event.event {
            "merged" => merged.insert(&event.key),
            "new" => events.get(i + 1).is_some_and(|next| next.event == "merged" && next.key == event.key),
            "expired" => true,
            _ => false,
        };
        if !fine {
            return Err(format!("a merge raised {}: only `merged` once per key, after `new` when it added the key", named(events)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian::notify::Class;

    fn key(k: &'static str) -> Bytes {
        Bytes::from_static(k.as_bytes())
    }

    fn ev(event: &'static str, k: &'static str) -> KeyEvent {
        KeyEvent::new(Class::Generic, event, key(k))
    }

    fn entry(value: &str) -> Option<ModelEntry> {
        Some(ModelEntry { value: value.as_bytes().to_vec(), ..ModelEntry::default() })
    }

    fn view(k: &'static str, before: Option<ModelEntry>, after: Option<ModelEntry>) -> KeyView {
        KeyView { key: key(k), expired_before: false, before, after, after_unknown: false }
    }

    #[test]
    fn a_write_that_adds_a_key_raises_new_first_and_one_that_removes_it_del_last() {
        let keys = [key("a"), key("b")];
        let views = [view("a", None, entry("1")), view("b", entry("1"), entry("2"))];
        let cmd = CommandView { line: "MSET a 1 b 2", keys: &keys, write: true, views: &views };
        assert!(check_command(&cmd, &[ev("new", "a"), ev("set", "a"), ev("set", "b")]).is_ok());
        assert!(check_command(&cmd, &[ev("set", "a"), ev("set", "b")]).is_err(), "no new");
        assert!(check_command(&cmd, &[ev("set", "a"), ev("new", "a"), ev("set", "b")]).is_err(), "new after set");
        assert!(check_command(&cmd, &[ev("set", "b"), ev("new", "a"), ev("set", "a")]).is_err(), "shard order");
        assert!(check_command(&cmd, &[ev("new", "a"), ev("set", "a")]).is_err(), "b changed silently");
        let views = [view("a", entry("1"), None)];
        let cmd = CommandView { line: "DEL a", keys: &keys[..1], write: true, views: &views };
        assert!(check_command(&cmd, &[ev("del", "a")]).is_ok());
        assert!(check_command(&cmd, &[]).is_err());
    }

    #[test]
    fn a_read_raises_keymiss_only_for_a_missing_key_and_repeats_follow_the_arguments() {
        let keys = [key("a"), key("b"), key("a")];
        let views = [view("a", None, None), view("b", entry("1"), entry("1"))];
        let cmd = CommandView { line: "MGET a b a", keys: &keys, write: false, views: &views };
        assert!(check_command(&cmd, &[ev("keymiss", "a"), ev("keymiss", "a")]).is_ok());
        assert!(check_command(&cmd, &[ev("keymiss", "b")]).is_err());
        assert!(check_command(&cmd, &[ev("set", "a")]).is_err());
    }

    #[test]
    fn merges_raise_merged_once_after_new_and_expiry_raises_expired_for_due_keys() {
        assert!(check_merge(&[ev("new", "a"), ev("merged", "a"), ev("merged", "b")]).is_ok());
        assert!(check_merge(&[ev("merged", "a"), ev("merged", "a")]).is_err());
        assert!(check_merge(&[ev("new", "a"), ev("merged", "b")]).is_err());
        assert!(check_merge(&[ev("set", "a")]).is_err());
        assert!(check_expiry(|k| k.as_ref() == b"a", &[ev("expired", "a")]).is_ok());
        assert!(check_expiry(|k| k.as_ref() == b"a", &[ev("expired", "b")]).is_err());
        assert!(check_expiry(|_| true, &[ev("expired", "a"), ev("expired", "a")]).is_err());
    }
}
