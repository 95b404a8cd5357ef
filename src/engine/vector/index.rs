//! One index on one shard: the documents it holds (tags, numbers, vector slots) and
//! the searches over them.
//!
//! Owns the doc table and the vector stores. Every document is derived from one hash
//! key's current fields (`reindex`); nothing else ever adds or removes one, so the index
//! is a function of the shard's data. Never writes data and never reads a clock: the
//! caller hands in what is live.

mod bitmap;
mod near;
mod search;
mod terms;
mod text;

use bitmap::{find_within, has, ids};

use bytes::Bytes;
use hashbrown::HashMap;

use super::distance::{Metric, normalize};
use super::hnsw::{Near, VectorStore};
use super::query::{Filter, SearchQuery};
use super::schema::{Algorithm, ElementType, FieldKind, IndexDef};
use super::scorer::{DocStats, Scorer};
use super::text::Language;
pub use terms::Term;

/// A filtered HNSW search turns into an exact scan when at most this share of the
/// documents passes the filter: walking the graph past many rejected nodes costs more
/// than scanning the few accepted ones, and the scan is exact.
const EXACT_SCAN_SHARE: f64 = 0.2;
/// ...or when at most this many pass, whatever their share.
const EXACT_SCAN_DOCS_MAX: usize = 2_000;

struct Doc {
    key: Bytes,
    /// Per vector field: the slot and a hash of the blob it came from (an update with the
    /// same blob keeps its slot).
    slots: Vec<Option<(u32, u64)>>,
    /// Per tag field: the tags (lower-cased unless CASESENSITIVE); per TEXT field: its
    /// distinct terms and `+stem`s, sorted.
    tags: Vec<Vec<Bytes>>,
    /// Per TEXT field, beside each term: its positions (`text::encode_positions`) and
    /// what it adds to the term's frequency. Empty for a TAG field.
    text: Vec<Vec<(Vec<u8>, u32)>>,
    /// The highest term frequency of the document (RediSearch divides scores by it).
    max_freq: u32,
    /// The document's length: its words, each counting its field's weight (BM25's and
    /// TFIDF.DOCNORM's).
    len: u32,
    /// The document's score (SCORE_FIELD's value, else the index's SCORE).
    score: f64,
    /// Per numeric field.
    numbers: Vec<Option<f64>>,
}

/// What a document's fields say, before it is stored.
struct Parsed {
    vectors: Vec<Option<(Vec<f32>, u64)>>,
    tags: Vec<Vec<Bytes>>,
    text: Vec<Vec<(Vec<u8>, u32)>>,
    max_freq: u32,
    len: u32,
    score: f64,
    numbers: Vec<Option<f64>>,
}

/// Reads one field of a hash (`None`: no such field).
pub type FieldReader<'a> = &'a dyn Fn(&[u8]) -> Option<Bytes>;
/// Reads every field of a live hash key for a reply (`None`: the key is gone).
pub type ContentReader<'a> = &'a mut dyn FnMut(&Bytes) -> Option<Vec<(Bytes, Bytes)>>;

/// Which indexed documents a search may return.
#[derive(Clone, Copy)]
pub enum Live<'a> {
    /// Every one: no key of the shard carries a TTL, and every indexed document's key
    /// is in the keyspace (the indexes follow every change before a search runs). A
    /// KNN walk then reads nothing per node to decide it (a document lookup per kept
    /// node was ~6 % of a query's server time).
    All,
    /// Those whose key this says is live (not past its TTL, which active expiry may
    /// not have acted on yet).
    Checked(&'a dyn Fn(&Bytes) -> bool),
}

impl Live<'_> {
    pub fn key(&self, key: &Bytes) -> bool {
        match self {
            Live::All => true,
            Live::Checked(live) => live(key),
        }
    }
}

/// One result on one shard, before the node merges shards.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub key: Bytes,
    /// The distance (KNN, or VECTOR_RANGE's).
    pub score: Option<f32>,
    /// What the hit matched through, for its relevance score (`terms::score`); empty
    /// when neither WITHSCORES nor the order needs it.
    pub terms: Vec<Term>,
    /// The document's figures its score needs besides its terms (`scorer::score`).
    pub stats: DocStats,
    pub sort: Option<SortValue>,
    /// `None` when the content was not asked for or not needed for this page.
    pub fields: Option<Vec<(Bytes, Bytes)>>,
}

