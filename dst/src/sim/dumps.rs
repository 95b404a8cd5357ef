//! `--dumps` runs (single node): DUMP of any workload key, and RESTORE of a payload an
//! earlier DUMP answered, with a TTL (relative, absolute, past, or an invalid one) and
//! REPLACE drawn, and one payload in ten damaged. The model checks both replies and
//! applies the RESTORE itself (`model_dump.rs`). Part of the simulator; decides nothing
//! about the node under test.

use std::collections::VecDeque;

use bytes::Bytes;
use meridian::protocol::Frame;
use rand::Rng;

use super::Sim;
use crate::workload;

/// Payloads kept for RESTOREs, newest last.
const DUMPED_KEPT_MAX: usize = 8;

/// Whether a command is a DUMP (asked before the command is handed over to run).
pub(super) fn is_dump(args: &[Bytes]) -> bool {
    args[0].eq_ignore_ascii_case(b"DUMP")
}

/// The last payloads DUMP answered in this run.
#[derive(Default)]
pub(super) struct Dumped(VecDeque<Bytes>);

impl Dumped {
    /// After a command ran: keep the payload a DUMP (`dump`, see [`is_dump`]) answered.
    pub(super) fn note(&mut self, dump: bool, reply: &Frame) {
        if dump && let Frame::Bulk(payload) = reply {
            self.keep(payload.clone());
        }
    }

    fn keep(&mut self, payload: Bytes) {
        if self.0.len() == DUMPED_KEPT_MAX {
            self.0.pop_front();
        }
        self.0.push_back(payload);
        debug_assert!(self.0.len() <= DUMPED_KEPT_MAX);
    }
}

/// The string keys replicated `--dumps` runs DUMP and RESTORE: two the string workload
/// also writes (a RESTORE meets increments, DELs and SETs from every region) and two
/// only these commands and `--renames` write.
const REPLICATED_KEYS: [&str; 4] = ["{t}x", "{t}y", "{r}a", "{r}b"];

impl Sim {
    /// Replication runs: a DUMP of a string key (always while no string payload is
    /// kept, else two in five), or a RESTORE ... REPLACE of a kept string payload onto
    /// one, with no TTL, a relative or an absolute one (long: none fires during a run).
    /// The oracle takes a RESTORE as a SET of the payload's value (`writes.rs`).
    pub(super) fn replicated_dump_or_restore(&mut self) -> Vec<Bytes> {
        let key = REPLICATED_KEYS[self.rng.random_range(0..REPLICATED_KEYS.len())];
        let strings: Vec<&Bytes> = self
            .dumped
            .0
            .iter()
            .filter(|p| matches!(meridian::command::dump::decode_payload(p), Ok(meridian::command::dump::DumpedValue::String(_))))
            .collect();
        if strings.is_empty() || self.rng.random_bool(0.4) {
            return vec![Bytes::from_static(b"DUMP"), Bytes::from_static(key.as_bytes())];
        }
        let payload = strings[self.rng.random_range(0..strings.len())].clone();
        let mut args = vec![Bytes::from_static(b"RESTORE"), Bytes::from_static(key.as_bytes())];
        match self.rng.random_range(0..3) {
            0 => args.push(Bytes::from_static(b"0")),
            1 => args.push(Bytes::from(self.rng.random_range(500_000..1_000_000u64).to_string())),
            _ => {
                // Far ahead of every node's clock.
                args.push(Bytes::from((super::EPOCH_MS + self.now + self.rng.random_range(3_600_000..7_200_000u64)).to_string()));
                args.extend([payload, Bytes::from_static(b"REPLACE"), Bytes::from_static(b"ABSTTL")]);
                return args;
            }
        }
        args.extend([payload, Bytes::from_static(b"REPLACE")]);
        args
    }

    /// A DUMP (always while no payload is kept, else two in five), or a RESTORE of a
    /// kept payload.
    pub(super) fn dump_or_restore(&mut self, base_ms: u64) -> Vec<Bytes> {
        let key = workload::any_key(&mut self.rng);
        if self.dumped.0.is_empty() || self.rng.random_bool(0.4) {
            return vec![Bytes::from_static(b"DUMP"), Bytes::from(key)];
        }
        let mut payload = self.dumped.0[self.rng.random_range(0..self.dumped.0.len())].to_vec();
        if self.rng.random_range(0..10) == 0 {
            // A damaged byte: the checksum (or the footer's version) refuses it.
            let at = self.rng.random_range(0..payload.len());
            payload[at] ^= 1 << self.rng.random_range(0..8);
        }
        let mut args: Vec<Bytes> = vec![Bytes::from_static(b"RESTORE"), Bytes::from(key)];
        let absolute = self.rng.random_bool(0.2);
        let ttl = match self.rng.random_range(0..10) {
            0..=4 => "0".to_string(),
            5..=7 if absolute => (base_ms + self.rng.random_range(0..4_000)).to_string(),
            5..=7 => self.rng.random_range(1..3_000).to_string(),
            // Already past: writes nothing, and removes a key it would have replaced.
            8 if absolute => base_ms.saturating_sub(self.rng.random_range(1..1_000)).to_string(),
            8 => "0".to_string(),
            _ => "-1".to_string(),
        };
        args.push(Bytes::from(ttl));
        args.push(Bytes::from(payload));
        if self.rng.random_bool(0.6) {
            args.push(Bytes::from_static(b"REPLACE"));
        }
        if absolute {
            args.push(Bytes::from_static(b"ABSTTL"));
        }
        args
    }
}
