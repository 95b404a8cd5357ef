//! Stream writes in replication runs (`SimConfig::streams`): the random XADD / XDEL /
//! XRANGE workload on one stream key, and the reference semantics of a replicated
//! stream (docs/streams.md, "Across regions"), written without the stream engine's code:
//! - every XADD a node accepted adds an entry at the id it answered, with its value;
//!   ids generated with `*` on different nodes are never equal, so no entry can
//!   replace another;
//! - an entry goes only through an XDEL of its id that a node answered 1 to (that node
//!   held it; nothing in this workload adds an id twice);
//! - every node's XRANGE is the surviving entries in id order, and the low 16 bits of
//!   each generated id's sequence are the id of the node that generated it.
//!
//! A crash can lose accepted writes: a run with a restart checks safety only (every
//! entry a node returns was added with that id and value, and its id carries its node).
//! A write the crash lost never left its node (`replication::reservation` holds back
//! what is not yet stored), so its id may be answered again after the restart: two
//! XADDs answered one id are a failure only in a run without restarts.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::protocol::Frame;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The stream key of the workload.
pub const STREAM_KEY: &str = "st";
/// XDEL names one of the most recent ids answered: small enough that regions delete
/// entries others added, large enough that some entries live to the end.
const RECENT_IDS: usize = 8;

