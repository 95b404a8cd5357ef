//! Every error class a client can provoke today, with Redis's exact message text, and
//! proof that an error reply neither closes the connection nor shifts later replies.
//! (WRONGTYPE needs a second data type and is not reachable yet.)

mod common;

use common::{command, connect, query_error, start_meridian};
use redis::Value;

fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    query_error(&command(args), con)
}

#[test]
fn wrong_arity_names_the_command_in_lower_case() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    assert_eq!(err(&mut con, &["GET"]), "ERR wrong number of arguments for 'get' command");
    assert_eq!(err(&mut con, &["set", "k"]), "ERR wrong number of arguments for 'set' command");
    assert_eq!(err(&mut con, &["GET", "a", "b"]), "ERR wrong number of arguments for 'get' command");
    assert_eq!(err(&mut con, &["MSET", "a", "1", "b"]), "ERR wrong number of arguments for 'mset' command");
    assert_eq!(err(&mut con, &["MGET"]), "ERR wrong number of arguments for 'mget' command");
    assert_eq!(err(&mut con, &["PING", "a", "b"]), "ERR wrong number of arguments for 'ping' command");
    assert_eq!(err(&mut con, &["CLIENT", "SETNAME"]), "ERR wrong number of arguments for 'client|setname' command");
}

#[test]
fn unknown_commands_quote_the_name_and_first_arguments() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    assert_eq!(err(&mut con, &["FOO", "a", "b"]), "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
    assert_eq!(err(&mut con, &["nosuchcmd"]), "ERR unknown command 'nosuchcmd', with args beginning with: ");
    assert_eq!(err(&mut con, &["CLIENT", "NOPE"]), "ERR unknown subcommand 'NOPE'. Try CLIENT HELP.");
    assert_eq!(err(&mut con, &["CONFIG", "NOPE"]), "ERR unknown subcommand 'NOPE'. Try CONFIG HELP.");
}

#[test]
fn non_integer_arguments_and_values_are_refused() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
    assert_eq!(err(&mut con, &["INCRBY", "n", "abc"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["INCRBY", "n", "1.5"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["INCRBY", "n", "99999999999999999999"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["EXPIRE", "n", "soon"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["GETRANGE", "n", "0", "x"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["SELECT", "zero"]), NOT_INTEGER);
    let _: () = redis::cmd("SET").arg("s").arg("hello").query(&mut con).expect("SET");
    assert_eq!(err(&mut con, &["INCR", "s"]), NOT_INTEGER);
    assert_eq!(err(&mut con, &["DECR", "s"]), NOT_INTEGER);
    let _: () = redis::cmd("SET").arg("s").arg(" 1").query(&mut con).expect("SET");
    assert_eq!(err(&mut con, &["INCR", "s"]), NOT_INTEGER, "leading space is not an integer");
    let value: String = redis::cmd("GET").arg("s").query(&mut con).expect("GET");
    assert_eq!(value, " 1", "a failed INCR leaves the value alone");
}

#[test]
fn incr_past_i64_limits_is_an_overflow_error_and_leaves_the_value() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    const OVERFLOW: &str = "ERR increment or decrement would overflow";
    let _: () = redis::cmd("SET").arg("max").arg(i64::MAX).query(&mut con).expect("SET max");
    assert_eq!(err(&mut con, &["INCR", "max"]), OVERFLOW);
    assert_eq!(err(&mut con, &["INCRBY", "max", "1"]), OVERFLOW);
    let value: i64 = redis::cmd("GET").arg("max").query(&mut con).expect("GET max");
    assert_eq!(value, i64::MAX);
    let lower: i64 = redis::cmd("DECR").arg("max").query(&mut con).expect("DECR max");
    assert_eq!(lower, i64::MAX - 1);

    let _: () = redis::cmd("SET").arg("min").arg(i64::MIN).query(&mut con).expect("SET min");
    assert_eq!(err(&mut con, &["DECR", "min"]), OVERFLOW);
    assert_eq!(err(&mut con, &["INCRBY", "min", "-1"]), OVERFLOW);
    assert_eq!(err(&mut con, &["DECRBY", "zero", "-9223372036854775808"]), "ERR decrement would overflow");
}

#[test]
fn invalid_floats_are_refused() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    const NOT_FLOAT: &str = "ERR value is not a valid float";
    assert_eq!(err(&mut con, &["INCRBYFLOAT", "f", "abc"]), NOT_FLOAT);
    assert_eq!(err(&mut con, &["INCRBYFLOAT", "f", "1.5x"]), NOT_FLOAT);
    let _: () = redis::cmd("SET").arg("word").arg("hello").query(&mut con).expect("SET");
    assert_eq!(err(&mut con, &["INCRBYFLOAT", "word", "1"]), NOT_FLOAT);
    let _: () = redis::cmd("SET").arg("f").arg("1e308").query(&mut con).expect("SET");
    assert_eq!(err(&mut con, &["INCRBYFLOAT", "f", "1e308"]), "ERR increment would produce NaN or Infinity");
    let value: String = redis::cmd("GET").arg("f").query(&mut con).expect("GET");
    assert_eq!(value, "1e308");
}

#[test]
fn bad_option_combinations_are_syntax_errors() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    const SYNTAX: &str = "ERR syntax error";
    assert_eq!(err(&mut con, &["SET", "k", "v", "NX", "XX"]), SYNTAX);
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX"]), SYNTAX);
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX", "10", "PX", "100"]), SYNTAX);
    assert_eq!(err(&mut con, &["SET", "k", "v", "KEEPTTL", "EX", "10"]), SYNTAX);
    assert_eq!(err(&mut con, &["SET", "k", "v", "BOGUS"]), SYNTAX);
    assert_eq!(err(&mut con, &["GETEX", "k", "PERSIST", "EX", "10"]), SYNTAX);
    assert_eq!(err(&mut con, &["SCAN", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(err(&mut con, &["COPY", "a", "b", "BOGUS"]), SYNTAX);
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0, "a refused SET writes nothing");
}

#[test]
fn non_positive_or_overflowing_expire_times_are_invalid() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX", "0"]), "ERR invalid expire time in 'set' command");
    assert_eq!(err(&mut con, &["SET", "k", "v", "PX", "-5"]), "ERR invalid expire time in 'set' command");
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX", "9223372036854775807"]), "ERR invalid expire time in 'set' command");
    assert_eq!(err(&mut con, &["SETEX", "k", "0", "v"]), "ERR invalid expire time in 'setex' command");
    assert_eq!(err(&mut con, &["PSETEX", "k", "-1", "v"]), "ERR invalid expire time in 'psetex' command");
    assert_eq!(err(&mut con, &["EXPIRE", "k", "9223372036854775807"]), "ERR invalid expire time in 'expire' command");
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).expect("SET");
    assert_eq!(err(&mut con, &["GETEX", "k", "EX", "0"]), "ERR invalid expire time in 'getex' command");
    let ttl: i64 = redis::cmd("TTL").arg("k").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1, "a refused GETEX leaves the TTL alone");
}

