//! The command layer: the table of every command (name, arity, flags, key positions)
//! and the parser that turns a request's arguments into a typed [`Command`].
//!
//! Parsing checks everything that can be checked without data (arity, syntax, integer
//! and float arguments) and answers with Redis's exact error text. It never touches
//! the keyspace: executing is the shard's job, coordinating the connection's.

pub mod bits;
pub mod blocking;
pub mod dump;
pub mod errors;
pub mod geo;
pub mod graph;
pub mod hash;
pub mod introspect;
pub mod lcs;
pub mod list;
pub mod numbers;
pub mod parse;
pub mod restore;
pub mod script;
pub mod set;
pub mod sort;
pub mod stream;
pub mod table;
pub mod vector;
pub mod zset;

use bytes::Bytes;

pub use hash::HashCommand;
pub use list::{ListCommand, ListMulti};
pub use parse::{parse_command, parse_command_at};
pub use restore::RestoreCommand;
pub use set::{SetAlgebra, SetCommand, SetOutput};
pub use zset::{ZsetCommand, ZsetMulti};

/// When a SET-like write applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SetCondition {
    Always,
    /// NX: only if the key does not exist.
    IfAbsent,
    /// XX: only if the key exists.
    IfPresent,
}

/// What a write does to the key's TTL.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TtlChange {
    /// Remove any TTL (a plain SET).
    Clear,
    /// Keep the TTL (KEEPTTL).
    Keep,
    /// Expire this many milliseconds from now (EX/PX).
    AfterMs(u64),
    /// Expire at this unix time in milliseconds (EXAT/PXAT).
    AtMs(u64),
}

/// GETEX's options.
#[derive(Clone, Debug, PartialEq)]
pub enum GetExTtl {
    Unchanged,
    Persist,
    Set(TtlChange),
    /// An invalid expire time: Redis reports it only when the key exists.
    Invalid(crate::protocol::Frame),
}

/// What a SET-like command answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SetReply {
    /// `+OK`, or nil when NX/XX refused (SET, SETEX, PSETEX, MSET).
    Ok,
    /// The old value (SET ... GET, GETSET).
    OldValue,
    /// `1` if written, `0` if not (SETNX).
    Written,
}

/// EXPIRE's NX/XX/GT/LT options (XX may combine with GT or LT, as in Redis).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpireCondition {
    /// Only when the key has no TTL.
    pub nx: bool,
    /// Only when the key has a TTL.
    pub xx: bool,
    /// Only when the new TTL is greater (no TTL counts as infinite).
    pub gt: bool,
    /// Only when the new TTL is smaller.
    pub lt: bool,
}

/// Units for TTL replies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
}

/// What OBJECT reports about a key.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ObjectField {
    /// The encoding Redis would use for this value at this size.
    Encoding,
    /// References to the value: 1, or `i32::MAX` for the small integers Redis shares.
    Refcount,
    /// The access frequency, which only an LFU `maxmemory-policy` tracks: Meridian's
    /// one policy is `noeviction`, so it answers as Redis does under it.
    Freq,
}

