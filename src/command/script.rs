//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT's subcommands: parsed into
//! [`ScriptCommand`], with Redis 7.0's errors. Running them is `shell::script`'s.

use bytes::Bytes;

use super::errors;
use super::numbers::parse_i64;
use crate::protocol::Frame;

/// One script to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRun {
    /// `Ok(body)` for EVAL, `Err(sha)` for EVALSHA (the SHA1 as sent).
    pub body: Result<Bytes, Bytes>,
    pub keys: Vec<Bytes>,
    pub args: Vec<Bytes>,
    /// EVAL_RO / EVALSHA_RO: a write command in the script is refused.
    pub read_only: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ScriptCommand {
    Run(ScriptRun),
    Load(Bytes),
    Exists(Vec<Bytes>),
    Flush,
    Kill,
}

/// `EVAL[SHA][_RO] script|sha numkeys key... arg...` (`args[0]` is the name).
pub fn parse_run(mut args: Vec<Bytes>, by_sha: bool, read_only: bool) -> Result<ScriptCommand, Frame> {
    debug_assert!(args.len() >= 3, "the table checks EVAL's arity");
    let numkeys = parse_i64(&args[2]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
    if numkeys < 0 {
        return Err(Frame::static_error("ERR Number of keys can't be negative"));
    }
    if numkeys as u64 > (args.len() - 3) as u64 {
        return Err(Frame::static_error("ERR Number of keys can't be greater than number of args"));
    }
    let rest = args.split_off(3);
    let (keys, script_args) = {
        let mut keys = rest;
        let script_args = keys.split_off(numkeys as usize);
        (keys, script_args)
    };
    let first = std::mem::take(&mut args[1]);
    let body = if by_sha { Err(first) } else { Ok(first) };
    Ok(ScriptCommand::Run(ScriptRun { body, keys, args: script_args, read_only }))
}

/// `SCRIPT <subcommand> ...`. `Ok(None)`: SCRIPT HELP.
pub fn parse_script(mut args: Vec<Bytes>) -> Result<Option<ScriptCommand>, Frame> {
    let sub = args[1].to_ascii_lowercase();
    let argc = args.len();
    Ok(Some(match &sub[..] {
        b"load" if argc == 3 => ScriptCommand::Load(args.swap_remove(2)),
        b"load" => return Err(errors::wrong_arity("script|load")),
        b"exists" if argc >= 3 => ScriptCommand::Exists(args.split_off(2)),
        b"exists" => return Err(errors::wrong_arity("script|exists")),
        b"flush" if argc == 2 => ScriptCommand::Flush,
        b"flush" if argc == 3 && (args[2].eq_ignore_ascii_case(b"sync") || args[2].eq_ignore_ascii_case(b"async")) => ScriptCommand::Flush,
        b"flush" if argc == 3 => return Err(Frame::static_error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")),
        b"flush" => return Err(errors::wrong_arity("script|flush")),
        b"kill" if argc == 2 => ScriptCommand::Kill,
        b"kill" => return Err(errors::wrong_arity("script|kill")),
        b"help" if argc == 2 => return Ok(None),
        _ => return Err(errors::unknown_subcommand(&args[1], "SCRIPT")),
    }))
}

/// SCRIPT HELP's lines (Redis 7.0's, less DEBUG, which Meridian does not have).
pub const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Bytes> {
        text.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn keys_and_arguments_split_at_numkeys() {
        let ScriptCommand::Run(run) = parse_run(words("eval body 2 k1 k2 a1"), false, false).expect("parses") else { panic!() };
        assert_eq!(run.body, Ok(Bytes::from_static(b"body")));
        assert_eq!(run.keys, words("k1 k2"));
        assert_eq!(run.args, words("a1"));
        let ScriptCommand::Run(run) = parse_run(words("evalsha abc 0"), true, true).expect("parses") else { panic!() };
        assert_eq!(run.body, Err(Bytes::from_static(b"abc")));
        assert!(run.keys.is_empty() && run.args.is_empty() && run.read_only);
    }

    #[test]
    fn numkeys_errors_are_redis_s() {
        assert_eq!(parse_run(words("eval b x"), false, false), Err(errors::error(errors::NOT_INTEGER)));
        assert_eq!(parse_run(words("eval b -1"), false, false), Err(Frame::static_error("ERR Number of keys can't be negative")));
        assert_eq!(
            parse_run(words("eval b 2 k"), false, false),
            Err(Frame::static_error("ERR Number of keys can't be greater than number of args"))
        );
    }

    #[test]
    fn script_subcommands() {
        assert_eq!(parse_script(words("script load x")), Ok(Some(ScriptCommand::Load(Bytes::from_static(b"x")))));
        assert_eq!(parse_script(words("SCRIPT FLUSH async")), Ok(Some(ScriptCommand::Flush)));
        assert_eq!(parse_script(words("script flush bad")), Err(Frame::static_error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")));
        assert_eq!(parse_script(words("script exists")), Err(errors::wrong_arity("script|exists")));
        assert_eq!(parse_script(words("script help")), Ok(None));
        assert!(parse_script(words("script foo")).is_err());
    }
}
