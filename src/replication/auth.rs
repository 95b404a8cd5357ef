//! Peer authentication: a challenge–response over the cluster secret (DESIGN §6).
//!
//! Each end sends a fresh random nonce and proves it knows the secret by returning
//! HMAC-SHA256(secret, role | dialer nonce | listener nonce | dialer id | listener id).
//! The secret never crosses the wire; a proof is bound to both nonces and both node
//! ids, and the role label keeps one end's proof from being replayed as the other's.
//! Nonces come in from the caller (the shell draws them from the OS RNG).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::wire::{NONCE_BYTES, PROOF_BYTES};

/// Which end of a link a proof is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Dialer,
    Listener,
}

/// Everything a proof is bound to.
#[derive(Copy, Clone, Debug)]
pub struct Exchange {
    pub dialer_nonce: [u8; NONCE_BYTES],
    pub listener_nonce: [u8; NONCE_BYTES],
    pub dialer_id: u16,
    pub listener_id: u16,
}

fn mac(secret: &[u8], role: Role, exchange: &Exchange) -> Hmac<Sha256> {
    // HMAC accepts keys of any length.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(match role {
        Role::Dialer => b"meridian-repl-v1-dialer",
        Role::Listener => b"meridian-repl-v1-listener",
    });
    mac.update(&exchange.dialer_nonce);
    mac.update(&exchange.listener_nonce);
    mac.update(&exchange.dialer_id.to_le_bytes());
    mac.update(&exchange.listener_id.to_le_bytes());
    mac
}

/// The proof `role` sends.
pub fn prove(secret: &[u8], role: Role, exchange: &Exchange) -> [u8; PROOF_BYTES] {
    mac(secret, role, exchange).finalize().into_bytes().into()
}

/// Whether `proof` is the one `role` should have sent (compared in constant time).
pub fn verify(secret: &[u8], role: Role, exchange: &Exchange, proof: &[u8; PROOF_BYTES]) -> bool {
    mac(secret, role, exchange).verify_slice(proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange() -> Exchange {
        Exchange { dialer_nonce: [1; NONCE_BYTES], listener_nonce: [2; NONCE_BYTES], dialer_id: 1, listener_id: 2 }
    }

    #[test]
    fn the_right_secret_verifies_and_a_wrong_one_does_not() {
        let proof = prove(b"secret", Role::Dialer, &exchange());
        assert!(verify(b"secret", Role::Dialer, &exchange(), &proof));
        assert!(!verify(b"other", Role::Dialer, &exchange(), &proof));
    }

    #[test]
    fn a_proof_is_bound_to_its_role_nonces_and_ids() {
        let proof = prove(b"secret", Role::Listener, &exchange());
        assert!(!verify(b"secret", Role::Dialer, &exchange(), &proof));
        let mut other = exchange();
        other.dialer_nonce[0] = 9;
        assert!(!verify(b"secret", Role::Listener, &other, &proof));
        let mut other = exchange();
        other.dialer_id = 3;
        assert!(!verify(b"secret", Role::Listener, &other, &proof));
    }
}