/// A command on exactly one key, executed entirely inside the shard that owns it.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyCommand {
    Get(Bytes),
    Set {
        key: Bytes,
        value: Bytes,
        condition: SetCondition,
        ttl: TtlChange,
        reply: SetReply,
        command: &'static str,
    },
    GetDel(Bytes),
    GetEx {
        key: Bytes,
        ttl: GetExTtl,
    },
    Append {
        key: Bytes,
        value: Bytes,
    },
    StrLen(Bytes),
    GetRange {
        key: Bytes,
        start: i64,
        end: i64,
    },
    SetRange {
        key: Bytes,
        offset: usize,
        value: Bytes,
    },
    IncrBy {
        key: Bytes,
        by: i64,
    },
    IncrByFloat {
        key: Bytes,
        /// `None`: the increment is not a float, answered only after the key's type is
        /// checked (Redis's order for INCRBYFLOAT, unlike INCRBY's).
        by: Option<f64>,
    },
    /// EXPIRE family; `ms` is a unix time when `absolute`, else relative to now.
    Expire {
        key: Bytes,
        ms: i64,
        absolute: bool,
        condition: ExpireCondition,
        command: &'static str,
    },
    Ttl {
        key: Bytes,
        unit: TimeUnit,
    },
    ExpireTime {
        key: Bytes,
        unit: TimeUnit,
    },
    Persist(Bytes),
    Type(Bytes),
    /// OBJECT ENCODING / OBJECT REFCOUNT.
    Object {
        key: Bytes,
        field: ObjectField,
    },
    /// MEMORY USAGE: an estimate of the bytes the key takes.
    MemoryUsage(Bytes),
    Hash(HashCommand),
    /// GRAPH.QUERY, GRAPH.RO_QUERY, GRAPH.DELETE (the graph engine).
    Graph(graph::GraphCommand),
    /// The stream commands on one key (the stream engine).
    Stream(Box<stream::StreamCommand>),
    /// The SADD family (`Set` is the SET command).
    SetFamily(SetCommand),
    /// The ZADD family on one key.
    Zset(ZsetCommand),
    /// The LPUSH family on one key.
    List(ListCommand),
    /// DUMP: the key's value as a Redis 7.0 payload.
    Dump(Bytes),
    /// RESTORE: a key from a Redis 7.0 payload (boxed: the largest command by far).
    Restore(Box<RestoreCommand>),
    /// SETBIT, GETBIT, BITCOUNT, BITPOS, BITFIELD, BITFIELD_RO.
    Bits(bits::BitCommand),
}

impl KeyCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            KeyCommand::Get(key)
            | KeyCommand::GetDel(key)
            | KeyCommand::StrLen(key)
            | KeyCommand::Persist(key)
            | KeyCommand::Type(key)
            | KeyCommand::MemoryUsage(key)
            | KeyCommand::Dump(key) => key,
            KeyCommand::Restore(cmd) => &cmd.key,
            KeyCommand::Bits(cmd) => cmd.key(),
            KeyCommand::Set { key, .. }
            | KeyCommand::GetEx { key, .. }
            | KeyCommand::Append { key, .. }
            | KeyCommand::GetRange { key, .. }
            | KeyCommand::SetRange { key, .. }
            | KeyCommand::IncrBy { key, .. }
            | KeyCommand::IncrByFloat { key, .. }
            | KeyCommand::Expire { key, .. }
            | KeyCommand::Ttl { key, .. }
            | KeyCommand::ExpireTime { key, .. }
            | KeyCommand::Object { key, .. } => key,
            KeyCommand::Hash(cmd) => cmd.key(),
            KeyCommand::Graph(cmd) => cmd.key(),
            KeyCommand::Stream(cmd) => cmd.key(),
            KeyCommand::SetFamily(cmd) => cmd.key(),
            KeyCommand::Zset(cmd) => cmd.key(),
            KeyCommand::List(cmd) => cmd.key(),
        }
    }

    /// Whether the command may change data (and so yield a delta).
    pub fn is_write(&self) -> bool {
        match self {
            KeyCommand::Hash(cmd) => return cmd.is_write(),
            KeyCommand::Graph(cmd) => return cmd.is_write(),
            KeyCommand::Stream(cmd) => return cmd.is_write(),
            KeyCommand::SetFamily(cmd) => return cmd.is_write(),
            KeyCommand::Zset(cmd) => return cmd.is_write(),
            KeyCommand::List(cmd) => return cmd.is_write(),
            KeyCommand::Bits(cmd) => return cmd.is_write(),
            _ => {}
        }
        !matches!(
            self,
            KeyCommand::Get(_)
                | KeyCommand::StrLen(_)
                | KeyCommand::GetRange { .. }
                | KeyCommand::Ttl { .. }
                | KeyCommand::ExpireTime { .. }
                | KeyCommand::Type(_)
                | KeyCommand::Object { .. }
                | KeyCommand::MemoryUsage(_)
                | KeyCommand::Dump(_)
        )
    }
}