/// One shard's answer to a search: its matches, and what the node needs to score them
/// (the shard's document count and their total length, and how many of its documents
/// carry each term).
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub total: usize,
    pub hits: Vec<Hit>,
    pub docs: usize,
    pub total_len: u64,
    pub counts: Vec<(Term, usize)>,
}

/// A SORTBY value; missing values sort last either way.
#[derive(Clone, Debug, PartialEq)]
pub enum SortValue {
    Number(f64),
    Text(Bytes),
    Missing,
}

/// A filter with its fields resolved to positions in the doc.
enum Compiled {
    All,
    /// A filter on a field the schema does not have: matches nothing (as RediSearch).
    Nothing,
    Tag(usize, Vec<Bytes>),
    /// A full-text term: any of these terms (its expansions) in any of these TEXT
    /// fields (tag positions). `true`: a prefix's or fuzzy term's expansions, of which a
    /// document counts only the first it has (RediSearch's quick-exit union), in term
    /// order.
    Text(Vec<usize>, Vec<Bytes>, bool),
    /// An exact phrase: these terms, each in one of these fields, at consecutive
    /// positions.
    Phrase(Vec<usize>, Vec<Bytes>),
    Range(usize, f64, bool, f64, bool),
    /// VECTOR_RANGE: the docs within the radius, with their distances.
    Within(HashMap<u32, f32, foldhash::fast::FixedState>),
    Not(Box<Compiled>),
    /// Every doc passes; those passing the inner filter score what it adds.
    Optional(Box<Compiled>),
    /// An intersection, and the SLOP/INORDER its matched terms must satisfy.
    And(Vec<Compiled>, Option<Proximity>),
    Or(Vec<Compiled>),
}

/// SLOP and INORDER: how close, and in which order, an intersection's terms must be.
#[derive(Clone, Copy, Debug)]
struct Proximity {
    slop: u32,
    in_order: bool,
}

/// How a query's filter is compiled: VERBATIM, the stemmer, SLOP/INORDER.
#[derive(Clone, Copy)]
struct Mode {
    verbatim: bool,
    language: Language,
    near: Option<Proximity>,
}

pub struct Index {
    pub def: IndexDef,
    /// The replicated definition this index was built from (its version).
    pub raw: Bytes,
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    by_key: HashMap<Bytes, u32, foldhash::fast::FixedState>,
    /// One store per vector field, in schema order, and the doc of every slot.
    stores: Vec<(VectorStore, Vec<u32>)>,
    /// Position of each field in its kind's per-doc list.
    positions: Vec<usize>,
    /// Per tag field: the docs carrying each tag (filters read these, not the docs:
    /// walking every doc's heap-allocated tags was a cache miss per doc per query).
    postings: Vec<HashMap<Bytes, hashbrown::HashSet<u32>, foldhash::fast::FixedState>>,
    /// Per numeric field: the value of every doc id (NaN: none), a column to scan.
    columns: Vec<Vec<f64>>,
    /// Whether each tag position is a TEXT field's.
    is_text: Vec<bool>,
    /// Per full-text term (and `+stem`): how many documents have it in any TEXT field
    /// (RediSearch keeps one inverted index per term across fields; its IDF uses this).
    text_docs: HashMap<Bytes, usize, foldhash::fast::FixedState>,
    pub indexing_failures: u64,
    live_docs: usize,
    /// The sum of the live documents' lengths (BM25's average document length).
    total_len: u64,
    /// The stemmer of the TEXT fields (FT.CREATE's LANGUAGE, else English) for a
    /// document without a LANGUAGE_FIELD of its own.
    language: Language,
}

