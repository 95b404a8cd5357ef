//! Which reads of a pipeline the home shard prefetches before running it
//! (`ShardAccess::prefetch_home`, `Keyspace::prefetch`): for each command, its first
//! key and, for the element commands below, the element it names.
//!
//! Must never: decide anything a command does (what is read here is only a hint).

use bytes::Bytes;

use crate::command::table;
use crate::engine::kv::keyspace::{PREFETCH_KEYS_MAX, Prefetch};

/// A pipeline's commands are prefetched this many at a time before they run: enough
/// to overlap their cache misses, few enough that what the first loads is still cached
/// when it runs.
pub const WINDOW: usize = PREFETCH_KEYS_MAX;

/// The reads of the next [`WINDOW`] commands (`commands`, with their table indexes),
/// and how many there are.
pub fn window_reads<'a>(commands: &'a [Vec<Bytes>], indexes: &[Option<usize>]) -> ([Prefetch<'a>; WINDOW], usize) {
    let mut reads = [Prefetch::default(); WINDOW];
    let mut count = 0;
    for (args, &index) in commands.iter().zip(indexes).take(WINDOW) {
        if let Some(read) = first_read(args, index) {
            reads[count] = read;
            count += 1;
        }
    }
    (reads, count)
}

/// What a command will read first, when its first argument is a key (Redis's key
/// spec): that key, and for the element commands below the element their second
/// argument names. What a pipeline prefetches.
fn first_read(args: &[Bytes], index: Option<usize>) -> Option<Prefetch<'_>> {
    use crate::command::table::CmdId;
    let spec = &table::COMMANDS[index?];
    if spec.first_key != 1 {
        return None;
    }
    let key = &args.get(1)?[..];
    let element = match spec.id {
        CmdId::HSet
        | CmdId::HSetNx
        | CmdId::HGet
        | CmdId::HMGet
        | CmdId::HDel
        | CmdId::HExists
        | CmdId::HIncrBy
        | CmdId::HIncrByFloat
        | CmdId::HStrLen
        | CmdId::SAdd
        | CmdId::SRem
        | CmdId::SIsMember
        | CmdId::SMIsMember
        | CmdId::ZScore
        | CmdId::ZMScore
        | CmdId::ZRank
        | CmdId::ZRevRank
        | CmdId::ZRem => args.get(2).map(|e| &e[..]),
        _ => None,
    };
    Some(Prefetch { key, element })
}