// As `ShardOp` (see `shard/ops.rs`): moved several times a command, so kept within
// what the compiler copies inline.
const _: () = assert!(std::mem::size_of::<Command>() <= 128);
const _: () = assert!(std::mem::size_of::<KeyCommand>() <= 128);

/// Commands over several keys, which may live on several shards.
#[derive(Clone, Debug, PartialEq)]
pub enum MultiKeyCommand {
    MGet(Vec<Bytes>),
    /// SORT and SORT_RO (patterns may name keys on any shard). Boxed, as LCS: rare and
    /// large, where every command is moved several times (see `shard/ops.rs`).
    Sort(Box<sort::SortCommand>),
    /// Applied per shard; see docs/semantics.md for its atomicity.
    MSet(Vec<(Bytes, Bytes)>),
    MSetNx(Vec<(Bytes, Bytes)>),
    Del(Vec<Bytes>),
    Exists(Vec<Bytes>),
    Touch(Vec<Bytes>),
    Rename {
        src: Bytes,
        dst: Bytes,
        nx: bool,
    },
    Copy {
        src: Bytes,
        dst: Bytes,
        replace: bool,
    },
    /// SMOVE.
    SetMove {
        src: Bytes,
        dst: Bytes,
        member: Bytes,
    },
    /// BITOP: `dst` becomes the operation over `keys` (deleted when every source is
    /// empty or missing).
    BitOp {
        op: bits::BitOp,
        dst: Bytes,
        keys: Vec<Bytes>,
    },
    /// LCS: the longest common subsequence of two strings.
    Lcs(Box<lcs::LcsCommand>),
    /// SINTER, SUNION, SDIFF, their STORE forms and SINTERCARD.
    SetAlgebra {
        op: SetAlgebra,
        keys: Vec<Bytes>,
        output: SetOutput,
    },
    /// The multi-key sorted set commands.
    Zset(ZsetMulti),
    /// LMOVE, RPOPLPUSH, LMPOP.
    List(ListMulti),
    /// XREAD and XREADGROUP (without BLOCK: blocking ones are `Command::Blocking`).
    StreamRead(stream::StreamRead),
}

/// Commands over the whole keyspace (every shard).
#[derive(Clone, Debug, PartialEq)]
pub enum KeyspaceCommand {
    DbSize,
    Flush,
    Keys(Bytes),
    Scan { cursor: u64, pattern: Option<Bytes>, count: usize, type_name: Option<Bytes> },
    RandomKey,
    // GRAPH.LIST: the keys that hold graphs.
    GraphList,
}

/// The kinds of client CLIENT LIST and CLIENT KILL select by (`TYPE`): Meridian has no
/// replicas or primaries in Redis's sense, so those two select none.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClientType {
    Normal,
    PubSub,
    Master,
    Replica,
}

/// Which clients CLIENT LIST or CLIENT KILL apply to: every filter given must match.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFilter {
    pub ids: Option<Vec<u64>>,
    pub addr: Option<Bytes>,
    pub laddr: Option<Bytes>,
    pub client_type: Option<ClientType>,
}

/// CLIENT subcommands.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientCommand {
    Id,
    SetName(Bytes),
    GetName,
    /// CLIENT LIST [TYPE type | ID id ...].
    List(ClientFilter),
    Info,
    /// `CLIENT KILL addr` (`legacy`), or the clients every filter given matches.
    Kill {
        filter: ClientFilter,
        legacy: bool,
        skip_me: bool,
    },
    SetInfo,
    /// CLIENT REPLY ON|OFF|SKIP.
    Reply(ReplyMode),
    /// CLIENT UNBLOCK id [TIMEOUT|ERROR].
    Unblock {
        id: u64,
        error: bool,
    },
    /// CLIENT GETREDIR: where tracking redirects, -1 (tracking is not supported).
    GetRedir,
    Help,
}

/// CLIENT REPLY's modes: answer every command, none, or not the next one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    Skip,
}

/// COMMAND subcommands.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandCommand {
    All,
    Count,
    Info(Vec<Bytes>),
    Docs(Vec<Bytes>),
    GetKeys(Vec<Bytes>),
    List(Option<CommandFilter>),
    Help,
}