impl Index {
    pub fn new(def: IndexDef, raw: Bytes) -> Index {
        let mut positions = Vec::new();
        let (mut vectors, mut tags, mut numbers) = (0, 0, 0);
        let mut stores = Vec::new();
        let mut is_text = Vec::new();
        for field in &def.fields {
            match field.kind {
                FieldKind::Text { .. } => is_text.push(true),
                FieldKind::Tag { .. } => is_text.push(false),
                _ => {}
            }
            let counter = match &field.kind {
                FieldKind::Vector(p) => {
                    stores.push((
                        VectorStore::new(p.dim, p.metric, p.element, p.algorithm == Algorithm::Hnsw, p.m, p.ef_construction, p.initial_cap),
                        Vec::new(),
                    ));
                    &mut vectors
                }
                // A TEXT field's terms are kept like a TAG field's tags.
                FieldKind::Tag { .. } | FieldKind::Text { .. } => &mut tags,
                FieldKind::Numeric => &mut numbers,
            };
            positions.push(*counter);
            *counter += 1;
        }
        Index {
            postings: (0..tags).map(|_| HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0))).collect(),
            columns: vec![Vec::new(); numbers],
            is_text,
            text_docs: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0)),
            raw,
            docs: Vec::new(),
            free: Vec::new(),
            by_key: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0)),
            stores,
            positions,
            indexing_failures: 0,
            live_docs: 0,
            total_len: 0,
            language: def.language,
            def,
        }
    }

    pub fn num_docs(&self) -> usize {
        self.live_docs
    }

    pub fn memory_bytes(&self) -> usize {
        self.stores.iter().map(|(s, owners)| s.memory_bytes() + owners.capacity() * 4).sum::<usize>()
            + self.docs.capacity() * std::mem::size_of::<Option<Doc>>()
    }

    pub fn needs_compaction(&self) -> bool {
        self.stores.iter().any(|(s, _)| s.needs_compaction())
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.by_key.keys()
    }

    /// Every document as text (tags, numbers, stored vector values), by key: what two
    /// indexes over the same data must agree on (`audit`). Slots and doc ids are left
    /// out: they depend on the order of the writes, the documents do not.
    pub fn describe_documents(&self) -> std::collections::BTreeMap<Bytes, String> {
        let mut out = std::collections::BTreeMap::new();
        for (key, &id) in &self.by_key {
            let Some(doc) = self.docs[id as usize].as_ref() else {
                out.insert(key.clone(), "by_key names a free doc id".into());
                continue;
            };
            let vectors: Vec<Option<Vec<u32>>> = doc
                .slots
                .iter()
                .enumerate()
                .map(|(field, slot)| {
                    slot.map(|(s, _)| {
                        let store = &self.stores[field].0;
                        let deleted = store.is_deleted(s) as u32;
                        store.vector_f32(s).iter().map(|x| x.to_bits()).chain([deleted]).collect()
                    })
                })
                .collect();
            out.insert(
                key.clone(),
                format!(
                    "key {:?} tags {:?} text {:?} max_freq {} len {} score {} numbers {:?} vectors {vectors:?}",
                    doc.key, doc.tags, doc.text, doc.max_freq, doc.len, doc.score, doc.numbers
                ),
            );
        }
        out
    }

    /// The postings (per tag or TEXT field, per term: the keys carrying it), the
    /// per-term document counts and the total length, as text: what the documents
    /// imply, which an index maintained write by write must still hold (`audit`).
    pub fn describe_postings(&self) -> String {
        let mut postings = std::collections::BTreeMap::new();
        for (field, terms) in self.postings.iter().enumerate() {
            for (term, ids) in terms {
                let mut keys: Vec<Option<&Bytes>> =
                    ids.iter().map(|&id| self.docs.get(id as usize).and_then(Option::as_ref).map(|d| &d.key)).collect();
                keys.sort_unstable();
                postings.insert((field, term.clone()), keys);
            }
        }
        let counts: std::collections::BTreeMap<&Bytes, &usize> = self.text_docs.iter().collect();
        format!("postings {postings:?} term documents {counts:?} total length {}", self.total_len)
    }

    /// Bring the document of `key` in line with its hash fields now (`None`: the key
    /// is gone or is not a hash).
    pub fn reindex(&mut self, key: &Bytes, key_hash: u64, fields: Option<FieldReader>) {
        let parsed = match fields {
            None => None,
            Some(get) => match self.parse(get) {
                Ok(parsed) => Some(parsed),
                Err(()) => {
                    self.indexing_failures += 1;
                    None
                }
            },
        };
        let Some(parsed) = parsed else {
            self.remove(key);
            return;
        };
        let id = match self.by_key.get(key) {
            Some(&id) => id,
            None => {
                let doc = Doc {
                    key: key.clone(),
                    slots: vec![None; self.stores.len()],
                    tags: Vec::new(),
                    text: Vec::new(),
                    max_freq: 0,
                    len: 0,
                    score: 1.0,
                    numbers: Vec::new(),
                };
                let id = match self.free.pop() {
                    Some(id) => {
                        self.docs[id as usize] = Some(doc);
                        id
                    }
                    None => {
                        self.docs.push(Some(doc));
                        (self.docs.len() - 1) as u32
                    }
                };
                self.by_key.insert(key.clone(), id);
                self.live_docs += 1;
                id
            }
        };
        let Some(doc) = self.docs[id as usize].as_mut() else { return };
        let keep_old_terms = crate::bugs::active(crate::bugs::Bug::TextUpdateKeepsOldTerms);
        unpost(&mut self.postings, &mut self.columns, &mut self.text_docs, &self.is_text, id, doc, keep_old_terms);
        doc.tags = parsed.tags;
        doc.text = parsed.text;
        doc.max_freq = parsed.max_freq;
        self.total_len = self.total_len - u64::from(doc.len) + u64::from(parsed.len);
        doc.len = parsed.len;
        doc.score = parsed.score;
        doc.numbers = parsed.numbers;
        for (field, tags) in doc.tags.iter().enumerate() {
            for tag in tags {
                self.postings[field].entry(tag.clone()).or_default().insert(id);
            }
        }
        for term in text::distinct_terms(&doc.tags, &self.is_text) {
            *self.text_docs.entry(term).or_default() += 1;
        }
        for (field, value) in doc.numbers.iter().enumerate() {
            let column = &mut self.columns[field];
            if column.len() <= id as usize {
                column.resize(id as usize + 1, f64::NAN);
            }
            column[id as usize] = value.unwrap_or(f64::NAN);
        }
        for (field, vector) in parsed.vectors.into_iter().enumerate() {
            let (store, owners) = &mut self.stores[field];
            let old = doc.slots[field];
            if old.map(|(_, h)| h) == vector.as_ref().map(|(_, h)| *h) {
                continue;
            }
            if let Some((slot, _)) = old {
                store.delete(slot);
            }
            doc.slots[field] = vector.map(|(v, h)| {
                let slot = store.insert(&v, key_hash);
                debug_assert_eq!(owners.len(), slot as usize);
                owners.push(id);
                (slot, h)
            });
        }
    }

    fn remove(&mut self, key: &Bytes) {
        let Some(id) = self.by_key.remove(key) else { return };
        let Some(doc) = self.docs[id as usize].take() else { return };
        unpost(&mut self.postings, &mut self.columns, &mut self.text_docs, &self.is_text, id, &doc, false);
        self.total_len -= u64::from(doc.len);
        for (field, slot) in doc.slots.iter().enumerate() {
            if let Some((slot, _)) = slot {
                self.stores[field].0.delete(*slot);
            }
        }
        self.free.push(id);
        self.live_docs -= 1;
    }

    /// A document from its hash fields; `Err` for a value the schema can't take (a blob
    /// of the wrong size, a number that does not parse): RediSearch leaves such a
    /// document out and counts a failure.
    fn parse(&self, get: FieldReader) -> Result<Parsed, ()> {
        let mut parsed = Parsed {
            vectors: Vec::new(),
            tags: Vec::new(),
            text: Vec::new(),
            max_freq: 0,
            len: 0,
            score: self.def.score,
            numbers: Vec::new(),
        };
        // LANGUAGE_FIELD: a language RediSearch does not know leaves the index's (as
        // RediSearch); one it knows that has no stemmer here fails the document rather
        // than stemming it wrongly.
        let language = match self.def.language_field.as_ref().and_then(|f| get(f)) {
            None => self.language,
            Some(name) => match Language::parse(&name) {
                Ok(language) => language,
                Err(e) if e == "No such language" => self.language,
                Err(_) => return Err(()),
            },
        };
        // SCORE_FIELD: a value that is not a number leaves the index's SCORE (as
        // RediSearch).
        if let Some(value) = self.def.score_field.as_ref().and_then(|f| get(f)) {
            parsed.score = std::str::from_utf8(&value)
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
                .filter(|v| !v.is_nan())
                .unwrap_or(self.def.score);
        }
        // RediSearch keeps a document's score as a C `float`: 0.9 scores 0.8999999761...
        // (seen in tests/vector_differential/text_scorers.rs).
        parsed.score = f64::from(parsed.score as f32);
        // Positions run on through the TEXT fields in schema order (as RediSearch's).
        let mut next_position = 1u32;
        let mut freqs: std::collections::HashMap<Bytes, u32> = std::collections::HashMap::new();
        // Seen against RediSearch 2.x: each VECTOR field with a value that comes after a
        // TEXT field in the schema adds 1 to the document's highest term frequency (its
        // scores' divisor); a VECTOR field before every TEXT field does not.
        let (mut text_seen, mut vectors_after_text) = (false, 0u32);
        for field in &self.def.fields {
            let value = get(&field.path);
            match &field.kind {
                FieldKind::Vector(p) => parsed.vectors.push(match value {
                    None => None,
                    Some(blob) => {
                        vectors_after_text += u32::from(text_seen);
                        let mut v = decode_vector(&blob, p.element, p.dim).ok_or(())?;
                        if p.metric == Metric::Cosine {
                            normalize(&mut v);
                        }
                        Some((v, xxhash_rust::xxh3::xxh3_64(&blob)))
                    }
                }),
                FieldKind::Tag { separator, case_sensitive } => {
                    parsed.text.push(Vec::new());
                    parsed.tags.push(match value {
                        None => Vec::new(),
                        Some(text) => text
                            .split(|b| b == separator)
                            .map(|t| t.trim_ascii())
                            .filter(|t| !t.is_empty())
                            .map(|t| if *case_sensitive { Bytes::copy_from_slice(t) } else { Bytes::from(t.to_ascii_lowercase()) })
                            .collect(),
                    })
                }
                FieldKind::Text { nostem, weight } => {
                    text_seen = true;
                    let terms = value.map_or_else(Vec::new, |text| super::text::positioned(&text, language, *nostem, &mut next_position));
                    let (tags, text) = text::field_terms(terms, *weight, &mut freqs, &mut parsed.len);
                    parsed.tags.push(tags);
                    parsed.text.push(text);
                }
                FieldKind::Numeric => parsed.numbers.push(match value {
                    None => None,
                    Some(text) => {
                        Some(std::str::from_utf8(&text).ok().and_then(|t| t.trim().parse::<f64>().ok()).filter(|v| !v.is_nan()).ok_or(())?)
                    }
                }),
            }
        }
        parsed.max_freq = freqs.values().copied().max().map_or(0, |m| m.saturating_add(vectors_after_text));
        Ok(parsed)
    }
}