#[test]
fn select_accepts_only_database_zero() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    assert_eq!(err(&mut con, &["SELECT", "1"]), "ERR DB index is out of range");
    assert_eq!(err(&mut con, &["SELECT", "-1"]), "ERR DB index is out of range");
    assert_eq!(err(&mut con, &["COPY", "a", "b", "DB", "3"]), "ERR DB index is out of range");
    let ok: Value = redis::cmd("SELECT").arg(0).query(&mut con).expect("SELECT 0");
    assert_eq!(ok, Value::Okay);
}

#[test]
fn auth_without_a_configured_password_explains_itself() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    assert_eq!(
        err(&mut con, &["AUTH", "secret"]),
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    assert_eq!(err(&mut con, &["AUTH", "default", "secret"]), "WRONGPASS invalid username-password pair or user is disabled.");
}

#[test]
fn errors_inside_a_pipeline_keep_their_position_and_the_connection_open() {
    let server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("SET").arg("n").arg(1);
    pipe.cmd("INCR").arg("n");
    pipe.cmd("GET");
    pipe.cmd("INCRBY").arg("n").arg("x");
    pipe.cmd("NOSUCH");
    pipe.cmd("INCR").arg("n");
    pipe.cmd("SELECT").arg(9);
    pipe.cmd("GET").arg("n");
    let replies: Vec<Value> = pipe.query(&mut con).expect("pipeline");
    assert_eq!(replies.len(), 8);
    assert_eq!(replies[0], Value::Okay);
    assert_eq!(replies[1], Value::Int(2));
    assert!(
        matches!(&replies[2], Value::ServerError(e) if e.details() == Some("wrong number of arguments for 'get' command")),
        "{:?}",
        replies[2]
    );
    assert!(
        matches!(&replies[3], Value::ServerError(e) if e.details() == Some("value is not an integer or out of range")),
        "{:?}",
        replies[3]
    );
    assert!(matches!(&replies[4], Value::ServerError(e) if e.code() == "ERR"), "{:?}", replies[4]);
    assert_eq!(replies[5], Value::Int(3));
    assert!(matches!(&replies[6], Value::ServerError(e) if e.details() == Some("DB index is out of range")), "{:?}", replies[6]);
    assert_eq!(replies[7], Value::BulkString(b"3".to_vec()));
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING after errors");
    assert_eq!(pong, "PONG");
}
