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
    assert_eq!(decode_payload(&sealed(&[TYPE_STREAM_LISTPACKS_2, 0])), Err(PayloadError::UnsupportedType("stream")));
}

#[test]
fn the_value_is_read_from_the_whole_payload_as_redis_reads_it() {
    assert_eq!(decode_payload(&sealed(&[TYPE_STRING, 1, b'a', 0xee])), Ok(DumpedValue::String(b("a"))), "bytes after it are ignored");
    // Redis 7.0 answers GET with "hel\n\0" for this one: the string runs into the footer.
    assert_eq!(decode_payload(&sealed(&[TYPE_STRING, 5, b'h', b'e', b'l'])), Ok(DumpedValue::String(b("hel\n\0"))));
}
