//! The command table: what COMMAND INFO/DOCS/COUNT/GETKEYS report and what the parser
//! checks arity against. Arity follows Redis: positive means exactly that many
//! arguments (name included), negative means at least that many.

use std::sync::LazyLock;

/// Which parser handles a command.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmdId {
    Ping,
    Echo,
    Hello,
    Auth,
    Select,
    Quit,
    Reset,
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
    Subscribe,
    Unsubscribe,
    PSubscribe,
    PUnsubscribe,
    SSubscribe,
    SUnsubscribe,
    Publish,
    SPublish,
    PubSub,
    BLPop,
    BRPop,
    BLMove,
    BRPopLPush,
    BLMPop,
    BZPopMin,
    BZPopMax,
    BZMPop,
    Sort,
    SortRo,
    Client,
    Command,
    Info,
    Config,
    DbSize,
    FlushDb,
    FlushAll,
    Shutdown,
    Time,
    Function,
    Memory,
    Del,
    Unlink,
    Exists,
    Type,
    Keys,
    Scan,
    Rename,
    RenameNx,
    Copy,
    Dump,
    Restore,
    SetBit,
    GetBit,
    BitCount,
    BitPos,
    BitField,
    BitFieldRo,
    BitOp,
    Lcs,
    RandomKey,
    Touch,
    Expire,
    PExpire,
    ExpireAt,
    PExpireAt,
    Ttl,
    PTtl,
    ExpireTime,
    PExpireTime,
    Persist,
    Object,
    Get,
    Set,
    SetNx,
    SetEx,
    PSetEx,
    GetSet,
    GetDel,
    GetEx,
    MGet,
    MSet,
    MSetNx,
    Append,
    StrLen,
    GetRange,
    SetRange,
    Incr,
    Decr,
    IncrBy,
    DecrBy,
    IncrByFloat,
    WaitAof,
    HSet,
    HSetNx,
    HMSet,
    HGet,
    HMGet,
    HGetAll,
    HKeys,
    HVals,
    HLen,
    HDel,
    HExists,
    HStrLen,
    HIncrBy,
    HIncrByFloat,
    HRandField,
    HScan,
    SAdd,
    SRem,
    SMembers,
    SIsMember,
    SMIsMember,
    SCard,
    SPop,
    SRandMember,
    SMove,
    SInter,
    SInterStore,
    SInterCard,
    SUnion,
    SUnionStore,
    SDiff,
    SDiffStore,
    SScan,
    ZAdd,
    ZIncrBy,
    ZRem,
    ZScore,
    ZMScore,
    ZCard,
    ZCount,
    ZLexCount,
    ZRange,
    ZRangeStore,
    ZRangeByScore,
    ZRevRangeByScore,
    ZRangeByLex,
    ZRevRangeByLex,
    ZRevRange,
    ZRank,
    ZRevRank,
    ZPopMin,
    ZPopMax,
    ZMPop,
    ZRandMember,
    ZRemRangeByRank,
    ZRemRangeByScore,
    ZRemRangeByLex,
    ZScan,
    ZUnion,
    ZInter,
    ZDiff,
    ZUnionStore,
    ZInterStore,
    ZDiffStore,
    ZInterCard,
    LPush,
    RPush,
    LPushX,
    RPushX,
    LPop,
    RPop,
    LLen,
    LIndex,
    LRange,
    LSet,
    LInsert,
    LRem,
    LTrim,
    LPos,
    LMove,
    RPopLPush,
    LMPop,
    FtCreate,
    FtSearch,
    FtInfo,
    FtList,
    FtDropIndex,
    FtAlter,
    FtAggregate,
    // The graph engine (FalkorDB's GRAPH.* commands).
    GraphQuery,
    GraphRoQuery,
    GraphDelete,
    GraphExplain,
    GraphProfile,
    GraphList,
    GraphConfig,
}

#[derive(Debug)]
pub struct CommandSpec {
    pub id: CmdId,
    /// Lower-case name, as Redis reports it.
    pub name: &'static str,
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub key_step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
}

