//! The engine's behaviour through its own entry point, one shard, no network.

use super::parser::parse;

#[test]
fn unsupported_constructs_are_errors_that_name_them() {
    for (query, names) in [
        ("MATCH p = (a)-->(b) RETURN p", "Named paths"),
        ("CALL db.labels()", "CALL"),
        ("MATCH (a) RETURN a UNION MATCH (b) RETURN b", "UNION"),
        ("MATCH (a) WHERE a.name =~ 'x.*' RETURN a", "Regular expressions"),
        ("RETURN [x IN range(1,3) | x]", "List comprehensions"),
    ] {
        let err = parse(query).err().unwrap_or_else(|| panic!("{query} parsed"));
        assert!(err.contains(names), "{query}: {err}");
    }
}

#[test]
fn parameters_and_clauses_parse() {
    let parsed = parse("CYPHER p=1 q='s' MATCH (a:L {x: $p})-[r:T*1..3]->(b) WHERE a.y STARTS WITH $q RETURN DISTINCT a.x AS x ORDER BY x DESC SKIP 1 LIMIT 2").expect("parses");
    assert_eq!(parsed.params.len(), 2);
    assert_eq!(parsed.query.clauses.len(), 2);
}
