//! Replies into Lua values and Lua values into replies, by Redis's rules for scripts
//! (RESP2's, as a script sees by default):
//!
//! | reply | Lua | back to a reply |
//! |---|---|---|
//! | integer | number | integer (a number is truncated) |
//! | bulk string | string | bulk string |
//! | nil bulk, nil array | `false` | nil bulk (`false`; `nil` too) |
//! | status | table `{ok=...}` | status |
//! | error | table `{err=...}` | error |
//! | array (map, set: flat) | table `{...}` | array, up to the first `nil` |
//! | double | string (its RESP2 form) | - |
//! | boolean | number 1 / 0 (RESP2) | `true`: integer 1 |
//!
//! Owns nothing but these rules; must never run a command.

use bytes::Bytes;
use mlua::{Lua, Table, Value};

use crate::protocol::Frame;
use crate::protocol::encode::format_double;

/// Tables nested deeper than this in a script's reply are cut off as a nil (Redis stops
/// at its own C stack; a self-referencing table must not recurse forever).
const REPLY_DEPTH_MAX: usize = 64;

/// A command's reply as the Lua value a script receives.
pub fn frame_to_lua(lua: &Lua, frame: Frame) -> mlua::Result<Value> {
    Ok(match frame {
        Frame::Integer(n) => Value::Integer(n),
        Frame::Bulk(bytes) => Value::String(lua.create_string(&bytes)?),
        Frame::Verbatim(_, bytes) | Frame::DoubleText(bytes) => Value::String(lua.create_string(&bytes)?),
        Frame::Double(value) => Value::String(lua.create_string(format_double(value))?),
        Frame::Boolean(b) => Value::Integer(b as mlua::Integer),
        Frame::Null | Frame::NullArray => Value::Boolean(false),
        Frame::Simple(text) => Value::Table(single_field(lua, "ok", &text)?),
        Frame::Error(text) => Value::Table(single_field(lua, "err", &text)?),
        Frame::Bulks(bulks) => {
            let table = lua.create_table_with_capacity(bulks.len(), 0)?;
            for (i, item) in bulks.iter().enumerate() {
                table.raw_set(i + 1, lua.create_string(&item)?)?;
            }
            Value::Table(table)
        }
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) | Frame::Replies(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                table.raw_set(i + 1, frame_to_lua(lua, item)?)?;
            }
            Value::Table(table)
        }
        Frame::PairMap(pairs) => {
            let table = lua.create_table_with_capacity(pairs.len(), 0)?;
            for (i, (key, value)) in pairs.into_iter().enumerate() {
                table.raw_set(i + 1, frame_to_lua(lua, Frame::Array(vec![key, value]))?)?;
            }
            Value::Table(table)
        }
        Frame::Map(pairs) | Frame::Pairs(pairs) => {
            let table = lua.create_table_with_capacity(pairs.len() * 2, 0)?;
            for (i, (key, value)) in pairs.into_iter().enumerate() {
                table.raw_set(2 * i + 1, frame_to_lua(lua, key)?)?;
                table.raw_set(2 * i + 2, frame_to_lua(lua, value)?)?;
            }
            Value::Table(table)
        }
    })
}

fn single_field(lua: &Lua, name: &str, text: &[u8]) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.raw_set(name, lua.create_string(text)?)?;
    Ok(table)
}

/// What a script returned, as the reply its client gets.
pub fn lua_to_frame(value: &Value) -> Frame {
    lua_to_frame_at(value, 0)
}

fn lua_to_frame_at(value: &Value, depth: usize) -> Frame {
    match value {
        Value::Nil | Value::Boolean(false) => Frame::Null,
        Value::Boolean(true) => Frame::Integer(1),
        Value::Integer(n) => Frame::Integer(*n),
        // Redis casts a Lua number to a long long: truncated toward zero (a NaN or an
        // out-of-range value saturates here rather than being undefined).
        Value::Number(n) => Frame::Integer(*n as i64),
        Value::String(s) => Frame::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(table) if depth < REPLY_DEPTH_MAX => table_to_frame(table, depth),
        _ => Frame::Null,
    }
}

fn table_to_frame(table: &Table, depth: usize) -> Frame {
    // `{err=...}` and `{ok=...}` are an error and a status, as Redis reads them.
    if let Ok(Value::String(err)) = table.raw_get::<Value>("err") {
        return Frame::Error(Bytes::copy_from_slice(&err.as_bytes()));
    }
    if let Ok(Value::String(ok)) = table.raw_get::<Value>("ok") {
        return Frame::Simple(Bytes::copy_from_slice(&ok.as_bytes()));
    }
    let mut items = Vec::new();
    for i in 1.. {
        match table.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(item) => items.push(lua_to_frame_at(&item, depth + 1)),
        }
    }
    Frame::Array(items)
}