impl CommandSpec {
    pub fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 { argc == self.arity as usize } else { argc >= (-self.arity) as usize }
    }

    pub fn is_write(&self) -> bool {
        self.flags.contains(&"write")
    }

    /// May grow the data: refused past `maxmemory` (Redis's `denyoom`).
    pub fn is_denyoom(&self) -> bool {
        self.flags.contains(&"denyoom")
    }

    /// Refused between MULTI and EXEC (Redis's `no_multi`).
    pub fn is_no_multi(&self) -> bool {
        self.flags.contains(&"no_multi")
    }

    /// Answered while the node loads its data (Redis's `loading`); the rest get `-LOADING`.
    pub fn allowed_while_loading(&self) -> bool {
        self.flags.contains(&"loading")
    }
}

mod specs;

pub use specs::COMMANDS;

/// Command positions by name, hashed case-insensitively (see [`name_hash`]).
static BY_NAME: LazyLock<hashbrown::HashTable<u16>> = LazyLock::new(|| {
    assert!(COMMANDS.len() <= usize::from(u16::MAX), "command positions fit a u16");
    let mut table = hashbrown::HashTable::with_capacity(COMMANDS.len());
    for (i, spec) in COMMANDS.iter().enumerate() {
        table.insert_unique(name_hash(spec.name.as_bytes()), i as u16, |&j| name_hash(COMMANDS[usize::from(j)].name.as_bytes()));
    }
    table
});

/// A hash of a command name that ignores ASCII case, computed without copying the
/// name: every command runs through [`index_of`], so it is on the hot path. Eight bytes
/// at a time, each with its 0x20 bit set: that folds ASCII case (and folds a few other
/// bytes onto one another, `_` onto DEL, which only costs a comparison: [`index_of`]
/// compares names exactly), then one folded multiply per word (a byte-at-a-time
/// case-folding FNV cost ~90 instructions for a five-letter name). Command names are
/// short and chosen by us; nothing here is keyed by client data beyond the name, and a
/// colliding name only costs one more comparison.
fn name_hash(name: &[u8]) -> u64 {
    const FOLD_CASE: u64 = 0x2020_2020_2020_2020;
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = name.len() as u64;
    for chunk in name.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        let product = u128::from(hash ^ (u64::from_le_bytes(word) | FOLD_CASE)) * u128::from(MULTIPLIER);
        hash = (product as u64) ^ ((product >> 64) as u64);
    }
    hash
}

/// Look a command up by name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    index_of(name).map(|i| &COMMANDS[i])
}

/// The position of a command in [`COMMANDS`] (a compact id for CLIENT LIST).
pub fn index_of(name: &[u8]) -> Option<usize> {
    const NAME_BYTES_MAX: usize = 32;
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    BY_NAME.find(name_hash(name), |&i| COMMANDS[usize::from(i)].name.as_bytes().eq_ignore_ascii_case(name)).map(|&i| usize::from(i))
}

/// The key arguments of a full command line (name at index 0), from its key spec.
pub fn key_positions(spec: &CommandSpec, argc: usize) -> Vec<usize> {
    if spec.first_key <= 0 || argc <= spec.first_key as usize {
        return Vec::new();
    }
    let last = if spec.last_key < 0 { argc as i32 + spec.last_key } else { spec.last_key.min(argc as i32 - 1) };
    let step = spec.key_step.max(1) as usize;
    (spec.first_key as usize..=last.max(0) as usize).step_by(step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert_eq!(index_of(spec.name.as_bytes()), Some(i), "{}", spec.name);
            assert_eq!(index_of(spec.name.to_ascii_uppercase().as_bytes()), Some(i), "{}", spec.name);
        }
        assert_eq!(index_of(b"gEt").map(|i| COMMANDS[i].name), Some("get"));
        for unknown in [&b""[..], b"ge", b"gett", b"get\0", b"set ", &[b'x'; 40]] {
            assert_eq!(index_of(unknown), None, "{unknown:?}");
        }
    }
}
