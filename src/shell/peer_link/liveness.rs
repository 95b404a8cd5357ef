//! When a link gives up: on a round that will not complete, and on the whole connection
//! once its peer is given up on. Part of the shell's peer links (`shell::peer_link`);
//! decides nothing itself: `replication::anti_entropy` and `replication::stability`
//! say when, this only acts on the link.

use std::time::Duration;

use super::super::now_ms;
use super::super::replication::{Peer, Replication};
use crate::replication::anti_entropy::AntiEntropy;

/// How often a link checks whether its peer has become given up on (`until_given_up`).
const GIVE_UP_CHECK: Duration = Duration::from_millis(250);

/// Returns once tombstone collection has left peer `remote` out (given up on: silent
/// past `--peer-horizon-ms`) since this link came up. The link is then dropped with
/// what is in flight on it, even a write blocked on a full socket: batches delivered
/// to the peer late could carry writes that collection removed. The next connection
/// compares trees before it sends any batch and drops what was queued before its
/// round (`PeerQueue::states_sent`), so the peer is caught up by the absence rule
/// (`shard::absence`) and no such write arrives after.
pub(super) async fn until_given_up(replication: &Replication, remote: u16) {
    let episodes = || replication.stability.lock().map(|s| s.give_up_episodes(remote)).unwrap_or(0);
    let linked = episodes();
    let mut check = tokio::time::interval(GIVE_UP_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        check.tick().await;
        if episodes() != linked {
            return;
        }
    }
}

/// Rounds that will not complete (`AntiEntropy::stalled_rounds`) are given up, so that
/// a gap such a round was to close asks for another.
pub(super) fn give_up_stalled_rounds(
    ae: &mut AntiEntropy,
    round_token: &mut Option<(u64, u64)>,
    peer: &Peer,
    remote: u16,
    replication: &Replication,
) {
    let stalled = match peer.round_wait.lock() {
        Ok(mut wait) => ae.stalled_rounds(round_token, &mut wait, now_ms()),
        Err(_) => return,
    };
    if stalled.iter().any(Option::is_some)
        && let Ok(mut stability) = replication.stability.lock()
    {
        stalled.into_iter().flatten().for_each(|token| stability.round_abandoned(remote, token));
    }
}