/// Take a doc's tags, terms and numbers out of the postings, term counts and columns
/// (`keep_text_postings`: only under the planted bug `text-update-keeps-old-terms`,
/// which leaves the TEXT postings in place).
fn unpost(
    postings: &mut [HashMap<Bytes, hashbrown::HashSet<u32>, foldhash::fast::FixedState>],
    columns: &mut [Vec<f64>],
    text_docs: &mut HashMap<Bytes, usize, foldhash::fast::FixedState>,
    is_text: &[bool],
    id: u32,
    doc: &Doc,
    keep_text_postings: bool,
) {
    for term in text::distinct_terms(&doc.tags, is_text) {
        if let Some(count) = text_docs.get_mut(&term) {
            *count -= 1;
            if *count == 0 {
                text_docs.remove(&term);
            }
        }
    }
    for (field, tags) in doc.tags.iter().enumerate() {
        if keep_text_postings && is_text.get(field).copied().unwrap_or(false) {
            continue;
        }
        for tag in tags {
            if let Some(set) = postings[field].get_mut(tag) {
                set.remove(&id);
                if set.is_empty() {
                    postings[field].remove(tag);
                }
            }
        }
    }
    for column in columns.iter_mut() {
        if let Some(value) = column.get_mut(id as usize) {
            *value = f64::NAN;
        }
    }
}

/// A little-endian blob of `dim` elements as f32; `None` if its size is wrong.
pub fn decode_vector(blob: &[u8], element: ElementType, dim: usize) -> Option<Vec<f32>> {
    if blob.len() != dim * element.bytes() {
        return None;
    }
    Some(match element {
        ElementType::Float32 => blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        ElementType::Float16 => blob.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
    })
}
