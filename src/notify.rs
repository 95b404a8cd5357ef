//! Keyspace notifications (`notify-keyspace-events`): which classes of events are on,
//! the events a shard's writes, expiries and reads raise, and the Pub/Sub channels each
//! event is published on, all as Redis 7.0 names and spells them.
//!
//! Pure data and decisions: no I/O, no clock, no locks. The key-value engine raises
//! events into its [`Notifier`] as it runs a command (which event, for which key, in
//! Redis's order); the shell takes them out after the command and publishes each on
//! [`KeyEvent::channels`] through the node's Pub/Sub broker. Disabled (the default, an
//! empty `notify-keyspace-events`) a write pays one bit test and nothing else.
//! Never publishes, and never decides anything about subscribers.

use bytes::Bytes;

/// One class of events, as a bit of [`Flags`]. The letters are Redis's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// `g`: DEL, EXPIRE, RENAME, COPY, RESTORE and other commands on any type.
    Generic,
    /// `$`
    String,
    /// `l`
    List,
    /// `s`
    Set,
    /// `h`
    Hash,
    /// `z`
    Zset,
    /// `x`: a key removed because its TTL passed (lazily or by active expiry).
    Expired,
    /// `e`: a key evicted for `maxmemory` (Meridian never evicts: accepted, never raised).
    Evicted,
    /// `t`: streams (Meridian has none: accepted, never raised).
    Stream,
    /// `m`: a read command that found no key.
    KeyMiss,
    /// `d`: module types (none here: accepted, never raised).
    Module,
    /// `n`: a key added to the keyspace.
    New,
}

impl Class {
    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

const KEYSPACE: u16 = 1 << 12;
const KEYEVENT: u16 = 1 << 13;
/// `A`: every class but `m` and `n` (Redis 7.0's NOTIFY_ALL).
const ALL: u16 = Class::Generic.bit()
    | Class::String.bit()
    | Class::List.bit()
    | Class::Set.bit()
    | Class::Hash.bit()
    | Class::Zset.bit()
    | Class::Expired.bit()
    | Class::Evicted.bit()
    | Class::Stream.bit()
    | Class::Module.bit();

/// The letters of the classes `A` stands for, in the order CONFIG GET prints them.
const ALL_LETTERS: [(char, Class); 10] = [
    ('g', Class::Generic),
    ('$', Class::String),
    ('l', Class::List),
    ('s', Class::Set),
    ('h', Class::Hash),
    ('z', Class::Zset),
    ('x', Class::Expired),
    ('e', Class::Evicted),
    ('t', Class::Stream),
    ('d', Class::Module),
];

/// Redis's CONFIG SET error for a character that names no class.
pub const INVALID_FLAGS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// A `notify-keyspace-events` value: which classes, and which of the two channel kinds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags(u16);

impl Flags {
    pub const NONE: Flags = Flags(0);

    /// Parse a `notify-keyspace-events` string (any order, repeats allowed), or
    /// [`INVALID_FLAGS`].
    pub fn parse(text: &str) -> Result<Flags, &'static str> {
        let mut bits = 0;
        for letter in text.chars() {
            bits |= match letter {
                'A' => ALL,
                'K' => KEYSPACE,
                'E' => KEYEVENT,
                'm' => Class::KeyMiss.bit(),
                'n' => Class::New.bit(),
                other => match ALL_LETTERS.iter().find(|(l, _)| *l == other) {
                    Some((_, class)) => class.bit(),
                    None => return Err(INVALID_FLAGS),
                },
            };
        }
        Ok(Flags(bits))
    }

    pub fn bits(self) -> u16 {
        self.0
    }

    pub fn from_bits(bits: u16) -> Flags {
        Flags(bits)
    }

    /// The classes that raise events: none unless `K` or `E` names a channel kind.
    fn raising(self) -> u16 {
        if self.0 & (KEYSPACE | KEYEVENT) == 0 { 0 } else { self.0 & !(KEYSPACE | KEYEVENT) }
    }

    pub fn keyspace(self) -> bool {
        self.0 & KEYSPACE != 0
    }

    pub fn keyevent(self) -> bool {
        self.0 & KEYEVENT != 0
    }
}

