//! MONITOR: the clients that watch every command this node runs, and the line each
//! command becomes for them, in Redis's format:
//!
//! ```text
//! +1732730000.123456 [0 127.0.0.1:51234] "set" "key" "value"
//! +1732730000.123501 [0 lua] "get" "key"
//! ```
//!
//! Owns the monitors' mailboxes (bounded, as a subscriber's: a monitor that does not
//! read is disconnected, never buffered without end) and the line's formatting:
//! arguments quoted as Redis's `sdscatrepr`, passwords shown as `(redacted)`.
//!
//! Must never: cost a command anything while no client monitors (one relaxed load), show
//! an administrative command (Redis's `admin` flag: CONFIG, SHUTDOWN, MONITOR, ...) or a
//! password.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::pubsub::{Mailbox, Posted};
use crate::command::table::CommandSpec;

/// Where a monitored command came from: a client's address, or a script.
pub enum Source<'a> {
    Client(&'a str),
    Lua,
}

/// The monitoring clients of this node.
#[derive(Default)]
pub struct Monitors {
    /// How many monitor: read by every command, so no lock is taken while it is 0.
    active: AtomicUsize,
    mailboxes: Mutex<Vec<Mailbox>>,
}

impl Monitors {
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    /// A client starts monitoring (a second MONITOR from it changes nothing).
    pub fn add(&self, mailbox: Mailbox) {
        let Ok(mut mailboxes) = self.mailboxes.lock() else { return };
        if mailboxes.iter().any(|m| m.client().id == mailbox.client().id) {
            return;
        }
        mailboxes.push(mailbox);
        self.active.store(mailboxes.len(), Ordering::Relaxed);
    }

    /// A client stops monitoring (RESET, or it went away).
    pub fn remove(&self, client: u64) {
        let Ok(mut mailboxes) = self.mailboxes.lock() else { return };
        mailboxes.retain(|m| m.client().id != client);
        self.active.store(mailboxes.len(), Ordering::Relaxed);
    }

    /// Show the command `args` (as its client sent them) to every monitor. A monitor
    /// whose mailbox is past `bytes_max` is disconnected, as Redis disconnects a client
    /// past its output buffer limit.
    pub fn feed(&self, spec: Option<&CommandSpec>, args: &[Bytes], source: Source<'_>, bytes_max: usize) {
        if spec.is_some_and(|s| is_admin(s, args)) {
            return;
        }
        let line = line(SystemTime::now(), &source, args);
        let Ok(mut mailboxes) = self.mailboxes.lock() else { return };
        mailboxes.retain(|mailbox| match mailbox.post_raw(&line, bytes_max) {
            Posted::Queued => true,
            Posted::Full => {
                tracing::warn!(client = mailbox.client().id, "a MONITOR client fell behind its output buffer limit: disconnected");
                mailbox.client().request_kill();
                false
            }
        });
        self.active.store(mailboxes.len(), Ordering::Relaxed);
    }
}

/// Whether Redis flags the command `admin` (never shown): by the table's flags, or for
/// a container's subcommand (the table holds containers' flags only) by Redis's list.
fn is_admin(spec: &CommandSpec, args: &[Bytes]) -> bool {
    if spec.flags.contains(&"admin") || spec.name == "config" {
        return true;
    }
    // Of the other containers Meridian has, only these CLIENT subcommands are `admin`.
    let sub = args.get(1).map(|s| s.to_ascii_lowercase()).unwrap_or_default();
    spec.name == "client" && matches!(sub.as_slice(), b"kill" | b"list" | b"pause" | b"unpause" | b"no-evict")
}

/// One monitor line, `\r\n` included.
pub fn line(now: SystemTime, source: &Source<'_>, args: &[Bytes]) -> Vec<u8> {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut out = format!("+{}.{:06} [0 ", since.as_secs(), since.subsec_micros()).into_bytes();
    match source {
        Source::Client(addr) => out.extend_from_slice(addr.as_bytes()),
        Source::Lua => out.extend_from_slice(b"lua"),
    }
    out.push(b']');
    let redacted = redacted_from(args);
    for (at, arg) in args.iter().enumerate() {
        out.push(b' ');
        if redacted.iter().any(|&(from, to)| at >= from && at < to) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote(&mut out, arg);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The argument ranges that hold a password, as Redis redacts them: AUTH's arguments,
/// and HELLO's two after `AUTH`.
fn redacted_from(args: &[Bytes]) -> Vec<(usize, usize)> {
    let Some(name) = args.first() else { return Vec::new() };
    if name.eq_ignore_ascii_case(b"auth") {
        return vec![(1, args.len())];
    }
    if name.eq_ignore_ascii_case(b"hello") {
        return args.iter().position(|a| a.eq_ignore_ascii_case(b"auth")).map(|at| vec![(at + 1, at + 3)]).unwrap_or_default();
    }
    Vec::new()
}

/// `arg` in double quotes, escaped as Redis's `sdscatrepr`.
fn quote(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &byte in arg {
        match byte {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(byte);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            _ if byte.is_ascii_graphic() || byte == b' ' => out.push(byte),
            _ => out.extend_from_slice(format!("\\x{byte:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args(words: &[&[u8]]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
    }

    #[test]
    fn a_line_quotes_as_redis_and_redacts_passwords() {
        let at = UNIX_EPOCH + Duration::from_micros(1_339_518_083_107_412);
        let line = |source: Source<'_>, words: &[&[u8]]| String::from_utf8(super::line(at, &source, &args(words))).expect("ascii");
        assert_eq!(line(Source::Client("127.0.0.1:60866"), &[b"keys", b"*"]), "+1339518083.107412 [0 127.0.0.1:60866] \"keys\" \"*\"\r\n");
        assert_eq!(
            line(Source::Lua, &[b"set", b"a \"b\"\\", b"\n\r\t\x07\x08\x00\xff"]),
            "+1339518083.107412 [0 lua] \"set\" \"a \\\"b\\\"\\\\\" \"\\n\\r\\t\\a\\b\\x00\\xff\"\r\n"
        );
        assert!(line(Source::Lua, &[b"AUTH", b"secret"]).ends_with("\"AUTH\" \"(redacted)\"\r\n"));
        assert!(line(Source::Lua, &[b"auth", b"user", b"secret"]).ends_with("\"auth\" \"(redacted)\" \"(redacted)\"\r\n"));
        assert!(
            line(Source::Lua, &[b"hello", b"3", b"AUTH", b"user", b"secret", b"SETNAME", b"x"])
                .ends_with("\"hello\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"x\"\r\n")
        );
    }
}
