//! Fuzz the segment decoder (what recovery reads from object storage): any bytes must
//! decode to an error or to deltas, never panic; whatever decodes must re-encode to a
//! segment that decodes to the same deltas; and a valid segment with any single byte
//! flipped must be rejected (every byte is covered by a CRC).
#![no_main]

use libfuzzer_sys::fuzz_target;
use meridian::persistence::segment::{self, Kind};

fuzz_target!(|data: &[u8]| {
    // 1. Arbitrary bytes, and arbitrary bytes behind a plausible header prefix.
    if let Ok((header, deltas)) = segment::decode(data) {
        let again = segment::encode(header.node_id, header.kind, header.sequence, header.part, &deltas);
        let (_, decoded) = segment::decode(&again).expect("a re-encoded segment decodes");
        assert_eq!(decoded, deltas);
    }
    // 2. Use the input as a body: decode its entries through a real, CRC-correct segment.
    let mut framed = segment::encode(1, Kind::Segment, 7, 0, &[]).to_vec();
    let body_len = data.len() as u64;
    framed[40..44].copy_from_slice(&(data.len().min(64) as u32).to_le_bytes());
    framed[44..52].copy_from_slice(&body_len.to_le_bytes());
    framed[56..60].copy_from_slice(&crc32fast::hash(data).to_le_bytes());
    let header_crc = crc32fast::hash(&framed[..60]);
    framed[60..64].copy_from_slice(&header_crc.to_le_bytes());
    framed.extend_from_slice(data);
    if let Ok((_, deltas)) = segment::decode(&framed) {
        let again = segment::encode(1, Kind::Segment, 7, 0, &deltas);
        assert_eq!(segment::decode(&again).expect("re-encoded").1, deltas);
        // 3. Flip one byte (position chosen by the input): must be detected.
        if !again.is_empty() {
            let position = (data.first().copied().unwrap_or(0) as usize * 7919) % again.len();
            let mut corrupt = again.to_vec();
            corrupt[position] ^= 0x5a;
            assert!(segment::decode(&corrupt).is_err(), "flipped byte {position} went unnoticed");
        }
    }
});
