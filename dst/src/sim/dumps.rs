//! `--dumps` runs (single node): DUMP of any workload key, and RESTORE of a payload an
//! earlier DUMP answered, with a TTL (relative, absolute, past, or an invalid one) and
//! REPLACE drawn, and one payload in ten damaged. The model checks both replies and
//! applies the RESTORE itself (`model_dump.rs`). Part of the simulator; decides nothing
//! about the node under test.

use std::collections::VecDeque;

use bytes::Bytes;
use rand::Rng;

use super::Sim;
use crate::workload;

/// Payloads kept for RESTOREs, newest last.
const DUMPED_KEPT_MAX: usize = 8;

/// The last payloads DUMP answered in this run.
#[derive(Default)]
pub(super) struct Dumped(VecDeque<Bytes>);

impl Dumped {
    pub(super) fn keep(&mut self, payload: Bytes) {
        if self.0.len() == DUMPED_KEPT_MAX {
            self.0.pop_front();
        }
        self.0.push_back(payload);
        debug_assert!(self.0.len() <= DUMPED_KEPT_MAX);
    }
}

impl Sim {
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
