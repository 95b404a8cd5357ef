//! TEXT fields: how a value is cut into terms, stemmed and positioned, as RediSearch
//! does it by default.
//!
//! Owns the default separators, the default English stop words, the stemmers (the
//! Snowball stemmers of the `rust-stemmers` crate, the library RediSearch uses in C) and
//! the compact encoding of a term's positions. A term is a run of bytes between
//! separators, lower-cased (ASCII only; RediSearch folds Unicode case too); stop words
//! are dropped, at indexing and in queries alike, and take no position. A word of at
//! least 4 bytes whose stem differs from it is also indexed as `+stem` at the same
//! position (RediSearch's stem marker), unless the field is NOSTEM; a query term is
//! expanded to itself, `+stem` and the bare stem (`expansions`). Pure functions, no
//! state.

use bytes::Bytes;
use rust_stemmers::{Algorithm, Stemmer};

/// RediSearch's default stop words.
pub const STOP_WORDS: [&str; 33] = [
    "a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "it", "no", "not", "of", "on", "or",
    "such", "that", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Most terms one value is cut into (bounds the work and the positions of one document).
pub const TERMS_MAX: usize = 100_000;
/// Shortest word stemmed at indexing (RediSearch's MIN_STEM_CANDIDATE_LEN); queries
/// stem every term.
const STEM_CANDIDATE_LEN_MIN: usize = 4;
/// What marks a stem among the terms (RediSearch's STEM_PREFIX): `+` is a separator,
/// so no word can start with it.
pub const STEM_MARK: u8 = b'+';

/// A field's or a query's language: which Snowball stemmer applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Language(Algorithm);

impl Default for Language {
    fn default() -> Language {
        Language(Algorithm::English)
    }
}

/// The languages RediSearch names that the Snowball stemmers of `rust-stemmers` cover.
const LANGUAGES: [(&str, Algorithm); 18] = [
    ("arabic", Algorithm::Arabic),
    ("danish", Algorithm::Danish),
    ("dutch", Algorithm::Dutch),
    ("english", Algorithm::English),
    ("finnish", Algorithm::Finnish),
    ("french", Algorithm::French),
    ("german", Algorithm::German),
    ("greek", Algorithm::Greek),
    ("hungarian", Algorithm::Hungarian),
    ("italian", Algorithm::Italian),
    ("norwegian", Algorithm::Norwegian),
    ("portuguese", Algorithm::Portuguese),
    ("romanian", Algorithm::Romanian),
    ("russian", Algorithm::Russian),
    ("spanish", Algorithm::Spanish),
    ("swedish", Algorithm::Swedish),
    ("tamil", Algorithm::Tamil),
    ("turkish", Algorithm::Turkish),
];

/// The languages RediSearch knows that have no stemmer here.
const OTHER_LANGUAGES: [&str; 11] =
    ["armenian", "basque", "catalan", "chinese", "hindi", "indonesian", "irish", "lithuanian", "nepali", "serbian", "yiddish"];

impl Language {
    /// A LANGUAGE argument; RediSearch's languages without a stemmer here (chinese,
    /// armenian, ...) and unknown names are errors that say so.
    pub fn parse(name: &[u8]) -> Result<Language, String> {
        if let Some((_, a)) = LANGUAGES.iter().find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name)) {
            return Ok(Language(*a));
        }
        if OTHER_LANGUAGES.iter().any(|n| n.as_bytes().eq_ignore_ascii_case(name)) {
            return Err(format!("LANGUAGE {} is not supported by Meridian", String::from_utf8_lossy(name).to_lowercase()));
        }
        Err("No such language".into())
    }

    pub fn name(self) -> &'static str {
        LANGUAGES.iter().find(|(_, a)| *a == self.0).map_or("english", |(n, _)| n)
    }

    /// The stem of `word`, `None` when it is the word itself (or not UTF-8).
    pub fn stem(self, word: &[u8]) -> Option<Bytes> {
        let text = std::str::from_utf8(word).ok()?;
        let stem = Stemmer::create(self.0).stem(text).into_owned();
        (stem.as_bytes() != word && !stem.is_empty()).then(|| Bytes::from(stem))
    }
}

/// Whether `b` separates terms (RediSearch's default separators, and whitespace).
pub fn is_separator(b: u8) -> bool {
    b.is_ascii_whitespace() || b",./(){}[]:;\\~!@#$%^&*-=+|'`\"<>?".contains(&b)
}

pub fn is_stop_word(term: &[u8]) -> bool {
    STOP_WORDS.iter().any(|w| w.as_bytes() == term)
}

/// The words of a value, lower-cased, stop words left out, in order (at most
/// TERMS_MAX).
pub fn words(value: &[u8]) -> Vec<Bytes> {
    value
        .split(|&b| is_separator(b))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| !is_stop_word(w))
        .take(TERMS_MAX)
        .map(Bytes::from)
        .collect()
}

