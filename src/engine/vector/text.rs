//! TEXT fields: how a value is cut into terms, as RediSearch cuts it by default.
//!
//! Owns the default separators and the default English stop words. A term is a run of
//! bytes between separators, lower-cased (ASCII only; RediSearch folds Unicode case
//! too); stop words are dropped, at indexing and in queries alike. No stemming:
//! Meridian indexes the words as written (RediSearch's `NOSTEM`), see docs/vector.md.
//! Pure functions, no state.

use bytes::Bytes;

/// RediSearch's default stop words.
pub const STOP_WORDS: [&str; 33] = [
    "a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "it", "no", "not", "of", "on", "or",
    "such", "that", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Most terms one value is cut into (bounds the work of one document).
pub const TERMS_MAX: usize = 100_000;

/// Whether `b` separates terms (RediSearch's default separators, and whitespace).
pub fn is_separator(b: u8) -> bool {
    b.is_ascii_whitespace() || b",./(){}[]:;\\~!@#$%^&*-=+|'`\"<>?".contains(&b)
}

pub fn is_stop_word(term: &[u8]) -> bool {
    STOP_WORDS.iter().any(|w| w.as_bytes() == term)
}

/// The distinct terms of a value, lower-cased, stop words left out, in first-seen order.
pub fn terms(value: &[u8]) -> Vec<Bytes> {
    let mut out: Vec<Bytes> = Vec::new();
    for word in value.split(|&b| is_separator(b)).filter(|w| !w.is_empty()) {
        let term = word.to_ascii_lowercase();
        if is_stop_word(&term) || out.iter().any(|t| t[..] == term[..]) {
            continue;
        }
        if out.len() >= TERMS_MAX {
            break;
        }
        out.push(Bytes::from(term));
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
}
