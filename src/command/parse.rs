//! Arguments -> typed [`Command`], with Redis's checks and error texts.

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::table::{self, CmdId};
use super::*;
use crate::command::numbers::{parse_f64, parse_i64};
use crate::protocol::Frame;

type Parsed = Result<Command, Frame>;

mod expiry;
mod subcommands;

use expiry::{parse_expire, parse_getex, parse_set};

use subcommands::{
    parse_client, parse_command_command, parse_config, parse_function, parse_hello, parse_memory, parse_object, parse_pubsub,
};

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn int(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

/// Argument `i`, moved out (a parser uses each once).
pub(super) fn take(args: &mut [Bytes], i: usize) -> Bytes {
    std::mem::take(&mut args[i])
}

/// `args[1]` and `args[2..]`, the latter in `args`'s own allocation (the arity check
/// has made sure there are at least two).
fn key_and_elements(mut args: Vec<Bytes>) -> (Bytes, Vec<Bytes>) {
    debug_assert!(args.len() >= 2);
    let key = take(&mut args, 1);
    args.drain(..2);
    (key, args)
}

/// Parse one request. `args[0]` is the command name; `args` is never empty.
pub fn parse_command(args: Vec<Bytes>) -> Parsed {
    debug_assert!(!args.is_empty());
    let index = table::index_of(&args[0]);
    parse_command_at(index, args)
}

/// [`parse_command`] when the caller already looked the name up (`table::index_of`).
pub fn parse_command_at(index: Option<usize>, mut args: Vec<Bytes>) -> Parsed {
    let Some(spec) = index.map(|i| &table::COMMANDS[i]) else {
        return Err(errors::unknown_command(&args));
    };
    if !spec.arity_ok(args.len()) {
        return Err(wrong_arity(spec.name));
    }
    // As Redis's command lookup: a container's unknown subcommand or a subcommand's
    // wrong arity is refused before the subcommand's own parser sees it.
    if spec.is_container()
        && let Some(refusal) = table::subcommand_refusal(spec, &args)
    {
        return Err(refusal);
    }
    let a = &mut args[..];
    let key = |cmd: KeyCommand| Ok(Command::Key(cmd));
    match spec.id {
        CmdId::Get => key(KeyCommand::Get(take(a, 1))),
        CmdId::Set => parse_set(a),
        CmdId::SetNx => key(KeyCommand::Set {
            key: take(a, 1),
            value: take(a, 2),
            condition: SetCondition::IfAbsent,
            ttl: TtlChange::Keep,
            reply: SetReply::Written,
            command: spec.name,
        }),
        CmdId::SetEx | CmdId::PSetEx => {
            let amount = int(&a[2])?;
            let ms = if spec.id == CmdId::SetEx { amount.checked_mul(1000) } else { Some(amount) };
            match ms {
                Some(ms) if amount > 0 => key(KeyCommand::Set {
                    key: take(a, 1),
                    value: take(a, 3),
                    condition: SetCondition::Always,
                    ttl: TtlChange::AfterMs(ms as u64),
                    reply: SetReply::Ok,
                    command: spec.name,
                }),
                _ => Err(errors::invalid_expire(spec.name)),
            }
        }
        CmdId::GetSet => key(KeyCommand::Set {
            key: take(a, 1),
            value: take(a, 2),
            condition: SetCondition::Always,
            ttl: TtlChange::Clear,
            reply: SetReply::OldValue,
            command: spec.name,
        }),
        CmdId::GetDel => key(KeyCommand::GetDel(take(a, 1))),
        CmdId::GetEx => parse_getex(a),
        CmdId::Append => key(KeyCommand::Append { key: take(a, 1), value: take(a, 2) }),
        CmdId::StrLen => key(KeyCommand::StrLen(take(a, 1))),
        // SUBSTR is GETRANGE's old name (deprecated in Redis, still served).
        CmdId::GetRange | CmdId::Substr => {
            let start = int(&a[2])?;
            let end = int(&a[3])?;
            key(KeyCommand::GetRange { key: take(a, 1), start, end })
        }
        CmdId::SetRange => {
            let offset = int(&a[2])?;
            if offset < 0 {
                return Err(errors::error(errors::OFFSET_OUT_OF_RANGE));
            }
            key(KeyCommand::SetRange { key: take(a, 1), offset: offset as usize, value: take(a, 3) })
        }
        CmdId::HSet
        | CmdId::HSetNx
        | CmdId::HMSet
        | CmdId::HGet
        | CmdId::HMGet
        | CmdId::HGetAll
        | CmdId::HKeys
        | CmdId::HVals
        | CmdId::HLen
        | CmdId::HDel
        | CmdId::HExists
        | CmdId::HStrLen
        | CmdId::HIncrBy
        | CmdId::HIncrByFloat
        | CmdId::HRandField
        | CmdId::HScan => key(KeyCommand::Hash(super::hash::parse(spec.id, spec.name, a)?)),
        CmdId::Incr => key(KeyCommand::IncrBy { key: take(a, 1), by: 1 }),
        CmdId::Decr => key(KeyCommand::IncrBy { key: take(a, 1), by: -1 }),
        CmdId::IncrBy => {
            let by = int(&a[2])?;
            key(KeyCommand::IncrBy { key: take(a, 1), by })
        }
        CmdId::DecrBy => {
            let by = int(&a[2])?;
            if by == i64::MIN {
                return Err(Frame::static_error("ERR decrement would overflow"));
            }
            key(KeyCommand::IncrBy { key: take(a, 1), by: -by })
        }
        CmdId::IncrByFloat => {
            let by = parse_f64(&a[2]);
            key(KeyCommand::IncrByFloat { key: take(a, 1), by })
        }
        CmdId::Expire | CmdId::PExpire | CmdId::ExpireAt | CmdId::PExpireAt => parse_expire(spec.id, spec.name, a),
        CmdId::Ttl => key(KeyCommand::Ttl { key: take(a, 1), unit: TimeUnit::Seconds }),
        CmdId::PTtl => key(KeyCommand::Ttl { key: take(a, 1), unit: TimeUnit::Millis }),
        CmdId::ExpireTime => key(KeyCommand::ExpireTime { key: take(a, 1), unit: TimeUnit::Seconds }),
        CmdId::PExpireTime => key(KeyCommand::ExpireTime { key: take(a, 1), unit: TimeUnit::Millis }),
        CmdId::Persist => key(KeyCommand::Persist(take(a, 1))),
        CmdId::Type => key(KeyCommand::Type(take(a, 1))),
        CmdId::Object => parse_object(a),
        CmdId::Memory => parse_memory(a),

        CmdId::MGet => Ok(Command::Multi(MultiKeyCommand::MGet(args.split_off(1)))),
        CmdId::MSet | CmdId::MSetNx => {
            if args.len().is_multiple_of(2) {
                return Err(wrong_arity(spec.name));
            }
            let pairs = pairs(args.split_off(1));
            Ok(Command::Multi(if spec.id == CmdId::MSet { MultiKeyCommand::MSet(pairs) } else { MultiKeyCommand::MSetNx(pairs) }))
        }
        CmdId::Del | CmdId::Unlink => Ok(Command::Multi(MultiKeyCommand::Del(args.split_off(1)))),
        CmdId::Exists => Ok(Command::Multi(MultiKeyCommand::Exists(args.split_off(1)))),
        CmdId::Touch => Ok(Command::Multi(MultiKeyCommand::Touch(args.split_off(1)))),
        CmdId::Rename | CmdId::RenameNx => {
            Ok(Command::Multi(MultiKeyCommand::Rename { src: take(a, 1), dst: take(a, 2), nx: spec.id == CmdId::RenameNx }))
        }
        CmdId::Copy => parse_copy(a),
        CmdId::Dump => key(KeyCommand::Dump(take(a, 1))),
        CmdId::SetBit => key(KeyCommand::Bits(super::bits::parse_setbit(a)?)),
        CmdId::GetBit => key(KeyCommand::Bits(super::bits::parse_getbit(a)?)),
        CmdId::BitCount => key(KeyCommand::Bits(super::bits::parse_bitcount(a)?)),
        CmdId::BitPos => key(KeyCommand::Bits(super::bits::parse_bitpos(a)?)),
        CmdId::BitField | CmdId::BitFieldRo => key(KeyCommand::Bits(super::bits::parse_bitfield(a, spec.id == CmdId::BitFieldRo)?)),
        CmdId::BitOp => {
            let op = super::bits::parse_bitop(&a[1], a.len() - 3)?;
            let mut rest = args.split_off(2);
            let keys = rest.split_off(1);
            Ok(Command::Multi(MultiKeyCommand::BitOp { op, dst: rest.remove(0), keys }))
        }
        CmdId::Lcs => Ok(Command::Multi(MultiKeyCommand::Lcs(Box::new(super::lcs::parse(a))))),
        CmdId::Restore => key(KeyCommand::Restore(Box::new(super::restore::parse(a)?))),
        // Commands whose arguments after the key are all elements keep the argument
        // vector as their list of elements: no second allocation per command (these are
        // the commonest writes of one element).
        CmdId::LPush | CmdId::RPush | CmdId::LPushX | CmdId::RPushX => {
            let (key, elements) = key_and_elements(args);
            Ok(super::list::push(spec.id, key, elements))
        }
        CmdId::SAdd | CmdId::SRem => {
            let (key, members) = key_and_elements(args);
            Ok(super::set::add_or_remove(spec.id, key, members))
        }
        CmdId::SMembers
        | CmdId::SIsMember
        | CmdId::SMIsMember
        | CmdId::SCard
        | CmdId::SPop
        | CmdId::SRandMember
        | CmdId::SMove
        | CmdId::SInter
        | CmdId::SInterStore
        | CmdId::SInterCard
        | CmdId::SUnion
        | CmdId::SUnionStore
        | CmdId::SDiff
        | CmdId::SDiffStore
        | CmdId::SScan => super::set::parse(spec.id, spec.name, a),
        CmdId::ZAdd
        | CmdId::ZIncrBy
        | CmdId::ZRem
        | CmdId::ZScore
        | CmdId::ZMScore
        | CmdId::ZCard
        | CmdId::ZCount
        | CmdId::ZLexCount
        | CmdId::ZRange
        | CmdId::ZRangeStore
        | CmdId::ZRangeByScore
        | CmdId::ZRevRangeByScore
        | CmdId::ZRangeByLex
        | CmdId::ZRevRangeByLex
        | CmdId::ZRevRange
        | CmdId::ZRank
        | CmdId::ZRevRank
        | CmdId::ZPopMin
        | CmdId::ZPopMax
        | CmdId::ZMPop
        | CmdId::ZRandMember
        | CmdId::ZRemRangeByRank
        | CmdId::ZRemRangeByScore
        | CmdId::ZRemRangeByLex
        | CmdId::ZScan
        | CmdId::ZUnion
        | CmdId::ZInter
        | CmdId::ZDiff
        | CmdId::ZUnionStore
        | CmdId::ZInterStore
        | CmdId::ZDiffStore
        | CmdId::ZInterCard => super::zset::parse(spec.id, spec.name, a),
        CmdId::GeoAdd
        | CmdId::GeoPos
        | CmdId::GeoHash
        | CmdId::GeoDist
        | CmdId::GeoRadius
        | CmdId::GeoRadiusRo
        | CmdId::GeoRadiusByMember
        | CmdId::GeoRadiusByMemberRo
        | CmdId::GeoSearch
        | CmdId::GeoSearchStore => super::geo::parse(spec.id, a),
        CmdId::LPop
        | CmdId::RPop
        | CmdId::LLen
        | CmdId::LIndex
        | CmdId::LRange
        | CmdId::LSet
        | CmdId::LInsert
        | CmdId::LRem
        | CmdId::LTrim
        | CmdId::LPos
        | CmdId::LMove
        | CmdId::RPopLPush
        | CmdId::LMPop => super::list::parse(spec.id, spec.name, a),
        CmdId::FtCreate | CmdId::FtSearch | CmdId::FtInfo | CmdId::FtList | CmdId::FtDropIndex | CmdId::FtAlter | CmdId::FtAggregate => {
            super::vector::parse(spec.id, a)
        }

        CmdId::DbSize => Ok(Command::Keyspace(KeyspaceCommand::DbSize)),
        CmdId::FlushDb | CmdId::FlushAll => match a.len() {
            1 => Ok(Command::Keyspace(KeyspaceCommand::Flush)),
            2 if eq(&a[1], "async") || eq(&a[1], "sync") => Ok(Command::Keyspace(KeyspaceCommand::Flush)),
            _ => Err(errors::error(errors::SYNTAX)),
        },
        CmdId::Keys => Ok(Command::Keyspace(KeyspaceCommand::Keys(take(a, 1)))),
        CmdId::GraphList => Ok(Command::Keyspace(KeyspaceCommand::GraphList)),
        CmdId::GraphConfig => Ok(Command::GraphConfig(super::graph::parse_config(a)?)),
        CmdId::GraphQuery | CmdId::GraphRoQuery | CmdId::GraphDelete | CmdId::GraphExplain | CmdId::GraphProfile => {
            key(KeyCommand::Graph(super::graph::parse(spec.id, a)?))
        }
        CmdId::XAdd
        | CmdId::XLen
        | CmdId::XRange
        | CmdId::XRevRange
        | CmdId::XDel
        | CmdId::XTrim
        | CmdId::XSetId
        | CmdId::XGroup
        | CmdId::XInfo
        | CmdId::XAck
        | CmdId::XPending
        | CmdId::XClaim
        | CmdId::XAutoClaim => match super::stream::parse(spec.id, a)? {
            super::stream::Parsed::Key(cmd) => key(KeyCommand::Stream(Box::new(cmd))),
            super::stream::Parsed::Help(lines) => Ok(Command::Help(lines)),
        },
        CmdId::XRead | CmdId::XReadGroup => super::stream::parse_read_command(spec.name, a),
        CmdId::Scan => parse_scan(a),
        CmdId::RandomKey => Ok(Command::Keyspace(KeyspaceCommand::RandomKey)),

        CmdId::Ping => match a.len() {
            1 => Ok(Command::Ping(None)),
            2 => Ok(Command::Ping(Some(take(a, 1)))),
            _ => Err(wrong_arity(spec.name)),
        },
        CmdId::Echo => Ok(Command::Echo(take(a, 1))),
        CmdId::Hello => parse_hello(a),
        CmdId::Auth => match a.len() {
            2 => Ok(Command::Auth { user: None, password: take(a, 1) }),
            3 => Ok(Command::Auth { user: Some(take(a, 1)), password: take(a, 2) }),
            _ => Err(errors::error(errors::SYNTAX)),
        },
        CmdId::Select => Ok(Command::Select(int(&a[1])?)),
        CmdId::Quit => Ok(Command::Quit),
        CmdId::Reset => Ok(Command::Reset),
        CmdId::Multi => Ok(Command::Transaction(TransactionCommand::Multi)),
        CmdId::Exec => Ok(Command::Transaction(TransactionCommand::Exec)),
        CmdId::Discard => Ok(Command::Transaction(TransactionCommand::Discard)),
        CmdId::Watch => Ok(Command::Transaction(TransactionCommand::Watch(a[1..].to_vec()))),
        CmdId::Unwatch => Ok(Command::Transaction(TransactionCommand::Unwatch)),
        CmdId::Subscribe => Ok(Command::PubSub(PubSubCommand::Subscribe(SubscriptionKind::Channel, a[1..].to_vec()))),
        CmdId::PSubscribe => Ok(Command::PubSub(PubSubCommand::Subscribe(SubscriptionKind::Pattern, a[1..].to_vec()))),
        CmdId::SSubscribe => Ok(Command::PubSub(PubSubCommand::Subscribe(SubscriptionKind::Shard, a[1..].to_vec()))),
        CmdId::Unsubscribe => Ok(Command::PubSub(PubSubCommand::Unsubscribe(SubscriptionKind::Channel, a[1..].to_vec()))),
        CmdId::PUnsubscribe => Ok(Command::PubSub(PubSubCommand::Unsubscribe(SubscriptionKind::Pattern, a[1..].to_vec()))),
        CmdId::SUnsubscribe => Ok(Command::PubSub(PubSubCommand::Unsubscribe(SubscriptionKind::Shard, a[1..].to_vec()))),
        CmdId::Publish | CmdId::SPublish => {
            Ok(Command::PubSub(PubSubCommand::Publish { shard: spec.id == CmdId::SPublish, channel: take(a, 1), message: take(a, 2) }))
        }
        CmdId::PubSub => parse_pubsub(a),
        CmdId::Sort | CmdId::SortRo => {
            Ok(Command::Multi(MultiKeyCommand::Sort(Box::new(super::sort::parse(a, spec.id == CmdId::SortRo)?))))
        }
        CmdId::BLPop
        | CmdId::BRPop
        | CmdId::BLMove
        | CmdId::BRPopLPush
        | CmdId::BLMPop
        | CmdId::BZPopMin
        | CmdId::BZPopMax
        | CmdId::BZMPop => super::blocking::parse(spec.name, a),
        CmdId::Client => parse_client(a),
        CmdId::Command => parse_command_command(a),
        CmdId::Info => Ok(Command::Info(args.split_off(1))),
        CmdId::Config => parse_config(a),
        CmdId::Time => Ok(Command::Time),
        CmdId::Role => Ok(Command::Role),
        CmdId::Shutdown => parse_shutdown(a),
        CmdId::Function => parse_function(a),
        CmdId::Eval | CmdId::EvalSha | CmdId::EvalRo | CmdId::EvalShaRo => Ok(Command::Script(super::script::parse_run(
            a.to_vec(),
            matches!(spec.id, CmdId::EvalSha | CmdId::EvalShaRo),
            matches!(spec.id, CmdId::EvalRo | CmdId::EvalShaRo),
        )?)),
        CmdId::Script => Ok(match super::script::parse_script(a.to_vec())? {
            Some(command) => Command::Script(command),
            None => Command::Help(super::script::SCRIPT_HELP),
        }),
        CmdId::Save => Ok(Command::Save),
        CmdId::LastSave => Ok(Command::LastSave),
        CmdId::Monitor => Ok(Command::Monitor),
        CmdId::WaitAof => {
            let local = int(&a[1])?;
            let replicas = int(&a[2])?;
            let timeout_ms = int(&a[3])?;
            if local < 0 || replicas < 0 {
                return Err(errors::error(errors::NOT_INTEGER));
            }
            if timeout_ms < 0 {
                return Err(Frame::static_error("ERR timeout is negative"));
            }
            Ok(Command::WaitAof { local, replicas, timeout_ms })
        }
    }
}

fn pairs(flat: Vec<Bytes>) -> Vec<(Bytes, Bytes)> {
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

/// SHUTDOWN's options, checked as Redis 7 checks them: NOSAVE with SAVE, or ABORT with
/// anything, is a syntax error.
fn parse_shutdown(a: &mut [Bytes]) -> Parsed {
    const OPTIONS_MAX: usize = 5;
    if a.len() > OPTIONS_MAX + 1 {
        return Err(errors::error(errors::SYNTAX));
    }
    let (mut nosave, mut save, mut other, mut abort) = (false, false, false, false);
    for option in &a[1..] {
        match () {
            _ if eq(option, "nosave") => nosave = true,
            _ if eq(option, "save") => save = true,
            _ if eq(option, "now") || eq(option, "force") => other = true,
            _ if eq(option, "abort") => abort = true,
            _ => return Err(errors::error(errors::SYNTAX)),
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        return Err(errors::error(errors::SYNTAX));
    }
    Ok(Command::Shutdown { abort })
}

fn parse_copy(a: &mut [Bytes]) -> Parsed {
    let mut replace = false;
    let mut i = 3;
    while i < a.len() {
        if eq(&a[i], "replace") {
            replace = true;
        } else if eq(&a[i], "db") && i + 1 < a.len() {
            let db = int(&a[i + 1])?;
            if db != 0 {
                return Err(errors::error(errors::DB_INDEX_OUT_OF_RANGE));
            }
            i += 1;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    Ok(Command::Multi(MultiKeyCommand::Copy { src: take(a, 1), dst: take(a, 2), replace }))
}

fn parse_scan(a: &mut [Bytes]) -> Parsed {
    let cursor = crate::command::numbers::parse_scan_cursor(&a[1]).ok_or_else(|| Frame::static_error("ERR invalid cursor"))?;
    let mut pattern = None;
    let mut count = 10usize;
    let mut type_name = None;
    let mut i = 2;
    while i < a.len() {
        let has_next = i + 1 < a.len();
        if eq(&a[i], "count") && has_next {
            let n = int(&a[i + 1])?;
            if n < 1 {
                return Err(errors::error(errors::SYNTAX));
            }
            count = n as usize;
        } else if eq(&a[i], "match") && has_next {
            pattern = Some(a[i + 1].clone());
        } else if eq(&a[i], "type") && has_next {
            type_name = Some(a[i + 1].clone());
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 2;
    }
    Ok(Command::Keyspace(KeyspaceCommand::Scan { cursor, pattern, count, type_name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Parsed {
        parse_command(line.split(' ').map(|s| Bytes::copy_from_slice(s.as_bytes())).collect())
    }

    fn err(line: &str) -> String {
        match parse(line) {
            Err(Frame::Error(e)) => String::from_utf8(e.to_vec()).unwrap(),
            other => panic!("expected an error for {line:?}, got {other:?}"),
        }
    }

    #[test]
    fn set_options_parse_like_redis() {
        assert_eq!(
            parse("SET k v NX PX 100 GET").unwrap(),
            Command::Key(KeyCommand::Set {
                key: "k".into(),
                value: "v".into(),
                condition: SetCondition::IfAbsent,
                ttl: TtlChange::AfterMs(100),
                reply: SetReply::OldValue,
                command: "set"
            })
        );
        assert_eq!(err("SET k v NX XX"), "ERR syntax error");
        assert_eq!(err("SET k v EX 10 PX 10"), "ERR syntax error");
        assert!(parse("SET k v EX 10 EX 20").is_ok(), "a repeated option is accepted, the last wins");
        assert_eq!(err("SET k v KEEPTTL EX 10"), "ERR syntax error");
        assert_eq!(err("SET k v EX 0"), "ERR invalid expire time in 'set' command");
        assert_eq!(err("SET k v EX x"), "ERR value is not an integer or out of range");
    }

    #[test]
    fn arity_and_unknown_commands_use_redis_text() {
        assert_eq!(err("GET"), "ERR wrong number of arguments for 'get' command");
        assert_eq!(err("MSET a b c"), "ERR wrong number of arguments for 'mset' command");
        assert_eq!(err("NOPE a b"), "ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ");
    }

    #[test]
    fn expire_options_are_checked() {
        assert_eq!(err("EXPIRE k 10 NX XX"), "ERR NX and XX, GT or LT options at the same time are not compatible");
        assert_eq!(err("EXPIRE k 10 GT LT"), "ERR GT and LT options at the same time are not compatible");
        assert_eq!(err("EXPIRE k 10 FOO"), "ERR Unsupported option FOO");
        assert_eq!(err("EXPIRE k 9223372036854775807"), "ERR invalid expire time in 'expire' command");
    }
}
