//! HSET's and SADD's type check in their write's own lookup (`write_elements_checked`).

use bytes::Bytes;

use super::Part;
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::set::SetCommand;
use crate::command::{SetCondition, SetReply, TtlChange};
use crate::crdt::{HlcClock, VersionVector};
use crate::engine::kv::{DeltaSink, KeyState, KvEngine, WriteCtx};
use crate::protocol::Frame;
use crate::routing::ShardScope;

/// Counts the deltas a write ships.
#[derive(Default)]
struct Counted(usize);

impl DeltaSink for Counted {
    fn key_changed(&mut self, _: &[u8], _: &KeyState) {
        self.0 += 1;
    }
    fn key_part_changed(&mut self, _: &[u8], _: &KeyState) {
        self.0 += 1;
    }
    fn key_elements_changed(&mut self, _: &[u8], _: Part, _: &[(&[u8], KeyState)]) {
        self.0 += 1;
    }
    fn flushed(&mut self, _: &VersionVector, _: ShardScope) {}
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// HSET and SADD check the key's type in their write's own lookup while no key has
/// a TTL, and by a read first while one has: both ways a key of another type gets
/// WRONGTYPE and stays as it was, and an expired key of another type is no key.
#[test]
fn hset_and_sadd_refuse_another_type_with_or_without_ttls_and_write_over_an_expired_key() {
    let mut kv = KvEngine::default();
    let mut clock = HlcClock::new();
    let mut shipped = Counted::default();
    let mut picks = || 4u64;
    let hset = |key: &str| HashCommand::Set { key: b(key), pairs: vec![(b("f"), b("v"))], reply: HSetReply::Added };
    let sadd = |key: &str| SetCommand::Add { key: b(key), members: vec![b("m")] };
    let wrong = |reply: &Frame| matches!(reply, Frame::Error(e) if e.starts_with(b"WRONGTYPE"));
    let mut now_ms = 1_000;
    macro_rules! ctx {
        () => {
            WriteCtx { clock: &mut clock, node: 1, now_ms, string_bytes_max: 1 << 20, deltas: &mut shipped }
        };
    }
    let set = |kv: &mut KvEngine, ctx: &mut WriteCtx, key: &str, ttl: TtlChange| {
        kv.set(ctx, b(key), b("text"), SetCondition::Always, ttl, SetReply::Ok, "set");
    };
    set(&mut kv, &mut ctx!(), "s", TtlChange::Clear);
    for with_ttls in [false, true] {
        if with_ttls {
            set(&mut kv, &mut ctx!(), "soon", TtlChange::AfterMs(10));
        }
        assert_eq!(kv.keys.expiring() > 0, with_ttls);
        let before = shipped.0;
        assert!(wrong(&kv.hash_command(&mut ctx!(), hset("s"), &mut picks)), "HSET, TTLs: {with_ttls}");
        assert!(wrong(&kv.set_command(&mut ctx!(), sadd("s"), &mut picks)), "SADD, TTLs: {with_ttls}");
        assert_eq!(shipped.0, before, "a refused write ships nothing");
        assert_eq!(kv.get(b"s", now_ms), Frame::Bulk(b("text")));
    }
    // "soon" expires; HSET and SADD then create their keys there.
    now_ms += 100;
    assert_eq!(kv.hash_command(&mut ctx!(), hset("soon"), &mut picks), Frame::Integer(1));
    set(&mut kv, &mut ctx!(), "later", TtlChange::AfterMs(10));
    now_ms += 100;
    assert_eq!(kv.set_command(&mut ctx!(), sadd("later"), &mut picks), Frame::Integer(1));
    // A key of the same type takes the write; one of the other collection type not.
    assert_eq!(kv.hash_command(&mut ctx!(), hset("h"), &mut picks), Frame::Integer(1));
    assert_eq!(kv.hash_command(&mut ctx!(), hset("h"), &mut picks), Frame::Integer(0));
    assert!(wrong(&kv.set_command(&mut ctx!(), sadd("h"), &mut picks)));
    assert!(wrong(&kv.hash_command(&mut ctx!(), hset("later"), &mut picks)));
}
