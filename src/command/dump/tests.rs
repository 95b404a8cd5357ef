//! The codec against payloads that redis-server 7.0.15 wrote (DUMP, copied as hex), and
//! round trips of what this codec writes.

use super::*;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

fn b(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

fn hash(pairs: &[(&str, &str)]) -> DumpedValue {
    DumpedValue::Hash(pairs.iter().map(|(f, v)| (b(f), b(v))).collect())
}

/// `SET s hello`, `SET i 12345`, `SET big -9223372036854775808`, `HSET h a 1 b hello`,
/// `SADD st 1 2 3`, `SADD sm a b`, `ZADD z 1 a 2.5 b`.
const REDIS_STRING: &str = "000568656c6c6f0a006372df766534200a";
const REDIS_INT: &str = "00c139300a009d94ea2793fc08b9";
const REDIS_BIG_INT: &str = "00142d393232333337323033363835343737353830380a00ede2b956eb709e81";
const REDIS_HASH: &str = "101616000000040081610201018162028568656c6c6f06ff0a00e8c5fe99ee07955d";
const REDIS_INTSET: &str = "0b0e02000000030000000100020003000a00a5025ce26d6e4d1b";
const REDIS_SET: &str = "0202016201610a0075d99d835ef85f65";
const REDIS_ZSET: &str = "1114140000000400816102010181620283322e3504ff0a00d44c6ea4f644d9d7";
/// The hash of Redis's "Hash ziplist of various encodings" test (its first seven
/// fields): a listpack that Redis LZF-compressed.
const REDIS_COMPRESSED_HASH: &str = "10c3407540af14af0000000e008a5a49505f494e545f38420b7f018bc00d073136420cf1ff7f03e00010093332420cf3ffffff7f05e00012193634420c9339323233333732303336383534373735383038148fc04509494d4d5f4d494e100001e00512034158100c806b045354525f30206b019f78e015000120ff0a008d5726427d260a2e";
/// `HSET hbig f <100 y>`: a plain hash whose value Redis LZF-compressed.
const REDIS_PLAIN_HASH: &str = "04010166c3094064017979e057000179790a0082f8268ffe40bcdb";

#[test]
fn payloads_from_redis_decode() {
    assert_eq!(decode_payload(&hex(REDIS_STRING)), Ok(DumpedValue::String(b("hello"))));
    assert_eq!(decode_payload(&hex(REDIS_INT)), Ok(DumpedValue::String(b("12345"))));
    assert_eq!(decode_payload(&hex(REDIS_BIG_INT)), Ok(DumpedValue::String(b("-9223372036854775808"))));
    assert_eq!(decode_payload(&hex(REDIS_HASH)), Ok(hash(&[("a", "1"), ("b", "hello")])));
    assert_eq!(decode_payload(&hex(REDIS_INTSET)), Ok(DumpedValue::Set(vec![b("1"), b("2"), b("3")])));
    assert_eq!(decode_payload(&hex(REDIS_SET)), Ok(DumpedValue::Set(vec![b("b"), b("a")])));
    assert_eq!(decode_payload(&hex(REDIS_ZSET)), Ok(DumpedValue::Zset(vec![(b("a"), 1.0), (b("b"), 2.5)])));
    let x31 = "x".repeat(31);
    assert_eq!(
        decode_payload(&hex(REDIS_COMPRESSED_HASH)),
        Ok(hash(&[
            ("ZIP_INT_8B", "127"),
            ("ZIP_INT_16B", "32767"),
            ("ZIP_INT_32B", "2147483647"),
            ("ZIP_INT_64B", "9223372036854775808"),
            ("ZIP_INT_IMM_MIN", "0"),
            ("ZIP_INT_IMM_MAX", "12"),
            ("ZIP_STR_06B", &x31),
        ]))
    );
    assert_eq!(decode_payload(&hex(REDIS_PLAIN_HASH)), Ok(hash(&[("f", &"y".repeat(100))])));
}

#[test]
fn small_values_encode_exactly_as_redis_does() {
    let cases = [
        (DumpedValue::String(b("hello")), Layout::Plain, REDIS_STRING),
        (DumpedValue::String(b("12345")), Layout::Plain, REDIS_INT),
        (DumpedValue::String(b("-9223372036854775808")), Layout::Plain, REDIS_BIG_INT),
        (hash(&[("a", "1"), ("b", "hello")]), Layout::Compact, REDIS_HASH),
        (DumpedValue::Set(vec![b("3"), b("1"), b("2")]), Layout::Compact, REDIS_INTSET),
        (DumpedValue::Set(vec![b("b"), b("a")]), Layout::Plain, REDIS_SET),
    ];
    for (value, layout, expected) in cases {
        assert_eq!(encode_payload(&value, layout), hex(expected), "{value:?}");
    }
}

#[test]
fn every_encoding_round_trips() {
    let long = "z".repeat(70_000);
    let values = [
        DumpedValue::String(Bytes::new()),
        DumpedValue::String(b(&long)),
        DumpedValue::String(b("-1")),
        hash(&[("f", "v"), ("n", "-5000"), ("big", &long)]),
        DumpedValue::Set(vec![b("-1"), b("1"), b("99999999999")]),
        DumpedValue::Set(vec![b("a"), b("1")]),
        DumpedValue::Zset(vec![(b("a"), -0.5), (b("b"), f64::INFINITY)]),
        DumpedValue::List(vec![b("x"), b("2")]),
    ];
    // A zset's entries may come back in another order (ZSET_2 is written highest first).
    let in_order = |value: DumpedValue| match value {
        DumpedValue::Zset(mut entries) => {
            entries.sort_by(|a, b| a.1.total_cmp(&b.1));
            DumpedValue::Zset(entries)
        }
        other => other,
    };
    for value in values {
        for layout in [Layout::Compact, Layout::Plain] {
            assert_eq!(decode_payload(&encode_payload(&value, layout)).map(in_order), Ok(value.clone()), "{layout:?}");
        }
    }
}

#[test]
fn a_damaged_footer_is_a_version_or_checksum_error() {
    let good = hex(REDIS_STRING);
    let mut flipped = good.clone();
    flipped[3] ^= 1;
    assert_eq!(decode_payload(&flipped), Err(PayloadError::VersionOrChecksum));
    let mut newer = good.clone();
    newer[good.len() - 10] = 11;
    assert_eq!(decode_payload(&newer), Err(PayloadError::VersionOrChecksum));
    assert_eq!(decode_payload(b"short"), Err(PayloadError::VersionOrChecksum));
    assert_eq!(decode_payload(b""), Err(PayloadError::VersionOrChecksum));
    let mut older = good[..good.len() - 10].to_vec();
    older.extend_from_slice(&9u16.to_le_bytes());
    let crc = CRC64.checksum(&older);
    older.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(decode_payload(&older), Ok(DumpedValue::String(b("hello"))), "an older RDB version is read");
}

/// A payload around `body` with a correct footer.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn corrupt_values_with_a_good_checksum_are_bad_data() {
    let bad = Err(PayloadError::BadFormat);
    assert_eq!(decode_payload(&sealed(&[TYPE_STRING, 20, b'a'])), bad, "a string longer than the payload");
    assert_eq!(decode_payload(&sealed(&[TYPE_SET, 0])), bad, "an empty set");
    assert_eq!(decode_payload(&sealed(&[TYPE_SET, 2, 1, b'a', 1, b'a'])), bad, "a repeated member");
    assert_eq!(decode_payload(&sealed(&[TYPE_HASH, 1, 1, b'f'])), bad, "a field without a value");
    assert_eq!(decode_payload(&sealed(&[TYPE_HASH, 2, 1, b'f', 1, b'v', 1, b'f', 1, b'w'])), bad, "a repeated field");
    assert_eq!(decode_payload(&sealed(&[200])), bad, "an unknown type");
    assert_eq!(decode_payload(&sealed(&[TYPE_SET, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), bad, "a huge count");
    let mut nan = vec![TYPE_ZSET_2, 1, 1, b'm'];
    nan.extend_from_slice(&f64::NAN.to_le_bytes());
    assert_eq!(decode_payload(&sealed(&nan)), bad, "a NaN score");
    assert_eq!(decode_payload(&sealed(&[TYPE_MODULE_2, 0])), Err(PayloadError::UnsupportedType("module value")));
}

#[test]
fn the_value_is_read_from_the_whole_payload_as_redis_reads_it() {
    assert_eq!(decode_payload(&sealed(&[TYPE_STRING, 1, b'a', 0xee])), Ok(DumpedValue::String(b("a"))), "bytes after it are ignored");
    // Redis 7.0 answers GET with "hel\n\0" for this one: the string runs into the footer.
    assert_eq!(decode_payload(&sealed(&[TYPE_STRING, 5, b'h', b'e', b'l'])), Ok(DumpedValue::String(b("hel\n\0"))));
}

/// `XADD s 1-1 a 1 b hello`, `XADD s 1-2 a 2 b x`, `XADD s 2-0 c 3`, `XADD s 3-5 a 7 b
/// y`, `XDEL s 1-2`, `XGROUP CREATE s g1 0`, `XGROUP CREATE s g2 $`, `XREADGROUP GROUP
/// g1 alice COUNT 2 STREAMS s >`, `XGROUP CREATECONSUMER s g1 bob` (Redis 7.0.15).
const REDIS_STREAM: &str = "130110000000000000000100000000000000014050500000001f00030101010201816102816202000102010001000101018568656c6c6f0605010301000101010201817802050100010101dfff0201018163020301060102010201040107018179020501ff030305010101020402026731020081ffffffffffffffff02000000000000000100000000000000013660a651a201000001000000000000000200000000000000003660a651a2010000010205616c6963653660a651a201000002000000000000000100000000000000010000000000000002000000000000000003626f623960a651a201000000026732030581ffffffffffffffff00000a00d39c8ddd0a36b4e0";
/// What Redis 5 DUMPed (RDB 9, `STREAM_LISTPACKS`, its node LZF-compressed), from
/// Redis's own "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence" test:
/// entries 1-0 to 6-0 with `data`, 3-0 deleted, groups g1 and g2, g1's consumer c11
/// read four, then `XTRIM x MAXLEN = 2`.
const REDIS_5_STREAM: &str = "0f011000000000000000010000000000000000c3404a405716570000002300020104010101846461746105000103010020010381610204200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a00ff02060002026731050004000000000000000100000000000000003ef783437a01000001000000000000000200000000000000003ef783437a01000001000000000000000400000000000000003ef783437a01000001000000000000000500000000000000003ef783437a0100000101036331313ef783437a01000004000000000000000100000000000000000000000000000002000000000000000000000000000000040000000000000000000000000000000500000000000000000267320000000009003d52ef6867521dfa";

fn id(ms: u64, seq: u64) -> crate::command::stream::id::StreamId {
    crate::command::stream::id::StreamId::new(ms, seq)
}

fn entry(ms: u64, seq: u64, index: u64, pairs: &[(&str, &str)]) -> DumpedEntry {
    DumpedEntry { id: id(ms, seq), node: 0, index, fields: pairs.iter().map(|(f, v)| (b(f), b(v))).collect() }
}

fn stream_of(payload: &[u8]) -> DumpedStream {
    match decode_payload(payload) {
        Ok(DumpedValue::Stream(stream)) => stream,
        other => panic!("not a stream: {other:?}"),
    }
}

#[test]
fn streams_from_redis_decode() {
    let stream = stream_of(&hex(REDIS_STREAM));
    // 1-2 was deleted in place: 2-0 is its node's third entry.
    let entries =
        vec![entry(1, 1, 0, &[("a", "1"), ("b", "hello")]), entry(2, 0, 2, &[("c", "3")]), entry(3, 5, 3, &[("a", "7"), ("b", "y")])];
    assert_eq!((stream.entries, stream.last_id, stream.max_deleted, stream.entries_added), (entries, id(3, 5), id(1, 2), 4));
    let [g1, g2] = &stream.groups[..] else { panic!("two groups: {:?}", stream.groups) };
    assert_eq!((&g1.name[..], g1.last_delivered, g1.entries_read), (&b"g1"[..], id(2, 0), Some(-1)));
    let pending: Vec<_> = g1.pending.iter().map(|p| (p.id, p.deliveries, &p.consumer[..])).collect();
    assert_eq!(pending, vec![(id(1, 1), 1, &b"alice"[..]), (id(2, 0), 1, &b"alice"[..])]);
    assert_eq!(g1.pending[0].delivered_ms, 1_796_666_187_830);
    let consumers: Vec<_> = g1.consumers.iter().map(|(c, _)| &c[..]).collect();
    assert_eq!(consumers, vec![&b"alice"[..], &b"bob"[..]]);
    assert_eq!((&g2.name[..], g2.last_delivered, g2.pending.len(), g2.consumers.len()), (&b"g2"[..], id(3, 5), 0, 0));

    let old = stream_of(&hex(REDIS_5_STREAM));
    let ids: Vec<_> = old.entries.iter().map(|e| (e.id, &e.fields[0].1[..])).collect();
    assert_eq!(ids, vec![(id(5, 0), &b"e"[..]), (id(6, 0), &b"f"[..])]);
    // Before Redis 7.0 a payload has no counters: entries added is the length, and the
    // groups' read counters are left for the reader to estimate.
    assert_eq!((old.last_id, old.max_deleted, old.entries_added), (id(6, 0), id(0, 0), 2));
    assert_eq!(
        old.groups.iter().map(|g| (&g.name[..], g.last_delivered, g.entries_read)).collect::<Vec<_>>(),
        vec![(&b"g1"[..], id(5, 0), None), (&b"g2"[..], id(0, 0), None)]
    );
    assert_eq!(old.groups[0].pending.iter().map(|p| p.id).collect::<Vec<_>>(), vec![id(1, 0), id(2, 0), id(4, 0), id(5, 0)]);
    assert!(old.groups[0].pending.iter().all(|p| &p.consumer[..] == b"c11"));
}

#[test]
fn streams_round_trip_with_their_nodes() {
    let mut stream = stream_of(&hex(REDIS_STREAM));
    stream.entries.push(DumpedEntry { id: id(9, 0), node: 1, index: 0, fields: vec![(b("a"), b("-70000"))] });
    stream.last_id = id(9, 0);
    let again = stream_of(&encode_payload(&DumpedValue::Stream(stream.clone()), Layout::Plain));
    // A deleted entry is not written: the entries after it move up in their node.
    let moved: Vec<_> = again.entries.iter().map(|e| (e.id, e.node, e.index)).collect();
    assert_eq!(moved, vec![(id(1, 1), 0, 0), (id(2, 0), 0, 1), (id(3, 5), 0, 2), (id(9, 0), 1, 0)]);
    for entry in &mut stream.entries {
        entry.index = again.entries.iter().find(|e| e.id == entry.id).expect("kept").index;
    }
    assert_eq!(again, stream);
    let empty = DumpedStream { entries: Vec::new(), last_id: id(5, 5), max_deleted: id(5, 5), entries_added: 1, groups: Vec::new() };
    assert_eq!(stream_of(&encode_payload(&DumpedValue::Stream(empty.clone()), Layout::Plain)), empty);
}

#[test]
fn corrupt_streams_are_bad_data() {
    let good = stream_of(&hex(REDIS_STREAM));
    let body = |stream: &DumpedStream| {
        let payload = encode_payload(&DumpedValue::Stream(stream.clone()), Layout::Plain);
        payload[..payload.len() - 10].to_vec()
    };
    let bad = |body: &[u8]| assert_eq!(decode_payload(&sealed(body)), Err(PayloadError::BadFormat), "{body:02x?}");
    // A pending entry no consumer owns.
    let mut unowned = good.clone();
    unowned.groups[0].consumers.retain(|(c, _)| &c[..] != b"alice");
    bad(&body(&unowned));
    // A consumer's pending id that its group does not have: the payload's last 16
    // bytes are bob's... so give alice's last id another value (g1 is written first,
    // alice before bob, 2-0 her last id).
    let mut foreign = body(&good);
    let at = foreign.windows(16).rposition(|w| w == id(2, 0).to_bytes()).expect("alice's 2-0");
    foreign[at + 15] = 7;
    bad(&foreign);
    // Entries out of order, and a last id below the last entry.
    let mut swapped = good.clone();
    swapped.entries.swap(0, 1);
    bad(&body(&swapped));
    let mut behind = good.clone();
    behind.last_id = id(3, 4);
    bad(&body(&behind));
    // A node whose listpack lp-count is wrong (the first entry's, the 5 after "hello").
    let mut miscounted = body(&good);
    let at = miscounted.windows(7).position(|w| w == b"\x85hello\x06").expect("hello") + 7;
    assert_eq!(miscounted[at], 5);
    miscounted[at] = 4;
    bad(&miscounted);
    // Cut short anywhere: refused, or (read on into the footer's bytes, as Redis reads
    // a payload) another stream; never the whole one, never a panic.
    let whole = body(&good);
    let full = decode_payload(&sealed(&whole));
    assert!(full.is_ok());
    for len in 1..whole.len() {
        assert_ne!(decode_payload(&sealed(&whole[..len])), full, "cut at {len}");
    }
}

mod stream_properties {
    use super::*;
    use proptest::prelude::*;

    /// Field names and values as a stream holds them: short texts, integers (a listpack
    /// codes those as integers), empty strings.
    fn text() -> impl Strategy<Value = Bytes> {
        prop_oneof![Just(Bytes::new()), "[a-c]{1,3}".prop_map(Bytes::from), (-70_000i64..70_000).prop_map(|n| Bytes::from(n.to_string()))]
    }

    /// A stream: ids ascending (steps in ms and seq, seq stepping down too), entries cut
    /// into nodes, fields shared or not with the node's first entry, and a group or two
    /// whose pending entries are owned by their consumers.
    fn stream() -> impl Strategy<Value = DumpedStream> {
        let entries = prop::collection::vec((0u64..3, 0u64..5, any::<bool>(), prop::collection::vec((text(), text()), 0..4)), 0..40);
        let groups = prop::collection::vec((0u8..3, prop::collection::vec((0usize..40, 0u64..3, 1u64..9), 0..6), 0i64..5), 0..3);
        (entries, groups, 0u64..3).prop_map(|(raw, raw_groups, extra)| {
            let (mut ms, mut seq, mut node, mut index) = (1u64, 0u64, 0u64, 0u64);
            let mut entries: Vec<DumpedEntry> = Vec::new();
            for (ms_step, seq_value, new_node, fields) in raw {
                if ms_step == 0 {
                    seq += 1 + seq_value;
                } else {
                    (ms, seq) = (ms + ms_step, seq_value);
                }
                if new_node && !entries.is_empty() {
                    (node, index) = (node + 1, 0);
                }
                entries.push(DumpedEntry { id: id(ms, seq), node, index, fields });
                index += 1;
            }
            let last_id = id(ms + extra, 0).max(entries.last().map_or(id(0, 0), |e| e.id));
            let mut groups: Vec<DumpedGroup> = Vec::new();
            for (name, pending, entries_read) in raw_groups {
                let name = Bytes::from(format!("g{name}"));
                if groups.iter().any(|g| g.name == name) {
                    continue;
                }
                let mut owned: Vec<DumpedPending> = pending
                    .into_iter()
                    .filter_map(|(at, consumer, deliveries)| {
                        let entry = entries.get(at)?;
                        Some(DumpedPending {
                            id: entry.id,
                            delivered_ms: 1_700_000_000_000 + at as u64,
                            deliveries,
                            consumer: Bytes::from(format!("c{consumer}")),
                        })
                    })
                    .collect();
                owned.sort_by_key(|p| p.id);
                owned.dedup_by_key(|p| p.id);
                let mut consumers: Vec<(Bytes, u64)> = owned.iter().map(|p| (p.consumer.clone(), p.delivered_ms + 5)).collect();
                consumers.push((Bytes::from_static(b"idle"), 7));
                consumers.sort();
                consumers.dedup_by(|a, b| a.0 == b.0);
                groups.push(DumpedGroup { name, last_delivered: last_id, entries_read: Some(entries_read - 1), pending: owned, consumers });
            }
            groups.sort_by(|a, b| a.name.cmp(&b.name));
            DumpedStream { entries_added: entries.len() as u64 + extra, entries, last_id, max_deleted: id(0, extra), groups }
        })
    }

    proptest! {
        #[test]
        fn a_stream_decodes_to_what_was_encoded(stream in stream()) {
            let payload = encode_payload(&DumpedValue::Stream(stream.clone()), Layout::Plain);
            prop_assert_eq!(decode_payload(&payload), Ok(DumpedValue::Stream(stream)));
        }

        #[test]
        fn a_damaged_stream_payload_is_refused_or_read_never_a_panic(stream in stream(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let payload = encode_payload(&DumpedValue::Stream(stream), Layout::Plain);
            let mut body = payload[..payload.len() - 10].to_vec();
            let at = at.index(body.len());
            body[at] = byte;
            let _ = decode_payload(&sealed(&body));
        }
    }
}