/// COMMAND LIST's `FILTERBY`.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandFilter {
    /// Commands of a module: there are none.
    Module(Bytes),
    /// Commands in an ACL category (`scripting`, `read`, ...).
    AclCategory(Bytes),
    /// Command names matching a glob pattern, case-insensitively.
    Pattern(Bytes),
}

/// CONFIG subcommands.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigCommand {
    Get(Vec<Bytes>),
    Set(Vec<(Bytes, Bytes)>),
    ResetStat,
    Help,
}

/// FUNCTION subcommands. Meridian has no functions (no scripting): there is nothing to
/// list and nothing to flush, and both answer so truthfully.
#[derive(Clone, Debug, PartialEq)]
pub enum FunctionCommand {
    Flush,
    List,
}

/// MULTI, EXEC, DISCARD, WATCH and UNWATCH: a connection's transaction state.
#[derive(Clone, Debug, PartialEq)]
pub enum TransactionCommand {
    Multi,
    Exec,
    Discard,
    Watch(Vec<Bytes>),
    Unwatch,
}

/// The kind of a Pub/Sub subscription: a channel, a pattern, or a shard channel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SubscriptionKind {
    Channel,
    Pattern,
    Shard,
}

/// The Pub/Sub commands.
#[derive(Clone, Debug, PartialEq)]
pub enum PubSubCommand {
    Subscribe(SubscriptionKind, Vec<Bytes>),
    /// No names: every subscription of that kind.
    Unsubscribe(SubscriptionKind, Vec<Bytes>),
    Publish {
        shard: bool,
        channel: Bytes,
        message: Bytes,
    },
    /// PUBSUB CHANNELS / SHARDCHANNELS [pattern].
    Channels {
        shard: bool,
        pattern: Option<Bytes>,
    },
    /// PUBSUB NUMSUB / SHARDNUMSUB [channel ...].
    NumSub {
        shard: bool,
        channels: Vec<Bytes>,
    },
    NumPat,
    Help,
}

/// Every command a client can send, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Ping(Option<Bytes>),
    Echo(Bytes),
    Hello {
        protover: Option<i64>,
        auth: Option<(Bytes, Bytes)>,
        setname: Option<Bytes>,
    },
    Auth {
        user: Option<Bytes>,
        password: Bytes,
    },
    Select(i64),
    Quit,
    Reset,
    Client(ClientCommand),
    Command(CommandCommand),
    Info(Vec<Bytes>),
    Config(ConfigCommand),
    /// GRAPH.CONFIG GET|SET (FalkorDB's graph settings).
    GraphConfig(graph::GraphConfigCommand),
    Function(FunctionCommand),
    /// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: stop as on SIGTERM (`abort`: SHUTDOWN ABORT).
    Shutdown {
        abort: bool,
    },
    Time,
    /// ROLE: every node is a primary of its own writes (peers are other regions, not
    /// replicas), with INFO replication's `master_repl_offset`.
    Role,
    /// A subcommand's HELP text, answered as Redis does: one status line each.
    Help(&'static [&'static str]),
    /// SAVE: every write so far made durable in the object store.
    Save,
    /// LASTSAVE: when the last SAVE ended (the node's start before any).
    LastSave,
    /// MONITOR: stream every command the node runs to this client.
    Monitor,
    /// WAITAOF numlocal numreplicas timeout_ms.
    WaitAof {
        local: i64,
        replicas: i64,
        timeout_ms: i64,
    },
    Keyspace(KeyspaceCommand),
    Transaction(TransactionCommand),
    PubSub(PubSubCommand),
    /// BLPOP and the other blocking pops.
    Blocking(blocking::BlockingCommand),
    Multi(MultiKeyCommand),
    Key(KeyCommand),
    /// FT.*: search indexes over hashes (`engine::vector`).
    Vector(vector::VectorCommand),
    /// EVAL, EVALSHA (and their _RO forms) and SCRIPT's subcommands.
    Script(script::ScriptCommand),
}