/// The distinct terms of a value, in first-seen order (no stems).
pub fn terms(value: &[u8]) -> Vec<Bytes> {
    let mut out: Vec<Bytes> = Vec::new();
    for word in words(value) {
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The terms of one field's value with their positions, sorted by term: each word at
/// `next` (then `next + 1`, ...) and, unless `nostem`, its `+stem` at the same
/// position. `next` is left after the last word: RediSearch numbers positions through
/// a document's TEXT fields in schema order, so a phrase can span two fields.
pub fn positioned(value: &[u8], language: Language, nostem: bool, next: &mut u32) -> Vec<(Bytes, Vec<u32>)> {
    let mut out: std::collections::BTreeMap<Bytes, Vec<u32>> = std::collections::BTreeMap::new();
    for word in words(value) {
        let position = *next;
        *next = next.saturating_add(1);
        if !nostem
            && word.len() >= STEM_CANDIDATE_LEN_MIN
            && let Some(stem) = language.stem(&word)
        {
            out.entry(marked(&stem)).or_default().push(position);
        }
        out.entry(word).or_default().push(position);
    }
    out.into_iter().collect()
}

/// `+stem`: how a stem is kept among the terms.
pub fn marked(stem: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(stem.len() + 1);
    out.push(STEM_MARK);
    out.extend_from_slice(stem);
    Bytes::from(out)
}

/// The terms a query term stands for: itself, `+stem`, and the bare stem when it
/// differs (RediSearch's default expander: so `foxes` also finds `fox`, and `running`
/// finds `run` and `runs`).
pub fn expansions(term: &Bytes, language: Language) -> Vec<Bytes> {
    let mut out = vec![term.clone()];
    match language.stem(term) {
        Some(stem) => {
            out.push(marked(&stem));
            out.push(stem);
        }
        None => out.push(marked(term)),
    }
    out
}

/// Positions (ascending) as deltas in LEB128 varints: most deltas take one byte.
pub fn encode_positions(positions: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(positions.len());
    let mut last = 0u32;
    for &p in positions {
        let mut delta = p.wrapping_sub(last);
        last = p;
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// The positions `encode_positions` wrote (a truncated varint ends the list).
pub fn decode_positions(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let (mut last, mut delta, mut shift) = (0u32, 0u32, 0u32);
    for &b in bytes {
        if shift < 32 {
            delta |= u32::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            last = last.wrapping_add(delta);
            out.push(last);
            delta = 0;
            shift = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_cut_lowered_and_stripped_of_stop_words() {
        let got: Vec<Bytes> = terms(b"The Quick-brown fox, and THE fox's den!");
        let want: Vec<Bytes> = ["quick", "brown", "fox", "s", "den"].iter().map(|t| Bytes::from(*t)).collect();
        assert_eq!(got, want);
        assert!(terms(b"a an the").is_empty());
    }

    #[test]
    fn words_of_four_bytes_or_more_are_indexed_with_their_stem_at_the_same_position() {
        let mut next = 1;
        let got = positioned(b"Running foxes run, the fox runs", Language::default(), false, &mut next);
        let show: Vec<(String, Vec<u32>)> = got.into_iter().map(|(t, p)| (String::from_utf8_lossy(&t).into_owned(), p)).collect();
        let want: Vec<(String, Vec<u32>)> = [
            ("+fox", vec![2]),
            ("+run", vec![1, 5]),
            ("fox", vec![4]),
            ("foxes", vec![2]),
            ("run", vec![3]),
            ("running", vec![1]),
            ("runs", vec![5]),
        ]
        .into_iter()
        .map(|(t, p)| (t.to_string(), p))
        .collect();
        assert_eq!(show, want);
        assert_eq!(next, 6, "the next field goes on from the last position");
        let mut next = 1;
        assert!(
            positioned(b"running foxes", Language::default(), true, &mut next).iter().all(|(t, _)| t[0] != STEM_MARK),
            "NOSTEM keeps no stems"
        );
    }

    #[test]
    fn a_query_term_stands_for_itself_its_marked_stem_and_its_stem() {
        let show = |t: &str| {
            expansions(&Bytes::copy_from_slice(t.as_bytes()), Language::default())
                .iter()
                .map(|t| String::from_utf8_lossy(t).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(show("foxes"), ["foxes", "+fox", "fox"]);
        assert_eq!(show("run"), ["run", "+run"]);
        assert_eq!(Language::parse(b"GERMAN").expect("german").stem(b"katzen").as_deref(), Some(&b"katz"[..]));
        assert!(Language::parse(b"klingon").is_err());
    }

    #[test]
    fn positions_survive_their_encoding() {
        let positions = [1, 2, 3, 200, 70_000, u32::MAX];
        let bytes = encode_positions(&positions);
        assert_eq!(decode_positions(&bytes), positions);
        assert_eq!(encode_positions(&[1, 2, 3]).len(), 3, "small deltas take a byte each");
    }
}