/// Parse `<ms>-<seq>`.
fn parse_id(text: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let (ms, seq) = text.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

fn show((ms, seq): (u64, u64)) -> String {
    format!("{ms}-{seq}")
}

/// What the workload has handed out: values, and the ids replies gave it.
#[derive(Default)]
pub struct StreamNames {
    values: u64,
    recent: Vec<(u64, u64)>,
}

/// One random stream command: an entry added with a generated id, a recent entry
/// deleted, or a read.
pub fn stream_command(rng: &mut ChaCha8Rng, names: &mut StreamNames) -> Vec<Bytes> {
    let key = Bytes::from_static(STREAM_KEY.as_bytes());
    let b = |s: &'static str| Bytes::from_static(s.as_bytes());
    match rng.random_range(0..10) {
        0..=5 => {
            names.values += 1;
            vec![b("XADD"), key, b("*"), b("v"), Bytes::from(format!("w{}", names.values))]
        }
        6..=7 if !names.recent.is_empty() => {
            let id = names.recent[rng.random_range(0..names.recent.len())];
            vec![b("XDEL"), key, Bytes::from(show(id))]
        }
        _ => vec![b("XRANGE"), key, b("-"), b("+"), b("COUNT"), b("5")],
    }
}

/// Every accepted stream write, by entry id.
#[derive(Default)]
pub struct StreamOracle {
    /// id -> (value, node that generated it, deleted).
    entries: BTreeMap<(u64, u64), (Bytes, u16, bool)>,
    /// Every value an XADD was answered each id with (a restart may reuse a lost id).
    answered: BTreeMap<(u64, u64), Vec<Bytes>>,
    /// Two accepted XADDs answered the same id (the bug the oracle exists for).
    pub duplicate: Option<String>,
    /// A node restarted during the run: accepted writes may be lost.
    pub tainted: bool,
}

impl StreamOracle {
    /// Record what `args` did on node `node_id`, answered `reply`.
    pub fn record(&mut self, names: &mut StreamNames, node_id: u16, args: &[Bytes], reply: &Frame) {
        let command = args[0].to_ascii_uppercase();
        match (command.as_slice(), reply) {
            (b"XADD", Frame::Bulk(id)) => {
                let Some(id) = parse_id(id) else { return };
                let value = args[4].clone();
                if let Some((other, by, _)) = self.entries.get(&id)
                    && *other != value
                {
                    self.duplicate.get_or_insert(format!(
                        "{} was answered to two XADDs: {other:?} on node {by} and {value:?} on node {node_id}",
                        show(id)
                    ));
                }
                self.answered.entry(id).or_default().push(value.clone());
                self.entries.insert(id, (value, node_id, false));
                names.recent.push(id);
                if names.recent.len() > RECENT_IDS {
                    names.recent.remove(0);
                }
            }
            (b"XDEL", Frame::Integer(1)) => {
                if let Some(id) = parse_id(&args[2])
                    && let Some(entry) = self.entries.get_mut(&id)
                {
                    entry.2 = true;
                }
            }
            _ => {}
        }
    }

    /// The entries that must be there, in id order.
    pub fn expected(&self) -> Vec<(String, Bytes)> {
        self.entries.iter().filter(|(_, e)| !e.2).map(|(id, e)| (show(*id), e.0.clone())).collect()
    }

    /// Compare one node's `XRANGE st - +` with the oracle: exactly, or, when tainted,
    /// for safety.
    pub fn check(&self, reply: &Frame) -> Result<usize, String> {
        if let Some(duplicate) = self.duplicate.as_ref().filter(|_| !self.tainted) {
            return Err(duplicate.clone());
        }
        let actual = entries_of(reply)?;
        for (id, value) in &actual {
            let parsed = parse_id(id.as_bytes()).ok_or_else(|| format!("not an id: {id}"))?;
            match self.entries.get(&parsed) {
                None => return Err(format!("entry {id} was never added")),
                Some((want, by, _)) if want != value && !(self.tainted && self.answered[&parsed].contains(value)) => {
                    return Err(format!("entry {id} holds {value:?}, added as {want:?} by node {by}"));
                }
                Some((_, by, _)) if parsed.1 & 0xffff != u64::from(*by) => {
                    return Err(format!("entry {id} was generated by node {by}, but its sequence does not carry it"));
                }
                Some(_) => {}
            }
        }
        if !self.tainted {
            let want = self.expected();
            if actual != want {
                return Err(format!("stream differs from the oracle:\n  node:   {actual:?}\n  oracle: {want:?}"));
            }
        }
        Ok(actual.len())
    }
}

/// XRANGE's reply as (id, value of field `v`) pairs.
fn entries_of(reply: &Frame) -> Result<Vec<(String, Bytes)>, String> {
    let Frame::Array(entries) = reply else { return Err(format!("not an XRANGE reply: {reply:?}")) };
    entries
        .iter()
        .map(|entry| match entry {
            Frame::Array(pair) => match (pair.first(), pair.get(1)) {
                (Some(Frame::Bulk(id)), Some(Frame::Array(fields))) => match fields.get(1) {
                    Some(Frame::Bulk(value)) => Ok((String::from_utf8_lossy(id).into_owned(), value.clone())),
                    _ => Err(format!("entry without a value: {entry:?}")),
                },
                _ => Err(format!("not an entry: {entry:?}")),
            },
            other => Err(format!("not an entry: {other:?}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn xrange(entries: &[(&str, &str)]) -> Frame {
        Frame::Array(
            entries
                .iter()
                .map(|(id, v)| Frame::Array(vec![Frame::Bulk(b(id)), Frame::Array(vec![Frame::Bulk(b("v")), Frame::Bulk(b(v))])]))
                .collect(),
        )
    }

    #[test]
    fn the_oracle_wants_every_added_entry_but_the_deleted_ones_and_no_shared_id() {
        let mut oracle = StreamOracle::default();
        let mut names = StreamNames::default();
        let add = |v: &str| vec![b("XADD"), b("st"), b("*"), b("v"), b(v)];
        oracle.record(&mut names, 1, &add("w1"), &Frame::Bulk(b("5-1")));
        oracle.record(&mut names, 2, &add("w2"), &Frame::Bulk(b("5-2")));
        oracle.record(&mut names, 2, &[b("XDEL"), b("st"), b("5-1")], &Frame::Integer(1));
        assert_eq!(oracle.check(&xrange(&[("5-2", "w2")])), Ok(1));
        assert!(oracle.check(&xrange(&[("5-1", "w1"), ("5-2", "w2")])).is_err(), "a deleted entry came back");
        assert!(oracle.check(&xrange(&[])).is_err(), "an entry was lost");
        // Two regions answered one id: whatever survives, one XADD was lost.
        oracle.record(&mut names, 3, &add("w3"), &Frame::Bulk(b("5-2")));
        assert!(oracle.check(&xrange(&[("5-2", "w3")])).is_err());
    }

    #[test]
    fn a_generated_id_must_carry_its_node() {
        let mut oracle = StreamOracle::default();
        let mut names = StreamNames::default();
        oracle.record(&mut names, 2, &[b("XADD"), b("st"), b("*"), b("v"), b("w1")], &Frame::Bulk(b("5-1")));
        assert!(oracle.check(&xrange(&[("5-1", "w1")])).is_err());
    }
}