impl std::fmt::Display for Flags {
    /// As Redis 7.0's CONFIG GET prints it: `A` when every class it covers is on (else
    /// their letters, then `n`), then `K`, `E`, `m`. Redis 7.0 prints no `n` beside an
    /// `A` although `n` stays on: reproduced, so that tools comparing the two agree.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::with_capacity(16);
        if self.0 & ALL == ALL {
            out.push('A');
        } else {
            out.extend(ALL_LETTERS.iter().filter(|(_, c)| self.0 & c.bit() != 0).map(|(l, _)| *l));
            if self.0 & Class::New.bit() != 0 {
                out.push('n');
            }
        }
        for (bit, letter) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (Class::KeyMiss.bit(), 'm')] {
            if self.0 & bit != 0 {
                out.push(letter);
            }
        }
        f.write_str(&out)
    }
}

/// One event: `event` happened to `key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    pub class: Class,
    pub event: &'static str,
    pub key: Bytes,
}

const KEYSPACE_PREFIX: &[u8] = b"__keyspace@0__:";
const KEYEVENT_PREFIX: &[u8] = b"__keyevent@0__:";

impl KeyEvent {
    pub fn new(class: Class, event: &'static str, key: Bytes) -> KeyEvent {
        KeyEvent { class, event, key }
    }

    /// The (channel, message) pairs this event is published as under `flags`:
    /// `__keyspace@0__:<key>` with the event's name, then `__keyevent@0__:<event>` with
    /// the key (Meridian has one database, 0).
    pub fn channels(&self, flags: Flags) -> impl Iterator<Item = (Bytes, Bytes)> + '_ {
        let joined = |prefix: &[u8], tail: &[u8]| {
            let mut channel = Vec::with_capacity(prefix.len() + tail.len());
            channel.extend_from_slice(prefix);
            channel.extend_from_slice(tail);
            Bytes::from(channel)
        };
        let keyspace = flags.keyspace().then(|| (joined(KEYSPACE_PREFIX, &self.key), Bytes::from_static(self.event.as_bytes())));
        let keyevent = flags.keyevent().then(|| (joined(KEYEVENT_PREFIX, self.event.as_bytes()), self.key.clone()));
        keyspace.into_iter().chain(keyevent)
    }
}

/// Events one shard may hold between two deliveries; past it they are dropped and
/// counted (a DEL of millions of keys must not hold millions of events in memory).
pub const PENDING_EVENTS_MAX: usize = 1 << 20;

/// A shard's raised events, waiting for the shell to publish them.
#[derive(Default, Debug)]
pub struct Notifier {
    flags: Flags,
    /// The classes that raise (see [`Flags::raising`]): the one test a write pays.
    raising: u16,
    /// Set while a coordinator's internal step runs (`ShardOp::Quiet`): only expiries
    /// raise, as they would whoever looked.
    quiet: bool,
    pending: Vec<KeyEvent>,
    /// Events dropped at [`PENDING_EVENTS_MAX`] since the last [`Notifier::take_dropped`].
    dropped: u64,
}

impl Notifier {
    pub fn set_flags(&mut self, flags: Flags) {
        self.flags = flags;
        self.raising = flags.raising();
    }

    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// Whether any of `classes` raises now.
    #[inline]
    pub fn wants(&self, classes: &[Class]) -> bool {
        let raising = if self.quiet { self.raising & Class::Expired.bit() } else { self.raising };
        raising != 0 && classes.iter().any(|c| raising & c.bit() != 0)
    }

    /// A copy of `key` for the events a command will raise, when one of `classes` is on
    /// (`None` costs nothing: the key is not even reference-counted).
    #[inline]
    pub fn key_for(&self, classes: &[Class], key: &Bytes) -> Option<Bytes> {
        self.wants(classes).then(|| key.clone())
    }

    /// Raise `event` for `key` if its class is on.
    #[inline]
    pub fn raise(&mut self, class: Class, event: &'static str, key: &[u8]) {
        if self.wants(&[class]) {
            self.push(KeyEvent::new(class, event, Bytes::copy_from_slice(key)));
        }
    }

    /// Raise `event` for a key copied by [`Notifier::key_for`] (nothing when `None`).
    #[inline]
    pub fn raise_for(&mut self, class: Class, event: &'static str, key: Option<&Bytes>) {
        if let Some(key) = key
            && self.wants(&[class])
        {
            self.push(KeyEvent::new(class, event, key.clone()));
        }
    }

    /// Raise events decided elsewhere (`ShardOp::Notify`), each if its class is on.
    pub fn raise_all(&mut self, events: Vec<KeyEvent>) {
        for event in events {
            if self.wants(&[event.class]) {
                self.push(event);
            }
        }
    }

    fn push(&mut self, event: KeyEvent) {
        if self.pending.len() >= PENDING_EVENTS_MAX {
            self.dropped += 1;
            return;
        }
        self.pending.push(event);
    }

