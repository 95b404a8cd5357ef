//! The command table: what COMMAND INFO/DOCS/COUNT/GETKEYS report and what the parser
//! checks arity against. Arity follows Redis: positive means exactly that many
//! arguments (name included), negative means at least that many.

use std::collections::HashMap;
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
    Client,
    Command,
    Info,
    Config,
    DbSize,
    FlushDb,
    FlushAll,
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
}

macro_rules! spec {
    ($id:ident, $name:literal, $arity:expr, [$($flag:literal),*], $first:expr, $last:expr, $step:expr, $group:literal, $since:literal, $summary:literal) => {
        CommandSpec {
            id: CmdId::$id, name: $name, arity: $arity, flags: &[$($flag),*], first_key: $first,
            last_key: $last, key_step: $step, group: $group, since: $since, summary: $summary,
        }
    };
}

pub static COMMANDS: &[CommandSpec] = &[
    spec!(Ping, "ping", -1, ["fast"], 0, 0, 0, "connection", "1.0.0", "Returns the server's liveliness response."),
    spec!(Echo, "echo", 2, ["fast"], 0, 0, 0, "connection", "1.0.0", "Returns the given string."),
    spec!(
        Hello,
        "hello",
        -1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.0.0",
        "Handshakes with the Redis server."
    ),
    spec!(
        Auth,
        "auth",
        -2,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Authenticates the connection."
    ),
    spec!(Select, "select", 2, ["loading", "stale", "fast"], 0, 0, 0, "connection", "1.0.0", "Changes the selected database."),
    spec!(
        Quit,
        "quit",
        -1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Closes the connection."
    ),
    spec!(
        Reset,
        "reset",
        1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.2.0",
        "Resets the connection."
    ),
    spec!(Client, "client", -2, [], 0, 0, 0, "connection", "2.4.0", "A container for client connection commands."),
    spec!(Command, "command", -1, ["loading", "stale"], 0, 0, 0, "server", "2.8.13", "Returns detailed information about all commands."),
    spec!(Info, "info", -1, ["loading", "stale"], 0, 0, 0, "server", "1.0.0", "Returns information and statistics about the server."),
    spec!(Config, "config", -2, [], 0, 0, 0, "server", "2.0.0", "A container for server configuration commands."),
    spec!(DbSize, "dbsize", 1, ["readonly", "fast"], 0, 0, 0, "server", "1.0.0", "Returns the number of keys in the database."),
    spec!(FlushDb, "flushdb", -1, ["write"], 0, 0, 0, "server", "1.0.0", "Remove all keys from the current database."),
    spec!(FlushAll, "flushall", -1, ["write"], 0, 0, 0, "server", "1.0.0", "Removes all keys from all databases."),
    spec!(Time, "time", 1, ["loading", "stale", "fast"], 0, 0, 0, "server", "2.6.0", "Returns the server time."),
    spec!(Function, "function", -2, [], 0, 0, 0, "scripting", "7.0.0", "A container for function commands."),
    spec!(Memory, "memory", -2, [], 0, 0, 0, "server", "4.0.0", "A container for memory diagnostics commands."),
    spec!(Del, "del", -2, ["write"], 1, -1, 1, "generic", "1.0.0", "Deletes one or more keys."),
    spec!(Unlink, "unlink", -2, ["write", "fast"], 1, -1, 1, "generic", "4.0.0", "Asynchronously deletes one or more keys."),
    spec!(Exists, "exists", -2, ["readonly", "fast"], 1, -1, 1, "generic", "1.0.0", "Determines whether one or more keys exist."),
    spec!(Type, "type", 2, ["readonly", "fast"], 1, 1, 1, "generic", "1.0.0", "Determines the type of value stored at a key."),
    spec!(Keys, "keys", 2, ["readonly"], 0, 0, 0, "generic", "1.0.0", "Returns all key names that match a pattern."),
    spec!(Scan, "scan", -2, ["readonly"], 0, 0, 0, "generic", "2.8.0", "Iterates over the key names in the database."),
    spec!(Rename, "rename", 3, ["write"], 1, 2, 1, "generic", "1.0.0", "Renames a key and overwrites the destination."),
    spec!(
        RenameNx,
        "renamenx",
        3,
        ["write", "fast"],
        1,
        2,
        1,
        "generic",
        "1.0.0",
        "Renames a key only when the target key name doesn't exist."
    ),
    spec!(Copy, "copy", -3, ["write", "denyoom"], 1, 2, 1, "generic", "6.2.0", "Copies the value of a key to a new key."),
    spec!(RandomKey, "randomkey", 1, ["readonly"], 0, 0, 0, "generic", "1.0.0", "Returns a random key name from the database."),
    spec!(
        Touch,
        "touch",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        "generic",
        "3.2.1",
        "Returns the number of existing keys out of those specified after updating the time they were last accessed."
    ),
    spec!(Expire, "expire", -3, ["write", "fast"], 1, 1, 1, "generic", "1.0.0", "Sets the expiration time of a key in seconds."),
    spec!(PExpire, "pexpire", -3, ["write", "fast"], 1, 1, 1, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds."),
    spec!(
        ExpireAt,
        "expireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "1.2.0",
        "Sets the expiration time of a key to a Unix timestamp."
    ),
    spec!(
        PExpireAt,
        "pexpireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key to a Unix milliseconds timestamp."
    ),
    spec!(Ttl, "ttl", 2, ["readonly", "fast"], 1, 1, 1, "generic", "1.0.0", "Returns the expiration time in seconds of a key."),
    spec!(PTtl, "pttl", 2, ["readonly", "fast"], 1, 1, 1, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key."),
    spec!(
        ExpireTime,
        "expiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix timestamp."
    ),
    spec!(
        PExpireTime,
        "pexpiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix milliseconds timestamp."
    ),
    spec!(Persist, "persist", 2, ["write", "fast"], 1, 1, 1, "generic", "2.2.0", "Removes the expiration time of a key."),
    spec!(Object, "object", -2, [], 2, 2, 1, "generic", "2.2.3", "A container for object introspection commands."),
    spec!(Get, "get", 2, ["readonly", "fast"], 1, 1, 1, "string", "1.0.0", "Returns the string value of a key."),
    spec!(
        Set,
        "set",
        -3,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."
    ),
    spec!(
        SetNx,
        "setnx",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Set the string value of a key only when the key doesn't exist."
    ),
    spec!(
        SetEx,
        "setex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.0.0",
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."
    ),
    spec!(
        PSetEx,
        "psetex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.6.0",
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."
    ),
    spec!(
        GetSet,
        "getset",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Returns the previous string value of a key after setting it to a new value."
    ),
    spec!(GetDel, "getdel", 2, ["write", "fast"], 1, 1, 1, "string", "6.2.0", "Returns the string value of a key after deleting the key."),
    spec!(
        GetEx,
        "getex",
        -2,
        ["write", "fast"],
        1,
        1,
        1,
        "string",
        "6.2.0",
        "Returns the string value of a key after setting its expiration time."
    ),
    spec!(MGet, "mget", -2, ["readonly", "fast"], 1, -1, 1, "string", "1.0.0", "Atomically returns the string values of one or more keys."),
    spec!(
        MSet,
        "mset",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        "string",
        "1.0.1",
        "Atomically creates or modifies the string values of one or more keys."
    ),
    spec!(
        MSetNx,
        "msetnx",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        "string",
        "1.0.1",
        "Atomically modifies the string values of one or more keys only when all keys don't exist."
    ),
    spec!(
        Append,
        "append",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "2.0.0",
        "Appends a string to the value of a key. Creates the key if it doesn't exist."
    ),
    spec!(StrLen, "strlen", 2, ["readonly", "fast"], 1, 1, 1, "string", "2.2.0", "Returns the length of a string value."),
    spec!(GetRange, "getrange", 4, ["readonly"], 1, 1, 1, "string", "2.4.0", "Returns a substring of the string stored at a key."),
    spec!(
        SetRange,
        "setrange",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.2.0",
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."
    ),
    spec!(
        Incr,
        "incr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."
    ),
    spec!(
        Decr,
        "decr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."
    ),
    spec!(
        IncrBy,
        "incrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."
    ),
    spec!(
        DecrBy,
        "decrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."
    ),
    spec!(
        WaitAof,
        "waitaof",
        4,
        ["noscript"],
        0,
        0,
        0,
        "generic",
        "7.2.0",
        "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas."
    ),
    spec!(
        IncrByFloat,
        "incrbyfloat",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "2.6.0",
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."
    ),
    spec!(HSet, "hset", -4, ["write", "denyoom", "fast"], 1, 1, 1, "hash", "2.0.0", "Creates or modifies the value of a field in a hash."),
    spec!(
        HSetNx,
        "hsetnx",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Sets the value of a field in a hash only when the field doesn't exist."
    ),
    spec!(HMSet, "hmset", -4, ["write", "denyoom", "fast"], 1, 1, 1, "hash", "2.0.0", "Sets the values of multiple fields."),
    spec!(HGet, "hget", 3, ["readonly", "fast"], 1, 1, 1, "hash", "2.0.0", "Returns the value of a field in a hash."),
    spec!(HMGet, "hmget", -3, ["readonly", "fast"], 1, 1, 1, "hash", "2.0.0", "Returns the values of all fields in a hash."),
    spec!(HGetAll, "hgetall", 2, ["readonly"], 1, 1, 1, "hash", "2.0.0", "Returns all fields and values in a hash."),
    spec!(HKeys, "hkeys", 2, ["readonly"], 1, 1, 1, "hash", "2.0.0", "Returns all fields in a hash."),
    spec!(HVals, "hvals", 2, ["readonly"], 1, 1, 1, "hash", "2.0.0", "Returns all values in a hash."),
    spec!(HLen, "hlen", 2, ["readonly", "fast"], 1, 1, 1, "hash", "2.0.0", "Returns the number of fields in a hash."),
    spec!(
        HDel,
        "hdel",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."
    ),
    spec!(HExists, "hexists", 3, ["readonly", "fast"], 1, 1, 1, "hash", "2.0.0", "Determines whether a field exists in a hash."),
    spec!(HStrLen, "hstrlen", 3, ["readonly", "fast"], 1, 1, 1, "hash", "3.2.0", "Returns the length of the value of a field."),
    spec!(
        HIncrBy,
        "hincrby",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."
    ),
    spec!(
        HIncrByFloat,
        "hincrbyfloat",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.6.0",
        "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."
    ),
    spec!(HRandField, "hrandfield", -2, ["readonly"], 1, 1, 1, "hash", "6.2.0", "Returns one or more random fields from a hash."),
    spec!(HScan, "hscan", -3, ["readonly"], 1, 1, 1, "hash", "2.8.0", "Iterates over fields and values of a hash."),
    spec!(
        SAdd,
        "sadd",
        -3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Adds one or more members to a set. Creates the key if it doesn't exist."
    ),
    spec!(
        SRem,
        "srem",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Removes one or more members from a set. Deletes the set if the last member was removed."
    ),
    spec!(SMembers, "smembers", 2, ["readonly"], 1, 1, 1, "set", "1.0.0", "Returns all members of a set."),
    spec!(SIsMember, "sismember", 3, ["readonly", "fast"], 1, 1, 1, "set", "1.0.0", "Determines whether a member belongs to a set."),
    spec!(
        SMIsMember,
        "smismember",
        -3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "set",
        "6.2.0",
        "Determines whether multiple members belong to a set."
    ),
    spec!(SCard, "scard", 2, ["readonly", "fast"], 1, 1, 1, "set", "1.0.0", "Returns the number of members in a set."),
    spec!(
        SPop,
        "spop",
        -2,
        ["write", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."
    ),
    spec!(SRandMember, "srandmember", -2, ["readonly"], 1, 1, 1, "set", "1.0.0", "Get one or multiple random members from a set"),
    spec!(SMove, "smove", 4, ["write", "fast"], 1, 2, 1, "set", "1.0.0", "Moves a member from one set to another."),
    spec!(SInter, "sinter", -2, ["readonly"], 1, -1, 1, "set", "1.0.0", "Returns the intersect of multiple sets."),
    spec!(
        SInterStore,
        "sinterstore",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Stores the intersect of multiple sets in a key."
    ),
    spec!(
        SInterCard,
        "sintercard",
        -3,
        ["readonly", "movablekeys"],
        0,
        0,
        0,
        "set",
        "7.0.0",
        "Returns the number of members of the intersect of multiple sets."
    ),
    spec!(SUnion, "sunion", -2, ["readonly"], 1, -1, 1, "set", "1.0.0", "Returns the union of multiple sets."),
    spec!(SUnionStore, "sunionstore", -3, ["write", "denyoom"], 1, -1, 1, "set", "1.0.0", "Stores the union of multiple sets in a key."),
    spec!(SDiff, "sdiff", -2, ["readonly"], 1, -1, 1, "set", "1.0.0", "Returns the difference of multiple sets."),
    spec!(SDiffStore, "sdiffstore", -3, ["write", "denyoom"], 1, -1, 1, "set", "1.0.0", "Stores the difference of multiple sets in a key."),
    spec!(SScan, "sscan", -3, ["readonly"], 1, 1, 1, "set", "2.6.0", "Iterates over members of a set."),
];

static BY_NAME: LazyLock<HashMap<&'static [u8], usize, foldhash::fast::RandomState>> =
    LazyLock::new(|| COMMANDS.iter().enumerate().map(|(i, spec)| (spec.name.as_bytes(), i)).collect());

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
    let mut lower = [0u8; NAME_BYTES_MAX];
    for (dst, src) in lower.iter_mut().zip(name) {
        *dst = src.to_ascii_lowercase();
    }
    BY_NAME.get(&lower[..name.len()]).copied()
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