/// A `redis.call` argument: a string, or a number written as Redis 7.0 writes it
/// (`%.17g`: `3` for 3.0, `0.10000000000000001` for 0.1).
pub fn lua_to_argument(value: &Value) -> Option<Bytes> {
    match value {
        Value::String(s) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Integer(n) => Some(Bytes::from(n.to_string())),
        Value::Number(n) => Some(Bytes::from(format_double(*n))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(lua: &Lua, frame: Frame) -> Frame {
        let value = frame_to_lua(lua, frame).expect("a Lua value");
        lua_to_frame(&value)
    }

    #[test]
    fn replies_survive_the_trip_through_lua_as_redis_converts_them() {
        let lua = Lua::new();
        assert_eq!(round_trip(&lua, Frame::Integer(-7)), Frame::Integer(-7));
        assert_eq!(round_trip(&lua, Frame::bulk_str("abc")), Frame::bulk_str("abc"));
        assert_eq!(round_trip(&lua, Frame::Null), Frame::Null);
        assert_eq!(round_trip(&lua, Frame::ok()), Frame::ok());
        assert_eq!(round_trip(&lua, Frame::static_error("ERR bad")), Frame::static_error("ERR bad"));
        // A nested array; a nil bulk inside an array is `false` in Lua and comes back
        // as a nil bulk (MGET of a missing key), but a Lua `nil` ends an array.
        let nested = Frame::Array(vec![Frame::Integer(1), Frame::Array(vec![Frame::bulk_str("x")]), Frame::bulk_str("y")]);
        assert_eq!(round_trip(&lua, nested.clone()), nested);
        let with_null = Frame::Array(vec![Frame::Integer(1), Frame::Null, Frame::Integer(3)]);
        assert_eq!(round_trip(&lua, with_null.clone()), with_null);
        let with_nil: Value = lua.load("return {1, nil, 3}").eval().expect("a table");
        assert_eq!(lua_to_frame(&with_nil), Frame::Array(vec![Frame::Integer(1)]));
        // RESP3-only types arrive as RESP2 would carry them.
        assert_eq!(round_trip(&lua, Frame::Double(1.5)), Frame::bulk_str("1.5"));
        assert_eq!(round_trip(&lua, Frame::Boolean(true)), Frame::Integer(1));
        let map = Frame::Map(vec![(Frame::bulk_str("f"), Frame::Integer(2))]);
        assert_eq!(round_trip(&lua, map), Frame::Array(vec![Frame::bulk_str("f"), Frame::Integer(2)]));
    }

    #[test]
    fn numbers_truncate_and_booleans_follow_redis() {
        assert_eq!(lua_to_frame(&Value::Number(3.99)), Frame::Integer(3));
        assert_eq!(lua_to_frame(&Value::Number(-3.99)), Frame::Integer(-3));
        assert_eq!(lua_to_frame(&Value::Boolean(true)), Frame::Integer(1));
        assert_eq!(lua_to_frame(&Value::Boolean(false)), Frame::Null);
        assert_eq!(lua_to_frame(&Value::Nil), Frame::Null);
    }

    #[test]
    fn a_table_that_holds_itself_ends_in_a_bounded_reply() {
        let lua = Lua::new();
        let table = lua.create_table().expect("table");
        table.raw_set(1, table.clone()).expect("set");
        let mut frame = lua_to_frame(&Value::Table(table));
        let mut depth = 0;
        while let Frame::Array(mut items) = frame {
            depth += 1;
            frame = items.pop().unwrap_or(Frame::Null);
        }
        assert_eq!(depth, REPLY_DEPTH_MAX);
    }

    #[test]
    fn arguments_are_strings_or_numbers() {
        assert_eq!(lua_to_argument(&Value::Integer(5)), Some(Bytes::from_static(b"5")));
        assert_eq!(lua_to_argument(&Value::Number(2.5)), Some(Bytes::from_static(b"2.5")));
        assert_eq!(lua_to_argument(&Value::Number(3.0)), Some(Bytes::from_static(b"3")));
        assert_eq!(lua_to_argument(&Value::Number(0.1)), Some(Bytes::from_static(b"0.10000000000000001")));
        assert_eq!(lua_to_argument(&Value::Number(1e20)), Some(Bytes::from_static(b"1e+20")));
        assert_eq!(lua_to_argument(&Value::Boolean(true)), None);
        assert_eq!(lua_to_argument(&Value::Nil), None);
    }
}
