//! Pub/Sub subscriptions: which client listens to which channels, patterns and shard
//! channels, and who a message published to a channel reaches.
//!
//! Pure data: no I/O, no clock. The shell keeps one [`Registry`] per node behind a lock
//! and delivers what [`Registry::recipients`] names to each client's bounded mailbox.
//! Messages are not data: they are never stored, replicated as deltas or persisted.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use indexmap::IndexSet;

use crate::command::SubscriptionKind;
use crate::engine::kv::glob::glob_match;

/// Subscriptions one client may hold at most, of all kinds together (Redis has no limit;
/// each costs memory here).
pub const SUBSCRIPTIONS_PER_CLIENT_MAX: usize = 1 << 20;

pub type ClientId = u64;

/// One client's subscriptions, in the order it made them.
#[derive(Default, Debug)]
struct ClientSubscriptions {
    channels: IndexSet<Bytes>,
    patterns: IndexSet<Bytes>,
    shard_channels: IndexSet<Bytes>,
}

impl ClientSubscriptions {
    fn of(&self, kind: SubscriptionKind) -> &IndexSet<Bytes> {
        match kind {
            SubscriptionKind::Channel => &self.channels,
            SubscriptionKind::Pattern => &self.patterns,
            SubscriptionKind::Shard => &self.shard_channels,
        }
    }

    fn of_mut(&mut self, kind: SubscriptionKind) -> &mut IndexSet<Bytes> {
        match kind {
            SubscriptionKind::Channel => &mut self.channels,
            SubscriptionKind::Pattern => &mut self.patterns,
            SubscriptionKind::Shard => &mut self.shard_channels,
        }
    }

    fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard_channels.len()
    }
}

/// Who receives a message: the client, and the pattern it matched (`None`: it is
/// subscribed to the channel itself).
pub type Recipient = (ClientId, Option<Bytes>);

/// Every subscription on this node.
#[derive(Default, Debug)]
pub struct Registry {
    by_name: [HashMap<Bytes, BTreeSet<ClientId>>; 3],
    clients: HashMap<ClientId, ClientSubscriptions>,
}

fn slot(kind: SubscriptionKind) -> usize {
    match kind {
        SubscriptionKind::Channel => 0,
        SubscriptionKind::Pattern => 1,
        SubscriptionKind::Shard => 2,
    }
}

impl Registry {
    /// Subscribe `client` to `name`; false when it already was (or holds the most
    /// subscriptions a client may).
    pub fn subscribe(&mut self, client: ClientId, kind: SubscriptionKind, name: &Bytes) -> bool {
        let subscriptions = self.clients.entry(client).or_default();
        if subscriptions.total() >= SUBSCRIPTIONS_PER_CLIENT_MAX || !subscriptions.of_mut(kind).insert(name.clone()) {
            return false;
        }
        self.by_name[slot(kind)].entry(name.clone()).or_default().insert(client);
        true
    }

    /// Unsubscribe `client` from `name`; false when it was not subscribed.
    pub fn unsubscribe(&mut self, client: ClientId, kind: SubscriptionKind, name: &[u8]) -> bool {
        let Some(subscriptions) = self.clients.get_mut(&client) else { return false };
        if !subscriptions.of_mut(kind).shift_remove(name) {
            return false;
        }
        if subscriptions.total() == 0 {
            self.clients.remove(&client);
        }
        let names = &mut self.by_name[slot(kind)];
        if let Some(clients) = names.get_mut(name) {
            clients.remove(&client);
            if clients.is_empty() {
                names.remove(name);
            }
        }
        true
    }

    /// A client's subscriptions of one kind, in the order it made them.
    pub fn subscriptions(&self, client: ClientId, kind: SubscriptionKind) -> Vec<Bytes> {
        self.clients.get(&client).map(|s| s.of(kind).iter().cloned().collect()).unwrap_or_default()
    }

    /// The count Redis reports in a (un)subscribe reply: channels and patterns together
    /// for those two kinds, shard channels alone for the shard kind.
    pub fn reply_count(&self, client: ClientId, kind: SubscriptionKind) -> usize {
        let Some(s) = self.clients.get(&client) else { return 0 };
        match kind {
            SubscriptionKind::Shard => s.shard_channels.len(),
            _ => s.channels.len() + s.patterns.len(),
        }
    }

    /// A client's subscriptions by kind: channels, patterns, shard channels.
    pub fn counts(&self, client: ClientId) -> [usize; 3] {
        self.clients.get(&client).map_or([0; 3], |s| [s.channels.len(), s.patterns.len(), s.shard_channels.len()])
    }

    /// Every subscription a client holds, of all kinds.
    pub fn total(&self, client: ClientId) -> usize {
        self.clients.get(&client).map_or(0, ClientSubscriptions::total)
    }

    /// Forget a client (it disconnected or RESET).
    pub fn remove_client(&mut self, client: ClientId) {
        let Some(subscriptions) = self.clients.remove(&client) else { return };
        for kind in [SubscriptionKind::Channel, SubscriptionKind::Pattern, SubscriptionKind::Shard] {
            let names = &mut self.by_name[slot(kind)];
            for name in subscriptions.of(kind) {
                if let Some(clients) = names.get_mut(name) {
                    clients.remove(&client);
                    if clients.is_empty() {
                        names.remove(name);
                    }
                }
            }
        }
    }

