//! The query grammar's unit tests: what parses to what, and what is refused by name.

use super::*;

fn parse(query: &str, params: &[(&str, &str)]) -> Result<SearchQuery, String> {
    let mut args = vec![Bytes::copy_from_slice(query.as_bytes())];
    if !params.is_empty() {
        args.push(Bytes::from_static(b"PARAMS"));
        args.push(Bytes::from((params.len() * 2).to_string()));
        for (k, v) in params {
            args.push(Bytes::copy_from_slice(k.as_bytes()));
            args.push(Bytes::copy_from_slice(v.as_bytes()));
        }
    }
    args.push(Bytes::from_static(b"DIALECT"));
    args.push(Bytes::from_static(b"2"));
    parse_search(&args)
}

#[test]
fn hybrid_query_with_tags_ranges_negation_and_knn_parses_whole() {
    let q =
        parse("(@t:{a | b\\ c} -@n:[(1 +inf])=>[KNN $K @v $blob EF_RUNTIME 50 AS dist]", &[("K", "7"), ("blob", "xyz")]).expect("parses");
    let knn = q.knn.expect("knn");
    assert_eq!((knn.k, &knn.alias[..], &knn.blob[..], knn.ef_runtime), (7, &b"dist"[..], &b"xyz"[..], Some(50)));
    let Filter::And(parts) = q.filter else { panic!("and") };
    assert_eq!(parts[0], Filter::Tag { field: "t".into(), values: vec!["a".into(), "b c".into()] });
    assert!(matches!(&parts[1], Filter::Not(inner) if matches!(**inner, Filter::Range { lo: 1.0, lo_exclusive: true, .. })));
}

#[test]
fn tag_prefixes_and_vector_ranges_parse() {
    let q = parse("@t:{ab* | c}", &[]).expect("parses");
    assert_eq!(
        q.filter,
        Filter::Or(vec![
            Filter::Tag { field: "t".into(), values: vec!["c".into()] },
            Filter::TagPrefix { field: "t".into(), prefixes: vec!["ab".into()] }
        ])
    );
    let q = parse("@v:[VECTOR_RANGE $r $b]=>{$YIELD_DISTANCE_AS: d; $EPSILON: 0.1} @t:{x}", &[("r", "0.5"), ("b", "xyz")]).expect("parses");
    let Filter::And(parts) = &q.filter else { panic!("and") };
    assert_eq!(parts[0], Filter::VectorRange { field: "v".into(), radius: 0.5, blob: "xyz".into(), yield_as: Some("d".into()) });
    assert_eq!(q.distance_alias().map(|a| &a[..]), Some(&b"d"[..]));
}

#[test]
fn text_terms_parse_with_fields_prefixes_and_stop_words() {
    let q = parse("Hello the @title:(wor* | Fox) -@body:x", &[]).expect("parses");
    let text = |field: Option<&str>, term: &str, prefix: bool| Filter::Text {
        field: field.map(|f| Bytes::copy_from_slice(f.as_bytes())),
        term: Bytes::copy_from_slice(term.as_bytes()),
        prefix,
    };
    assert_eq!(
        q.filter,
        Filter::And(vec![
            text(None, "hello", false),
            Filter::Or(vec![text(Some("title"), "wor", true), text(Some("title"), "fox", false)]),
            Filter::Not(Box::new(text(Some("body"), "x", false))),
        ])
    );
    assert_eq!(parse("the", &[]).expect("parses").filter, Filter::Or(Vec::new()));
}

#[test]
fn phrases_parse_to_their_words_stop_words_kept() {
    let words = |w: &[&str]| w.iter().map(|t| Bytes::copy_from_slice(t.as_bytes())).collect::<Vec<_>>();
    let q = parse("\"Hello, World!\" @title:\"world of running\"", &[]).expect("parses");
    assert_eq!(
        q.filter,
        Filter::And(vec![
            Filter::Phrase { field: None, terms: words(&["hello", "world"]) },
            Filter::Phrase { field: Some("title".into()), terms: words(&["world", "of", "running"]) },
        ])
    );
    assert_eq!(parse("\"  \"", &[]).expect("parses").filter, Filter::Or(Vec::new()));
}

