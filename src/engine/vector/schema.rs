//! An index definition (FT.CREATE's arguments after the name), parsed and checked.
//!
//! Owns the schema types and RediSearch's error texts for a bad definition. Never
//! touches data: it is pure parsing, used by the command layer (to refuse a bad
//! FT.CREATE) and by every shard (to rebuild the same definition from its replicated
//! bytes, `encode_args`/`decode_args`).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::distance::Metric;
use super::text::Language;

/// Most fields a schema may declare (RediSearch allows 1024 attributes).
pub const FIELDS_MAX: usize = 1024;
/// Largest vector dimension accepted (RediSearch's limit is much higher; ours bounds
/// what one document may make a shard allocate).
pub const DIM_MAX: usize = 32_768;
/// Most neighbours per HNSW node per layer (M).
pub const M_MAX: usize = 512;
/// Most prefixes an index may list.
pub const PREFIXES_MAX: usize = 256;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Flat,
    Hnsw,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ElementType {
    Float32,
    Float16,
}

impl ElementType {
    pub fn bytes(self) -> usize {
        match self {
            ElementType::Float32 => 4,
            ElementType::Float16 => 2,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ElementType::Float32 => "FLOAT32",
            ElementType::Float16 => "FLOAT16",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct VectorParams {
    pub algorithm: Algorithm,
    pub element: ElementType,
    pub dim: usize,
    pub metric: Metric,
    pub m: usize,
    pub ef_construction: usize,
    pub ef_runtime: usize,
    pub initial_cap: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    Vector(VectorParams),
    Tag {
        separator: u8,
        case_sensitive: bool,
    },
    Numeric,
    /// Full text, cut into terms (`text.rs`); `nostem`: words are indexed without their
    /// `+stem`s; `weight`: what each occurrence adds to a term's frequency.
    Text {
        nostem: bool,
        weight: f64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldDef {
    /// The hash field the value is read from.
    pub path: Bytes,
    /// The name queries use (`AS alias`, else the path).
    pub name: Bytes,
    pub kind: FieldKind,
    pub sortable: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IndexDef {
    pub prefixes: Vec<Bytes>,
    pub fields: Vec<FieldDef>,
    /// LANGUAGE: the stemmer of documents (and queries) without a language of their own.
    pub language: Language,
    /// LANGUAGE_FIELD: the hash field naming a document's language.
    pub language_field: Option<Bytes>,
    /// SCORE: the score of documents without one of their own (0 to 1).
    pub score: f64,
    /// SCORE_FIELD: the hash field holding a document's score.
    pub score_field: Option<Bytes>,
}

impl IndexDef {
    pub fn field(&self, name: &[u8]) -> Option<(usize, &FieldDef)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name.eq_ignore_ascii_case(name))
    }

    /// Whether a key belongs to this index (no prefix: every key).
    pub fn covers(&self, key: &[u8]) -> bool {
        self.prefixes.is_empty() || self.prefixes.iter().any(|p| key.starts_with(p))
    }
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn err(text: impl Into<String>) -> String {
    text.into()
}

fn usize_arg(arg: Option<&Bytes>, what: &str) -> Result<usize, String> {
    let arg = arg.ok_or_else(|| err(format!("Bad arguments for {what}: missing value")))?;
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .ok_or_else(|| err(format!("Bad arguments for {what}: invalid value")))
}

/// Parse FT.CREATE's arguments after the index name. Errors are RediSearch's texts
/// where it has one, and otherwise name what Meridian does not support.
pub fn parse(args: &[Bytes]) -> Result<IndexDef, String> {
    let mut prefixes = Vec::new();
    let (mut language, mut language_field, mut score, mut score_field) = (Language::default(), None, 1.0, None);
    let mut i = 0;
    while i < args.len() && !eq(&args[i], "SCHEMA") {
        let arg = &args[i];
        if eq(arg, "ON") {
            match args.get(i + 1) {
                Some(kind) if eq(kind, "HASH") => {}
                Some(kind) if eq(kind, "JSON") => return Err(err("ON JSON is not supported by Meridian (only ON HASH)")),
                _ => return Err(err("Unknown index type")),
            }
            i += 2;
        } else if eq(arg, "PREFIX") {
            let count = usize_arg(args.get(i + 1), "PREFIX")?;
            if count > PREFIXES_MAX || i + 2 + count > args.len() {
                return Err(err("Bad arguments for PREFIX: count exceeds the arguments"));
            }
            prefixes.extend(args[i + 2..i + 2 + count].iter().cloned());
            i += 2 + count;
        } else if eq(arg, "SCORE") {
            let value = args.get(i + 1).and_then(|v| std::str::from_utf8(v).ok()?.parse::<f64>().ok());
            score = value.filter(|v| (0.0..=1.0).contains(v)).ok_or_else(|| err("Invalid score"))?;
            i += 2;
        } else if eq(arg, "LANGUAGE") {
            let name = args.get(i + 1).ok_or_else(|| err("Invalid language"))?;
            language = Language::parse(name).map_err(|e| if e == "No such language" { err("Invalid language") } else { e })?;
            i += 2;
        } else if eq(arg, "LANGUAGE_FIELD") || eq(arg, "SCORE_FIELD") {
            let field = args
                .get(i + 1)
                .cloned()
                .ok_or_else(|| err(format!("Bad arguments for {}: missing value", String::from_utf8_lossy(arg).to_uppercase())))?;
            if eq(arg, "LANGUAGE_FIELD") {
                language_field = Some(field);
            } else {
                score_field = Some(field);
            }
            i += 2;
        } else {
            return Err(err(format!("{} is not supported by Meridian's FT.CREATE", String::from_utf8_lossy(arg).to_uppercase())));
        }
    }
    if i >= args.len() {
        return Err(err("No schema found"));
    }
    let fields = parse_fields(&args[i + 1..])?;
    if fields.is_empty() {
        return Err(err("Fields arguments are missing"));
    }
    Ok(IndexDef { prefixes, fields, language, language_field, score, score_field })
}

fn parse_fields(args: &[Bytes]) -> Result<Vec<FieldDef>, String> {
    let mut fields: Vec<FieldDef> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if fields.len() >= FIELDS_MAX {
            return Err(err("Too many fields"));
        }
        let path = args[i].clone();
        i += 1;
        let mut name = path.clone();
        if args.get(i).is_some_and(|a| eq(a, "AS")) {
            name = args.get(i + 1).cloned().ok_or_else(|| err("Missing alias after AS"))?;
            i += 2;
        }
        let Some(kind) = args.get(i) else {
            return Err(err(format!("Field `{}` does not have a type", String::from_utf8_lossy(&path))));
        };
        i += 1;
        let kind = if eq(kind, "VECTOR") {
            let (params, used) = parse_vector(&args[i..])?;
            i += used;
            FieldKind::Vector(params)
        } else if eq(kind, "TAG") {
            let mut separator = b',';
            let mut case_sensitive = false;
            loop {
                match args.get(i) {
                    Some(a) if eq(a, "SEPARATOR") => {
                        let sep = args.get(i + 1).ok_or_else(|| err("Bad arguments for SEPARATOR: missing value"))?;
                        if sep.len() != 1 {
                            return Err(err("Tag separator must be a single character"));
                        }
                        separator = sep[0];
                        i += 2;
                    }
                    Some(a) if eq(a, "CASESENSITIVE") => {
                        case_sensitive = true;
                        i += 1;
                    }
                    _ => break,
                }
            }
            FieldKind::Tag { separator, case_sensitive }
        } else if eq(kind, "NUMERIC") {
            FieldKind::Numeric
        } else if eq(kind, "TEXT") {
            let mut nostem = false;
            let mut weight = 1.0;
            loop {
                match args.get(i) {
                    Some(a) if eq(a, "NOSTEM") => {
                        nostem = true;
                        i += 1;
                    }
                    Some(a) if eq(a, "WEIGHT") => {
                        weight = args
                            .get(i + 1)
                            .and_then(|w| std::str::from_utf8(w).ok())
                            .and_then(|w| w.parse::<f64>().ok())
                            .filter(|w| w.is_finite() && *w >= 0.0)
                            .ok_or_else(|| err("Bad arguments for WEIGHT: Could not parse float"))?;
                        i += 2;
                    }
                    Some(a) if eq(a, "PHONETIC") || eq(a, "WITHSUFFIXTRIE") => {
                        return Err(err(format!("{} is not supported by Meridian yet", String::from_utf8_lossy(a).to_uppercase())));
                    }
                    _ => break,
                }
            }
            FieldKind::Text { nostem, weight }
        } else if eq(kind, "GEO") || eq(kind, "GEOSHAPE") {
            return Err(err(format!("{} fields are not supported by Meridian yet", String::from_utf8_lossy(kind).to_uppercase())));
        } else {
            return Err(err(format!("Invalid field type for field `{}`", String::from_utf8_lossy(&path))));
        };
        let mut sortable = false;
        while let Some(a) = args.get(i) {
            if eq(a, "SORTABLE") {
                sortable = true;
                i += 1;
                if args.get(i).is_some_and(|a| eq(a, "UNF")) {
                    i += 1;
                }
            } else if eq(a, "NOINDEX") || eq(a, "INDEXMISSING") || eq(a, "INDEXEMPTY") || eq(a, "WITHSUFFIXTRIE") {
                return Err(err(format!("{} is not supported by Meridian yet", String::from_utf8_lossy(a).to_uppercase())));
            } else {
                break;
            }
        }
        if fields.iter().any(|f| f.name.eq_ignore_ascii_case(&name)) {
            return Err(err(format!("Duplicate field in schema - {}", String::from_utf8_lossy(&name))));
        }
        fields.push(FieldDef { path, name, kind, sortable });
    }
    Ok(fields)
}

/// `FLAT|HNSW count attr value ...`; returns the params and the arguments used.
fn parse_vector(args: &[Bytes]) -> Result<(VectorParams, usize), String> {
    let algorithm = match args.first() {
        Some(a) if eq(a, "FLAT") => Algorithm::Flat,
        Some(a) if eq(a, "HNSW") => Algorithm::Hnsw,
        Some(a) => return Err(err(format!("Bad arguments for vector similarity algorithm: {}", String::from_utf8_lossy(a)))),
        None => return Err(err("Bad arguments for vector similarity algorithm: missing")),
    };
    let count = usize_arg(args.get(1), "vector similarity number of parameters")?;
    // `count` comes from the client: compared without an addition that could wrap.
    if count % 2 != 0 || count > args.len().saturating_sub(2) {
        return Err(err("Bad arguments for vector similarity number of parameters"));
    }
    let mut params = VectorParams {
        algorithm,
        element: ElementType::Float32,
        dim: 0,
        metric: Metric::L2,
        m: 16,
        ef_construction: 200,
        ef_runtime: 10,
        initial_cap: 0,
    };
    let mut has_type = false;
    let mut has_metric = false;
    for pair in args[2..2 + count].chunks_exact(2) {
        let (key, value) = (&pair[0], &pair[1]);
        if eq(key, "TYPE") {
            params.element = if eq(value, "FLOAT32") {
                ElementType::Float32
            } else if eq(value, "FLOAT16") {
                ElementType::Float16
            } else {
                return Err(err(format!(
                    "Bad arguments for vector similarity FLAT index type: {} is not supported by Meridian",
                    String::from_utf8_lossy(value)
                )));
            };
            has_type = true;
        } else if eq(key, "DIM") {
            params.dim = usize_arg(Some(value), "vector similarity DIM")?;
        } else if eq(key, "DISTANCE_METRIC") {
            params.metric = if eq(value, "L2") {
                Metric::L2
            } else if eq(value, "IP") {
                Metric::Ip
            } else if eq(value, "COSINE") {
                Metric::Cosine
            } else {
                return Err(err("Bad arguments for vector similarity metric"));
            };
            has_metric = true;
        } else if eq(key, "INITIAL_CAP") {
            params.initial_cap = usize_arg(Some(value), "vector similarity INITIAL_CAP")?;
        } else if eq(key, "M") && algorithm == Algorithm::Hnsw {
            params.m = usize_arg(Some(value), "vector similarity HNSW index M")?;
        } else if eq(key, "EF_CONSTRUCTION") && algorithm == Algorithm::Hnsw {
            params.ef_construction = usize_arg(Some(value), "vector similarity HNSW index EF_CONSTRUCTION")?;
        } else if eq(key, "EF_RUNTIME") && algorithm == Algorithm::Hnsw {
            params.ef_runtime = usize_arg(Some(value), "vector similarity HNSW index EF_RUNTIME")?;
        } else {
            return Err(err(format!(
                "Bad arguments for algorithm {}: {}",
                if algorithm == Algorithm::Flat { "FLAT" } else { "HNSW" },
                String::from_utf8_lossy(key)
            )));
        }
    }
    if !has_type || params.dim == 0 || !has_metric {
        return Err(err(format!(
            "Missing mandatory parameter: cannot create {} index without specifying {} argument",
            if algorithm == Algorithm::Flat { "FLAT" } else { "HNSW" },
            if !has_type {
                "TYPE"
            } else if params.dim == 0 {
                "DIM"
            } else {
                "DISTANCE_METRIC"
            }
        )));
    }
    if params.dim > DIM_MAX {
        return Err(err(format!("DIM {} is above Meridian's limit of {DIM_MAX}", params.dim)));
    }
    if params.m < 2 || params.m > M_MAX {
        return Err(err(format!("HNSW M must be between 2 and {M_MAX}")));
    }
    params.ef_construction = params.ef_construction.max(1);
    params.ef_runtime = params.ef_runtime.max(1);
    Ok((params, 2 + count))
}

/// The replicated form of a definition: its arguments, each length-prefixed.
pub fn encode_args(args: &[Bytes]) -> Bytes {
    let mut out = BytesMut::new();
    for arg in args {
        out.put_u32(arg.len() as u32);
        out.put_slice(arg);
    }
    out.freeze()
}

/// The arguments back from [`encode_args`]; `None` for bytes it did not write.
pub fn decode_args(mut bytes: Bytes) -> Option<Vec<Bytes>> {
    let mut args = Vec::new();
    while bytes.has_remaining() {
        if bytes.remaining() < 4 {
            return None;
        }
        let len = bytes.get_u32() as usize;
        if bytes.remaining() < len {
            return None;
        }
        args.push(bytes.split_to(len));
    }
    Some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split_whitespace().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn a_vector_parameter_count_near_usize_max_is_refused_not_wrapped() {
        let error = parse(&args("SCHEMA v VECTOR FLAT 18446744073709551614 TYPE FLOAT32")).expect_err("refused");
        assert!(error.contains("Bad arguments"), "{error}");
    }

    #[test]
    fn a_definition_survives_its_replicated_encoding() {
        let a = args("ON HASH PREFIX 1 doc: SCHEMA v VECTOR HNSW 6 TYPE FLOAT32 DIM 4 DISTANCE_METRIC COSINE t TAG n NUMERIC");
        let def = parse(&a).expect("valid");
        assert_eq!(def.fields.len(), 3);
        assert_eq!(parse(&decode_args(encode_args(&a)).expect("decodes")).expect("valid"), def);
    }

    #[test]
    fn unsupported_parts_are_refused_by_name() {
        assert!(parse(&args("ON JSON SCHEMA v TAG")).unwrap_err().contains("JSON"));
        assert!(parse(&args("SCHEMA body GEO")).unwrap_err().contains("GEO"));
        assert_eq!(
            parse(&args("SCHEMA body TEXT NOSTEM WEIGHT 2")).expect("text").fields[0].kind,
            FieldKind::Text { nostem: true, weight: 2.0 }
        );
        assert!(parse(&args("FILTER x SCHEMA v TAG")).unwrap_err().contains("FILTER"));
        assert!(parse(&args("SCHEMA v VECTOR FLAT 4 TYPE FLOAT32 DIM 4")).unwrap_err().contains("DISTANCE_METRIC"));
    }
}
