//! What the harness's clients asked and what they were told: the history the checks
//! read, and the generator of each workload's requests.
//!
//! Owns the request shapes of every workload (Maelstrom's bodies), the outcome of each
//! operation (ok, a definite failure, or indeterminate when it timed out), and the
//! choice of the next request from a seeded RNG. Never does I/O and never judges a
//! history (that is `check`).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use crate::message::{body, code};
use crate::workload::Workload;

/// lin-kv keys the clients use: few, so that operations collide.
pub const KV_KEYS: i64 = 3;

#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// g-set `add` of a unique element, or a counter `add` of a delta.
    Add(i64),
    /// broadcast of a unique message.
    Broadcast(i64),
    /// g-set, counter or broadcast read.
    Read,
    KvRead {
        key: i64,
    },
    KvWrite {
        key: i64,
        value: i64,
    },
    KvCas {
        key: i64,
        from: i64,
        to: i64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pending,
    /// The reply's payload: a read's value (`value` or `messages`), else `Null`.
    Ok(Value),
    /// An error whose code says it did not happen (e.g. 20, 22).
    Failed(i64),
    /// Timed out, or an error that leaves it open: it may or may not have happened.
    Indeterminate,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub client: usize,
    pub node: usize,
    pub request: Request,
    /// Microseconds since the run started, when the request was sent.
    pub invoked_us: u64,
    /// When the reply arrived (`None`: pending or timed out).
    pub completed_us: Option<u64>,
    pub outcome: Outcome,
}

impl Op {
    /// The key of a lin-kv operation.
    pub fn kv_key(&self) -> Option<i64> {
        match self.request {
            Request::KvRead { key } | Request::KvWrite { key, .. } | Request::KvCas { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The value a lin-kv operation would write (a write's value, a cas's `to`).
    pub fn kv_written(&self) -> Option<i64> {
        match self.request {
            Request::KvWrite { value, .. } => Some(value),
            Request::KvCas { to, .. } => Some(to),
            _ => None,
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok(_))
    }
}

/// The request's Maelstrom body (the harness adds `msg_id`).
pub fn request_body(workload: Workload, request: &Request) -> Map<String, Value> {
    match (workload, request) {
        (Workload::GSet, Request::Add(element)) => body("add", json!({"element": element})),
        (_, Request::Add(delta)) => body("add", json!({"delta": delta})),
        (_, Request::Broadcast(message)) => body("broadcast", json!({"message": message})),
        (_, Request::Read) => body("read", json!({})),
        (_, Request::KvRead { key }) => body("read", json!({"key": key})),
        (_, Request::KvWrite { key, value }) => body("write", json!({"key": key, "value": value})),
        (_, Request::KvCas { key, from, to }) => body("cas", json!({"key": key, "from": from, "to": to})),
    }
}

/// The outcome a reply body says.
pub fn outcome_of(reply: &Map<String, Value>) -> Outcome {
    match reply.get("type").and_then(Value::as_str) {
        Some("error") => {
            let code = reply.get("code").and_then(Value::as_i64).unwrap_or(code::CRASH);
            if code::is_definite(code) { Outcome::Failed(code) } else { Outcome::Indeterminate }
        }
        Some(_) => Outcome::Ok(reply.get("value").or_else(|| reply.get("messages")).cloned().unwrap_or(Value::Null)),
        None => Outcome::Indeterminate,
    }
}

/// Picks each client's next request.
pub struct Generator {
    workload: Workload,
    /// The next unique element, message or lin-kv value.
    next_unique: i64,
    /// Per lin-kv key, the newest value a client saw acknowledged (a cas's `from`).
    kv_latest: Vec<Option<i64>>,
}

impl Generator {
    pub fn new(workload: Workload) -> Generator {
        Generator { workload, next_unique: 1, kv_latest: vec![None; KV_KEYS as usize] }
    }

    fn unique(&mut self) -> i64 {
        self.next_unique += 1;
        self.next_unique - 1
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> Request {
        let roll: f64 = rng.random();
        match self.workload {
            Workload::GSet if roll < 0.7 => Request::Add(self.unique()),
            Workload::Broadcast if roll < 0.7 => Request::Broadcast(self.unique()),
            Workload::GCounter if roll < 0.7 => Request::Add(rng.random_range(0..=5)),
            Workload::PnCounter if roll < 0.7 => Request::Add(rng.random_range(-5..=5)),
            Workload::GSet | Workload::Broadcast | Workload::GCounter | Workload::PnCounter => Request::Read,
            Workload::LinKv => {
                let key = rng.random_range(0..KV_KEYS);
                match self.kv_latest[key as usize] {
                    _ if roll < 0.5 => Request::KvRead { key },
                    Some(from) if roll < 0.75 => Request::KvCas { key, from, to: self.unique() },
                    _ => Request::KvWrite { key, value: self.unique() },
                }
            }
        }
    }

    /// Learn from a completed operation (a cas's `from` is the newest value seen).
    pub fn observe(&mut self, op: &Op) {
        let Some(key) = op.kv_key() else { return };
        let seen = match (&op.request, &op.outcome) {
            (Request::KvRead { .. }, Outcome::Ok(value)) => value.as_i64(),
            (_, Outcome::Ok(_)) => op.kv_written(),
            _ => None,
        };
        if let Some(value) = seen {
            self.kv_latest[key as usize] = Some(value);
        }
    }
}