#[test]
fn verbatim_language_and_nostopwords_are_kept_for_the_index() {
    let args: Vec<Bytes> = ["the fox", "VERBATIM", "NOSTOPWORDS", "LANGUAGE", "german", "SCORER", "TFIDF"]
        .iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect();
    let q = parse_search(&args).expect("parses");
    assert!(q.verbatim);
    assert_eq!(q.language.map(|l| l.name()), Some("german"));
    let Filter::And(parts) = &q.filter else { panic!("NOSTOPWORDS keeps `the` as a term") };
    assert_eq!(parts.len(), 2);
    let args: Vec<Bytes> = ["x", "LANGUAGE", "klingon"].iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
    assert_eq!(parse_search(&args).unwrap_err(), "No such language");
}

#[test]
fn unsupported_query_parts_are_errors_never_ignored() {
    assert!(parse("%%%%hello%%%%", &[]).unwrap_err().contains("Syntax error"));
    assert!(parse("%%hello%", &[]).unwrap_err().contains("Syntax error"));
    assert!(parse("\"hello world", &[]).unwrap_err().contains("Syntax error"));
    assert!(parse("@v:[VECTOR_RANGE 0.1 $b]=>{$FOO: 1}", &[("b", "x")]).is_err());
    assert!(parse("@v:[VECTOR_RANGE 1 $b] | @w:[VECTOR_RANGE 1 $b]", &[("b", "x")]).unwrap_err().contains("More than one"));
    assert!(parse("*=>[KNN 3 @v $b HYBRID_POLICY ADHOC_BF]", &[("b", "x")]).unwrap_err().contains("HYBRID_POLICY"));
    assert!(parse("@t:{*ab}", &[]).is_err());
    assert!(parse("@t:{a*b}", &[]).is_err());
    assert!(parse("(@t:{a}", &[]).is_err());
}

#[test]
fn fuzzy_and_optional_terms_slop_inorder_and_scorers_parse() {
    let q = parse("%%Hello%% ~@title:world ~the", &[]).expect("parses");
    let Filter::And(parts) = &q.filter else { panic!("and: {:?}", q.filter) };
    assert_eq!(parts[0], Filter::Fuzzy { field: None, term: "hello".into(), distance: 2 });
    assert_eq!(parts[1], Filter::Optional(Box::new(Filter::Text { field: Some("title".into()), term: "world".into(), prefix: false })));
    assert_eq!(parts.len(), 2, "an optional stop word is no condition");
    assert_eq!(
        parse("@title:% fox %", &[]).expect("parses").filter,
        Filter::Fuzzy { field: Some("title".into()), term: "fox".into(), distance: 1 }
    );
    let args: Vec<Bytes> = ["a b", "SLOP", "2", "INORDER", "SCORER", "BM25"].iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
    let q = parse_search(&args).expect("parses");
    assert_eq!((q.slop, q.in_order, q.scorer), (Some(2), true, Scorer::Bm25));
    let args: Vec<Bytes> = ["a b", "SLOP", "-2"].iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
    assert!(parse_search(&args).is_err());
}

#[test]
fn counts_near_usize_max_are_refused_not_wrapped() {
    for tail in ["RETURN 18446744073709551615 a", "PARAMS 18446744073709551614 a b"] {
        let mut args = vec![Bytes::from_static(b"*")];
        args.extend(tail.split(' ').map(|s| Bytes::copy_from_slice(s.as_bytes())));
        let error = parse_search(&args).expect_err(tail);
        assert!(error.starts_with("Bad arguments for"), "{tail}: {error}");
    }
}