    /// Who a message published to `channel` reaches: its subscribers, then one entry
    /// per matching pattern subscription (as Redis: a client subscribed to the channel
    /// and to two matching patterns gets three messages). Shard channels match no
    /// pattern. [`Registry::channel_subscribers`] and [`Registry::matching_patterns`]
    /// name the same recipients without collecting them.
    pub fn recipients(&self, shard: bool, channel: &[u8]) -> Vec<Recipient> {
        let mut recipients: Vec<Recipient> = self.channel_subscribers(shard, channel).map(|client| (client, None)).collect();
        for (pattern, clients) in self.matching_patterns(shard, channel) {
            recipients.extend(clients.map(|client| (client, Some(pattern.clone()))));
        }
        recipients
    }

    /// The clients subscribed to `channel` itself (a shard channel when `shard`).
    pub fn channel_subscribers(&self, shard: bool, channel: &[u8]) -> impl Iterator<Item = ClientId> + '_ {
        let kind = if shard { SubscriptionKind::Shard } else { SubscriptionKind::Channel };
        self.by_name[slot(kind)].get(channel).into_iter().flatten().copied()
    }

    /// Each pattern `channel` matches, with the clients subscribed to it (none for a
    /// shard channel).
    pub fn matching_patterns<'a>(
        &'a self,
        shard: bool,
        channel: &'a [u8],
    ) -> impl Iterator<Item = (&'a Bytes, impl Iterator<Item = ClientId> + 'a)> + 'a {
        let patterns = if shard { None } else { Some(&self.by_name[slot(SubscriptionKind::Pattern)]) };
        patterns
            .into_iter()
            .flatten()
            .filter(move |(pattern, _)| glob_match(pattern, channel))
            .map(|(pattern, clients)| (pattern, clients.iter().copied()))
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: channels with a subscriber, matching `pattern`.
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let kind = if shard { SubscriptionKind::Shard } else { SubscriptionKind::Channel };
        self.by_name[slot(kind)].keys().filter(|name| pattern.is_none_or(|p| glob_match(p, name))).cloned().collect()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: subscribers of one channel.
    pub fn subscribers(&self, shard: bool, channel: &[u8]) -> usize {
        let kind = if shard { SubscriptionKind::Shard } else { SubscriptionKind::Channel };
        self.by_name[slot(kind)].get(channel).map_or(0, BTreeSet::len)
    }

    /// Channels (or shard channels) with a subscriber.
    pub fn channel_count(&self, shard: bool) -> usize {
        self.by_name[slot(if shard { SubscriptionKind::Shard } else { SubscriptionKind::Channel })].len()
    }

    /// PUBSUB NUMPAT: distinct patterns subscribed to.
    pub fn pattern_count(&self) -> usize {
        self.by_name[slot(SubscriptionKind::Pattern)].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SubscriptionKind::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn a_message_reaches_channel_subscribers_and_each_matching_pattern_subscription() {
        let mut registry = Registry::default();
        assert!(registry.subscribe(1, Channel, &b("news.eu")));
        assert!(!registry.subscribe(1, Channel, &b("news.eu")), "twice is once");
        assert!(registry.subscribe(1, Pattern, &b("news.*")));
        assert!(registry.subscribe(2, Pattern, &b("news.*")));
        assert!(registry.subscribe(2, Pattern, &b("*.eu")));
        assert!(registry.subscribe(3, Shard, &b("news.eu")));
        let mut got = registry.recipients(false, b"news.eu");
        got.sort();
        assert_eq!(got, vec![(1, None), (1, Some(b("news.*"))), (2, Some(b("*.eu"))), (2, Some(b("news.*")))]);
        assert_eq!(registry.recipients(true, b"news.eu"), vec![(3, None)], "shard channels match no pattern");
        assert_eq!(registry.pattern_count(), 2);
        assert_eq!(registry.reply_count(1, Pattern), 2);
        assert_eq!(registry.reply_count(3, Shard), 1);
    }

    #[test]
    fn unsubscribing_and_leaving_forget_everything() {
        let mut registry = Registry::default();
        registry.subscribe(1, Channel, &b("a"));
        registry.subscribe(1, Pattern, &b("a*"));
        registry.subscribe(2, Channel, &b("a"));
        assert!(registry.unsubscribe(1, Channel, b"a"));
        assert!(!registry.unsubscribe(1, Channel, b"a"));
        assert_eq!(registry.subscribers(false, b"a"), 1);
        registry.remove_client(1);
        registry.remove_client(2);
        assert!(registry.recipients(false, b"a").is_empty());
        assert!(registry.channels(false, None).is_empty());
        assert_eq!(registry.pattern_count(), 0);
        assert!(registry.clients.is_empty() && registry.by_name.iter().all(HashMap::is_empty), "nothing left behind");
    }
}