    /// Hold back every class but expiry (`true`: a coordinator's internal step, or a
    /// command that raises its own events for what its steps do); returns the previous
    /// setting, for the caller to put back.
    pub fn set_quiet(&mut self, quiet: bool) -> bool {
        std::mem::replace(&mut self.quiet, quiet)
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Where the events raised from now on will start, for [`Notifier::take_since`].
    pub fn mark(&self) -> usize {
        self.pending.len()
    }

    /// The events raised since `mark`, in the order raised (those before it stay, for
    /// the shell to publish with the rest of the batch).
    pub fn take_since(&mut self, mark: usize) -> Vec<KeyEvent> {
        if mark >= self.pending.len() { Vec::new() } else { self.pending.split_off(mark) }
    }

    /// Every event raised since the last call, in the order raised.
    pub fn take(&mut self) -> Vec<KeyEvent> {
        std::mem::take(&mut self.pending)
    }

    /// Events dropped since the last call (the shell says so in its log).
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

/// The events of a RENAME once `dst` holds `src`'s value (Redis: the destination is
/// added anew even when it existed, then `rename_from` on the source, `rename_to` on
/// the destination).
pub fn renamed(src: &Bytes, dst: &Bytes) -> Vec<KeyEvent> {
    vec![
        KeyEvent::new(Class::New, "new", dst.clone()),
        KeyEvent::new(Class::Generic, "rename_from", src.clone()),
        KeyEvent::new(Class::Generic, "rename_to", dst.clone()),
    ]
}

/// The events of a COPY that wrote `dst` (added anew even when replaced).
pub fn copied(dst: &Bytes) -> Vec<KeyEvent> {
    vec![KeyEvent::new(Class::New, "new", dst.clone()), KeyEvent::new(Class::Generic, "copy_to", dst.clone())]
}

/// The events of a command that replaced `dst` whole with its result (SORT STORE): `new`
/// if `dst` did not exist, then `event`; an empty result deletes `dst` instead, and
/// raises `del` if it existed.
pub fn stored(class: Class, event: &'static str, dst: &Bytes, existed: bool, stored_any: bool) -> Vec<KeyEvent> {
    match (stored_any, existed) {
        (true, false) => vec![KeyEvent::new(Class::New, "new", dst.clone()), KeyEvent::new(class, event, dst.clone())],
        (true, true) => vec![KeyEvent::new(class, event, dst.clone())],
        (false, true) => vec![KeyEvent::new(Class::Generic, "del", dst.clone())],
        (false, false) => Vec::new(),
    }
}

/// The events of an MSETNX that wrote every key of `keys` (none existed): each key
/// added then set, in argument order (a key named twice is added once).
pub fn set_all_new<'a>(keys: impl Iterator<Item = &'a Bytes>) -> Vec<KeyEvent> {
    let mut events: Vec<KeyEvent> = Vec::new();
    for key in keys {
        if !events.iter().any(|e| e.key == *key) {
            events.push(KeyEvent::new(Class::New, "new", key.clone()));
        }
        events.push(KeyEvent::new(Class::String, "set", key.clone()));
    }
    events
}

/// The events of a multi-key command whose keys were looked up on several shards, put
/// in argument order: `per_position[i]` holds what the lookup of the `i`th key raised
/// (`expired`, `keymiss`, the write's own events). `failed_at` is the first key whose
/// lookup failed (WRONGTYPE): Redis stops there, so no key after it raises `keymiss`
/// (an expiry the shard carried out there is still told).
pub fn in_argument_order(per_position: Vec<Vec<KeyEvent>>, failed_at: Option<usize>) -> Vec<KeyEvent> {
    let mut events = Vec::with_capacity(per_position.iter().map(Vec::len).sum());
    for (position, raised) in per_position.into_iter().enumerate() {
        let looked_up = failed_at.is_none_or(|failed| position <= failed);
        events.extend(raised.into_iter().filter(|e| looked_up || e.class != Class::KeyMiss));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Flags::parse(text).unwrap().to_string()
    }

    #[test]
    fn config_get_prints_the_flags_as_redis_7_0_does() {
        // Each pair checked against redis-server 7.0.15.
        for (set, get) in [
            ("", ""),
            ("KA", "AK"),
            ("EA", "AE"),
            ("KEA", "AKE"),
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KEAnm", "AKEm"),
            ("nm", "nm"),
            ("Kn", "nK"),
            ("tdn", "tdn"),
            ("g$lshzxetd", "A"),
            ("ndtexzhsl$gmEK", "AKEm"),
            ("AAA", "A"),
            ("Kl", "lK"),
            ("xE", "xE"),
        ] {
            assert_eq!(canonical(set), get, "CONFIG SET notify-keyspace-events {set:?}");
        }
    }

    #[test]
    fn a_letter_that_names_no_class_is_refused_with_redis_words() {
        for bad in ["a", "k", "K E", "KEA,", "B"] {
            assert_eq!(Flags::parse(bad), Err(INVALID_FLAGS), "{bad:?}");
        }
    }

    #[test]
    fn classes_raise_only_with_a_channel_kind_and_a_hidden_n_still_raises() {
        let mut notifier = Notifier::default();
        notifier.set_flags(Flags::parse("A").unwrap());
        assert!(!notifier.wants(&[Class::Generic]), "no K or E: nothing is published, so nothing is raised");
        notifier.set_flags(Flags::parse("KEAn").unwrap());
        assert_eq!(notifier.flags().to_string(), "AKE");
        assert!(notifier.wants(&[Class::New]) && notifier.wants(&[Class::Set]));
        assert!(!notifier.wants(&[Class::KeyMiss]), "A leaves out m");
        notifier.raise(Class::Set, "sadd", b"k");
        let was_quiet = notifier.set_quiet(true);
        notifier.raise(Class::Set, "srem", b"k");
        notifier.raise(Class::Expired, "expired", b"k");
        notifier.set_quiet(was_quiet);
        let events: Vec<_> = notifier.take().into_iter().map(|e| e.event).collect();
        assert_eq!(events, ["sadd", "expired"], "a quiet step raises only expiries");
        assert!(!notifier.has_pending());
    }

    #[test]
    fn an_event_goes_to_the_keyspace_then_the_keyevent_channel() {
        let event = KeyEvent::new(Class::String, "set", Bytes::from_static(b"foo"));
        let both: Vec<_> = event.channels(Flags::parse("KE$").unwrap()).collect();
        assert_eq!(
            both,
            vec![
                (Bytes::from_static(b"__keyspace@0__:foo"), Bytes::from_static(b"set")),
                (Bytes::from_static(b"__keyevent@0__:set"), Bytes::from_static(b"foo")),
            ]
        );
        assert_eq!(event.channels(Flags::parse("E$").unwrap()).count(), 1);
    }

    #[test]
    fn events_gathered_from_several_shards_come_out_in_argument_order() {
        let event = |event: &'static str, key: &'static str| KeyEvent::new(Class::Generic, event, Bytes::from_static(key.as_bytes()));
        let miss = |key: &'static str| KeyEvent::new(Class::KeyMiss, "keymiss", Bytes::from_static(key.as_bytes()));
        let per_position = vec![vec![event("del", "a")], vec![], vec![event("expired", "c"), miss("c")], vec![miss("d")]];
        let names = |events: Vec<KeyEvent>| events.into_iter().map(|e| (e.event, e.key)).collect::<Vec<_>>();
        let key = |k: &'static str| Bytes::from_static(k.as_bytes());
        assert_eq!(
            names(in_argument_order(per_position.clone(), None)),
            [("del", key("a")), ("expired", key("c")), ("keymiss", key("c")), ("keymiss", key("d"))]
        );
        assert_eq!(
            names(in_argument_order(per_position, Some(1))),
            [("del", key("a")), ("expired", key("c"))],
            "no keymiss past the key that failed; its expiry stays"
        );
    }

    #[test]
    fn take_since_leaves_the_events_raised_before_the_mark() {
        let mut notifier = Notifier::default();
        notifier.set_flags(Flags::parse("Kg").unwrap());
        notifier.raise(Class::Generic, "del", b"before");
        let mark = notifier.mark();
        assert!(notifier.take_since(mark).is_empty());
        notifier.raise(Class::Generic, "del", b"after");
        let since: Vec<_> = notifier.take_since(mark).into_iter().map(|e| e.key).collect();
        assert_eq!(since, [Bytes::from_static(b"after")]);
        let rest: Vec<_> = notifier.take().into_iter().map(|e| e.key).collect();
        assert_eq!(rest, [Bytes::from_static(b"before")]);
    }

    #[test]
    fn pending_events_are_bounded() {
        let mut notifier = Notifier::default();
        notifier.set_flags(Flags::parse("Kg").unwrap());
        for _ in 0..PENDING_EVENTS_MAX + 3 {
            notifier.raise(Class::Generic, "del", b"k");
        }
        assert_eq!(notifier.take().len(), PENDING_EVENTS_MAX);
        assert_eq!(notifier.take_dropped(), 3);
        assert_eq!(notifier.take_dropped(), 0);
    }
}
