//! The seed of the key hash, and how a node gets it.
//!
//! The key hash places keys in a shard's hash tables and Merkle anti-entropy leaves
//! (`keyspace::leaf_of`). With a seed anyone knows, a client can craft keys that all
//! collide and turn every lookup into a scan (hash flooding); so the seed is secret. It
//! must also be the *same on every node of a cluster*: peers compare Merkle leaves by
//! number, and a key must fall in the same leaf everywhere, or anti-entropy would see
//! differences that are not there (and ship full key states forever).
//!
//! So a node with a cluster secret derives the seed from it with a keyed hash
//! (HMAC-SHA256 of a fixed label under the secret): every node that can talk to the
//! others (they prove the same secret on every link) hashes alike, and the secret
//! never leaves the node. A lone node without a secret has no one to agree with and
//! draws a random seed per process, as Redis does. The simulator and the Maelstrom node
//! never set it and use the built-in seed, the same for all their nodes.
//!
//! Owns one process-wide value, set once before the first key is hashed
//! (`shell::run` does it first); it must never change afterwards, since every table
//! built under the old seed would lose its keys.

use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The seed when none was set (the simulator, Maelstrom, unit tests).
pub const BUILT_IN_SEED: u64 = 0x6d65_7269_6469_616e;

/// What the secret is hashed with: a label, so that this use of the secret gives a
/// value no other use of it gives.
const SEED_LABEL: &[u8] = b"meridian key hash seed v1";

static SEED: OnceLock<u64> = OnceLock::new();

/// The seed in force.
#[inline]
pub fn key_hash_seed() -> u64 {
    SEED.get().copied().unwrap_or(BUILT_IN_SEED)
}

/// Fix the process's seed. Refused once set to another value.
pub fn set_key_hash_seed(seed: u64) -> Result<(), String> {
    let set = *SEED.get_or_init(|| seed);
    if set == seed { Ok(()) } else { Err("the key hash seed is already set to another value".into()) }
}

/// The seed every node holding `secret` derives.
pub fn seed_from_secret(secret: &[u8]) -> u64 {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(SEED_LABEL);
    let digest = mac.finalize().into_bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::keyspace::key_hash_with_seed;

    #[test]
    fn nodes_with_the_same_secret_hash_keys_alike_and_other_secrets_differ() {
        let a = seed_from_secret(b"correct horse battery");
        assert_eq!(a, seed_from_secret(b"correct horse battery"), "same secret, same seed");
        let b = seed_from_secret(b"correct horse battery!");
        assert_ne!(a, b);
        assert_ne!(a, BUILT_IN_SEED);
        let keys: Vec<String> = (0..64).map(|i| format!("key:{i}")).collect();
        for key in &keys {
            assert_eq!(
                key_hash_with_seed(a, key.as_bytes()),
                key_hash_with_seed(seed_from_secret(b"correct horse battery"), key.as_bytes())
            );
        }
        let differing = keys.iter().filter(|k| key_hash_with_seed(a, k.as_bytes()) != key_hash_with_seed(b, k.as_bytes())).count();
        assert_eq!(differing, keys.len(), "another secret moves every key");
    }

    #[test]
    fn the_seed_cannot_change_once_set() {
        // The unit tests run under the built-in seed; setting it to that is a no-op.
        assert!(set_key_hash_seed(key_hash_seed()).is_ok());
        assert!(set_key_hash_seed(key_hash_seed() ^ 1).is_err());
    }
}
