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
    Role,
    Function,
    Eval,
    EvalSha,
    EvalRo,
    EvalShaRo,
    Script,
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
    Substr,
    SetRange,
    Incr,
    Decr,
    IncrBy,
    DecrBy,
    IncrByFloat,
    WaitAof,
    Save,
    LastSave,
    Monitor,
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
    GeoAdd,
    GeoPos,
    GeoHash,
    GeoDist,
    GeoRadius,
    GeoRadiusRo,
    GeoRadiusByMember,
    GeoRadiusByMemberRo,
    GeoSearch,
    GeoSearchStore,
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
    // Streams.
    XAdd,
    XLen,
    XRange,
    XRevRange,
    XDel,
    XTrim,
    XSetId,
    XRead,
    XReadGroup,
    XGroup,
    XInfo,
    XAck,
    XPending,
    XClaim,
    XAutoClaim,
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
    /// Its first argument names a subcommand (CONFIG, CLIENT, XINFO...): set from the
    /// summary when the table is built, so the hot path tests a flag.
    pub container: bool,
}

/// Whether a command's summary is a container's (`A container for ...`), as Redis words
/// every container's: evaluated when the table is built.
const fn names_a_container(summary: &str) -> bool {
    let (summary, prefix) = (summary.as_bytes(), b"A container for".as_slice());
    if summary.len() < prefix.len() {
        return false;
    }
    let mut at = 0;
    while at < prefix.len() {
        if summary[at] != prefix[at] {
            return false;
        }
        at += 1;
    }
    true
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

    /// A command whose first argument names a subcommand (CONFIG, CLIENT, XINFO...).
    pub fn is_container(&self) -> bool {
        self.container
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
mod subcommands;

pub use specs::COMMANDS;
pub use subcommands::refusal as subcommand_refusal;

/// Command positions by name, hashed case-insensitively (see [`name_hash`]), each with
/// its name's lowercased words (a lookup compares four words, not bytes one by one).
static BY_NAME: LazyLock<hashbrown::HashTable<(u16, [u64; NAME_BYTES_MAX / 8])>> = LazyLock::new(|| {
    assert!(COMMANDS.len() <= usize::from(u16::MAX), "command positions fit a u16");
    let mut table = hashbrown::HashTable::with_capacity(COMMANDS.len());
    for (i, spec) in COMMANDS.iter().enumerate() {
        assert!(spec.name.len() <= NAME_BYTES_MAX, "{} is longer than a looked-up name", spec.name);
        let entry = (i as u16, name_words(spec.name.as_bytes()));
        table.insert_unique(name_hash(spec.name.as_bytes()), entry, |(j, _)| name_hash(COMMANDS[usize::from(*j)].name.as_bytes()));
    }
    table
});

/// `word` (eight bytes of a name) with its ASCII capitals made small, eight bytes at
/// once (SWAR): exact, unlike setting every byte's 0x20 bit, which would also fold
/// `_` onto DEL.
#[inline]
fn lowercase_word(word: u64) -> u64 {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let seven_bits = word & !HIGH_BITS;
    // Bit 7 of each byte: its low seven bits are at least `A`, and more than `Z`.
    let from_a = seven_bits + LOW_BITS * (0x80 - u64::from(b'A'));
    let past_z = seven_bits + LOW_BITS * (0x80 - u64::from(b'Z') - 1);
    let capital = from_a & !past_z & !word & HIGH_BITS;
    word | (capital >> 2)
}

/// The words of `name` (at most [`NAME_BYTES_MAX`] bytes), lowercased, zero-padded.
#[inline]
fn name_words(name: &[u8]) -> [u64; NAME_BYTES_MAX / 8] {
    let mut words = [0u64; NAME_BYTES_MAX / 8];
    for (word, chunk) in words.iter_mut().zip(name.chunks(8)) {
        // Byte by byte: a copy of a chunk of unknown length would call `memcpy`.
        let bytes = chunk.iter().enumerate().fold(0u64, |bytes, (at, &byte)| bytes | (u64::from(byte) << (8 * at)));
        *word = lowercase_word(bytes);
    }
    words
}

/// The longest command name looked up (longer names are unknown at once).
const NAME_BYTES_MAX: usize = 32;

/// A hash of a command name's lowercased words (see [`name_words`]): every command
/// runs through [`index_of`], so it is on the hot path, and a word at a time with one
/// folded multiply each costs a fraction of a byte-at-a-time case-folding hash (~90
/// instructions for a five-letter name). Command names are short and chosen by us;
/// nothing here is keyed by client data beyond the name, and a colliding name only
/// costs one more comparison.
fn words_hash(words: &[u64], len: usize) -> u64 {
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = len as u64;
    for &word in &words[..len.div_ceil(8)] {
        let product = u128::from(hash ^ word) * u128::from(MULTIPLIER);
        hash = (product as u64) ^ ((product >> 64) as u64);
    }
    hash
}

fn name_hash(name: &[u8]) -> u64 {
    words_hash(&name_words(name), name.len())
}

/// Look a command up by name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    index_of(name).map(|i| &COMMANDS[i])
}

/// The position of a command in [`COMMANDS`] (a compact id for CLIENT LIST).
pub fn index_of(name: &[u8]) -> Option<usize> {
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    let words = name_words(name);
    let found = BY_NAME.find(words_hash(&words, name.len()), |&(i, ref spec_words)| {
        COMMANDS[usize::from(i)].name.len() == name.len() && *spec_words == words
    });
    found.map(|&(i, _)| usize::from(i))
}

/// The last name looked up and its position: a client mostly sends one command again
/// and again (a pipeline of one command, or one request at a time), and a hit compares
/// a few bytes where a lookup lowercases, hashes and probes (~150 instructions).
/// Exact bytes: `GET` and `get` are two names here, each found by [`index_of`].
#[derive(Clone, Debug)]
pub struct NameMemo {
    name: [u8; NAME_BYTES_MAX],
    /// `usize::MAX` while nothing is remembered.
    len: usize,
    index: Option<usize>,
}

impl Default for NameMemo {
    fn default() -> Self {
        NameMemo { name: [0; NAME_BYTES_MAX], len: usize::MAX, index: None }
    }
}

impl NameMemo {
    /// [`index_of`], remembering the answer for the next call.
    pub fn index_of(&mut self, name: &[u8]) -> Option<usize> {
        if name.len() == self.len && name == &self.name[..self.len] {
            return self.index;
        }
        let index = index_of(name);
        if name.len() <= NAME_BYTES_MAX {
            self.name[..name.len()].copy_from_slice(name);
            self.len = name.len();
            self.index = index;
        }
        index
    }
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
    fn the_container_flag_is_the_summarys() {
        for spec in COMMANDS {
            assert_eq!(spec.is_container(), spec.summary.starts_with("A container for"), "{}", spec.name);
        }
        let containers: Vec<&str> = COMMANDS.iter().filter(|s| s.is_container()).map(|s| s.name).collect();
        assert!(containers.contains(&"config") && containers.contains(&"xinfo") && !containers.contains(&"get"), "{containers:?}");
    }

    #[test]
    fn a_word_is_lowercased_as_each_of_its_bytes_would_be() {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = *b"aZ_@[`{\xff";
                bytes[at] = byte;
                let want = bytes.map(|b| b.to_ascii_lowercase());
                assert_eq!(lowercase_word(u64::from_le_bytes(bytes)).to_le_bytes(), want, "{bytes:?}");
            }
        }
    }

    #[test]
    fn a_remembered_name_answers_as_the_lookup_does() {
        let mut memo = NameMemo::default();
        let names: [&[u8]; 12] = [b"", b"GET", b"GET", b"get", b"gett", b"get", b"", b"SET", b"x", b"x", &[b'x'; 40], b"SET"];
        for _ in 0..2 {
            for name in names {
                assert_eq!(memo.index_of(name), index_of(name), "{name:?}");
            }
        }
    }

    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert_eq!(index_of(spec.name.as_bytes()), Some(i), "{}", spec.name);
            assert_eq!(index_of(spec.name.to_ascii_uppercase().as_bytes()), Some(i), "{}", spec.name);
        }
        assert_eq!(index_of(b"gEt").map(|i| COMMANDS[i].name), Some("get"));
        for unknown in [&b""[..], b"ge", b"gett", b"get\0", b"set ", b"g\xc5t", b"ft.\x7flist", &[b'x'; 40]] {
            assert_eq!(index_of(unknown), None, "{unknown:?}");
        }
    }
}
