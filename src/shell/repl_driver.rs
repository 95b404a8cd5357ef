//! The replication thread: starts it with its own small runtime, and on it the peer
//! listener, one dialer per peer (`peer_link`) and the batcher (`replication`). Owns
//! only the thread's lifetime; it decides nothing and moves no bytes itself. It exists
//! so that the flow runs one way: this module → `peer_link` → `replication`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::oneshot;

use super::peer_link;
use super::replication::{Replication, batch_loop, stamp_ceiling};
use super::router::Router;

/// The running replication thread: dropping `shutdown` (or sending on it) stops it.
pub struct Driver {
    pub shutdown: oneshot::Sender<()>,
    pub thread: std::thread::JoinHandle<()>,
}

/// Start the driver thread: the listener, one dialer per peer, and the batcher.
pub fn start(
    replication: Arc<Replication>,
    listener: Option<std::net::TcpListener>,
    router: Router,
    batch_interval: Duration,
    durability: Option<Arc<super::persistence::Durability>>,
) -> Result<Driver, String> {
    replication.stamp_ceiling.store(stamp_ceiling(durability.as_deref()).0, Ordering::Release);
    let (shutdown, shutdown_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("meridian-repl".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::error!("cannot start the replication runtime: {e}");
                    return;
                }
            };
            runtime.block_on(async move {
                if let Some(listener) = listener {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => {
                            tokio::spawn(peer_link::accept_loop(listener, replication.clone(), router.clone()));
                        }
                        Err(e) => tracing::error!("replication listener: {e}"),
                    }
                }
                for peer in &replication.peers {
                    tokio::spawn(peer_link::dial_loop(peer.clone(), replication.clone(), router.clone()));
                }
                tokio::select! {
                    _ = batch_loop(replication, router, batch_interval, durability) => {}
                    _ = shutdown_rx => {}
                }
            });
        })
        .map_err(|e| format!("cannot start the replication thread: {e}"))?;
    Ok(Driver { shutdown, thread })
}
