//! Persistence to object storage (DESIGN §7): the binary codec of deltas, the segment
//! format, and (as they land) the streamer, manifest, checkpoints and recovery. All of
//! it is deterministic logic over bytes: the shell does the object-store I/O.

pub mod group_commit;
pub mod layout;
pub mod memory;
pub mod recovery;
pub mod restore;
pub mod segment;
pub mod store;
pub mod streamer;

#[cfg(test)]
mod tests;
