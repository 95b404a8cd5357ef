//! Time-to-live as a CRDT (DESIGN §5): a multi-value register of TTL writes whose read
//! rule is "PERSIST beats all, otherwise the longest TTL wins". A local EXPIRE or
//! PERSIST replaces every TTL write it has seen; concurrent ones are kept and resolved
//! by the read rule, so every replica computes the same expiry instant.

use super::register::MvRegister;

/// One TTL write.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TtlWrite {
    /// Expire at this absolute unix time in milliseconds.
    At(u64),
    /// Explicitly remove any expiry (PERSIST).
    Persist,
}

pub type TtlRegister = MvRegister<TtlWrite>;

/// The absolute expiry instant (unix ms) the register resolves to, if any.
pub fn resolve(register: &TtlRegister) -> Option<u64> {
    let mut longest: Option<u64> = None;
    for (_, write) in register.entries() {
        match *write {
            TtlWrite::Persist => return None,
            TtlWrite::At(at_ms) => longest = Some(longest.map_or(at_ms, |l| l.max(at_ms))),
        }
    }
    longest
}
