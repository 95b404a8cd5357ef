//! The failure report of a replicated run whose converged values differ from the
//! oracle's: the first such key, its writes (one line each) and the faults around
//! them, instead of the whole history. Reads the run; decides nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;
use meridian::crdt::{Dot, Hlc, VersionVector};

use super::{EPOCH_MS, Sim};
use crate::oracle::{Op, OpKind, Ttl};

/// A key's value and expiry instant, as replicas hold it or the oracle expects it.
pub(super) type Converged = (Vec<u8>, Option<u64>);

/// Writes to the failing key shown besides its survivors: the last ones.
const WRITES_SHOWN_MAX: usize = 24;
/// Fault events shown: those from a little before the first shown write to the end.
const FAULTS_SHOWN_MAX: usize = 40;
/// Simulated ms before the first shown write from which faults count as around it.
const FAULTS_BEFORE_MS: u64 = 1_000;
/// Other differing keys named (one line each) after the first.
const OTHER_KEYS_SHOWN_MAX: usize = 5;

impl Sim {
    /// What differs, with what touched the first differing key.
    pub(super) fn divergence_report(&self, actual: &BTreeMap<Bytes, Converged>, wanted: &BTreeMap<Bytes, Converged>) -> String {
        let differing: Vec<&Bytes> = {
            let mut keys: Vec<&Bytes> = actual.keys().chain(wanted.keys()).filter(|k| actual.get(*k) != wanted.get(*k)).collect();
            keys.sort();
            keys.dedup();
            keys
        };
        let mut out = format!("converged values differ from the oracle on {} key(s)", differing.len());
        for key in differing.iter().take(1 + OTHER_KEYS_SHOWN_MAX) {
            let _ = write!(out, "\n  {}: replicas {} / oracle {}", show_key(key), show(actual.get(*key)), show(wanted.get(*key)));
        }
        let Some(&key) = differing.first() else { return out };
        let ops = self.oracle.ops.get(key).map(Vec::as_slice).unwrap_or_default();
        let survivors: Vec<Dot> = self.oracle.survivors(key).iter().map(|o| o.dot).collect();
        let first_shown = ops.len().saturating_sub(WRITES_SHOWN_MAX);
        let shown: Vec<&Op> =
            ops.iter().enumerate().filter(|(i, o)| *i >= first_shown || survivors.contains(&o.dot)).map(|(_, o)| o).collect();
        let _ = write!(
            out,
            "\n  writes to {} ({} in all, {} shown; * survives in the oracle; a stamp is node@ms since the run's epoch.logical):",
            show_key(key),
            ops.len(),
            shown.len()
        );
        for op in &shown {
            let mark = if survivors.contains(&op.dot) { '*' } else { ' ' };
            let _ = write!(out, "\n   {mark} {}", show_op(op));
        }
        let since = shown.iter().map(|o| o.sim_ms).min().unwrap_or(0).saturating_sub(FAULTS_BEFORE_MS);
        let faults: Vec<&(u64, String)> = self.fault_log.iter().filter(|(at, _)| *at >= since).collect();
        let _ = write!(out, "\n  faults from {since} ms ({} in all, {} shown):", faults.len(), faults.len().min(FAULTS_SHOWN_MAX));
        for (at, line) in faults.iter().take(FAULTS_SHOWN_MAX) {
            let _ = write!(out, "\n    {at:>6} ms  {line}");
        }
        out
    }
}

fn show_key(key: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(key))
}

fn show(converged: Option<&Converged>) -> String {
    match converged {
        None => "(no key)".to_owned(),
        Some((value, None)) => format!("{:?} no TTL", String::from_utf8_lossy(value)),
        Some((value, Some(at))) => format!("{:?} expires {}", String::from_utf8_lossy(value), show_ms(*at)),
    }
}

/// An instant as ms since the run's epoch (clocks jump, so it may be negative).
fn show_ms(unix_ms: u64) -> String {
    format!("{:+}", unix_ms as i64 - EPOCH_MS as i64)
}

fn show_hlc(hlc: Hlc) -> String {
    format!("{}.{}", hlc.physical_ms() as i64 - EPOCH_MS as i64, hlc.logical())
}

/// A dot, its node named as the trace names nodes (`n0` is node id 1).
fn show_dot(dot: Dot) -> String {
    format!("n{}@{}", dot.node.saturating_sub(1), show_hlc(dot.hlc))
}

fn show_context(vv: &VersionVector) -> String {
    vv.iter().map(show_dot).collect::<Vec<_>>().join(" ")
}

fn show_op(op: &Op) -> String {
    let kind = match &op.kind {
        OpKind::Set { value, ttl } => {
            let ttl = match ttl {
                Ttl::Clear => String::new(),
                Ttl::Keep => " KEEPTTL".to_owned(),
                Ttl::At(at) => format!(" expires {}", show_ms(*at)),
            };
            format!("SET {:?}{ttl}", String::from_utf8_lossy(value))
        }
        OpKind::Incr(by) => format!("INCRBY {by}"),
        OpKind::Del => "DEL".to_owned(),
        OpKind::Expire(at) => format!("EXPIRE expires {}", show_ms(*at)),
        OpKind::Persist => "PERSIST".to_owned(),
    };
    let mut line = format!("{:>6} ms {} {kind}; saw [{}]", op.sim_ms, show_dot(op.dot), show_context(&op.observed));
    if !op.existed {
        line.push_str("; key absent there");
    }
    if !op.unobserved.is_empty() {
        let _ = write!(line, "; not held [{}]", op.unobserved.iter().map(|d| show_dot(*d)).collect::<Vec<_>>().join(" "));
    }
    if !op.supersedes.is_empty() {
        let _ = write!(line, "; supersedes lost [{}]", op.supersedes.iter().map(|d| show_dot(*d)).collect::<Vec<_>>().join(" "));
    }
    line
}
