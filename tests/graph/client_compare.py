"""The `falkordb` Python client, unmodified, against Meridian and against FalkorDB.

Run by tests/graph_client.rs as `python3 client_compare.py MERIDIAN_PORT FALKORDB_PORT`.
The client asks for `--compact` result sets and resolves the label, relationship-type
and property-key indexes in them with `db.labels()`, `db.relationshipTypes()` and
`db.propertyKeys()`: every query below runs on both servers through the client, and
what the client makes of the replies (nodes, edges, paths, scalars, statistics) must
be the same. Ids are left out (FalkorDB's are row numbers, Meridian's are stable
hashes: docs/graph.md); an edge's endpoints are compared by the nodes' properties.
Exits 1 and prints every difference when any.
"""

import math
import sys

from falkordb import Edge, FalkorDB, Node, Path

QUERIES = [
    ("CREATE (:Person {name: 'Ada', born: 1815, score: 9.5, tags: ['math', 'poetry']})", False),
    ("CREATE (:Person {name: 'Alan', born: 1912, active: false})", False),
    ("MATCH (a:Person {name: 'Ada'}), (b:Person {name: 'Alan'}) CREATE (a)-[:INSPIRED {year: 1936, weight: 0.75}]->(b)", False),
    ("MATCH (n:Person) RETURN n ORDER BY n.name", True),
    ("MATCH (a)-[r]->(b) RETURN a, r, b", True),
    ("MATCH (a)-[r:INSPIRED]->(b) RETURN r.year, type(r), labels(a), a.tags, r.weight", True),
    ("RETURN 1, -7, 2.5, 1.0/3, 10.0, 'text', true, false, null, [1, 'a', null, [2.5]], {k: 1, m: [true], s: 'x'}", True),
    # A new label and property key after the client cached the schema: it must refresh.
    ("CREATE (:City:Capital {name: 'London', population: 8900000})", False),
    ("MATCH (c:City) RETURN c, labels(c)", True),
    ("MATCH (a:Person {name: 'Alan'}), (c:City) CREATE (a)-[:LIVED_IN {since: 1930}]->(c)", False),
    ("MATCH (a)-[r]->(b) RETURN a.name, r, b.name ORDER BY a.name, b.name", True),
    ("MATCH (n) RETURN collect(n.name) AS names, count(n), sum(n.born), avg(n.born)", True),
    ("MATCH (n:Person) SET n.seen = true, n.score = 1 RETURN n.name, n.seen ORDER BY n.name", True),
    ("MATCH (n:Person)-[r]->(m) RETURN n.name, collect(type(r)) ORDER BY n.name", True),
    ("UNWIND range(1, 5) AS i CREATE (:Num {i: i, half: i / 2.0})", False),
    ("MATCH (n:Num) WHERE n.i > 2 RETURN n ORDER BY n.i", True),
    ("MATCH (n:Num) RETURN n.i, n.half ORDER BY n.i DESC LIMIT 2", True),
    ("CALL db.labels()", True),
    ("CALL db.relationshipTypes()", True),
    ("CALL db.propertyKeys()", True),
    ("CALL db.labels() YIELD label RETURN label ORDER BY label", True),
    ("MATCH (n:Num {i: 5}) DETACH DELETE n", False),
    ("MATCH (n:City) REMOVE n:Capital RETURN n", True),
    ("MATCH (a:Person {name: 'Alan'})-[r:LIVED_IN]->() DELETE r", False),
    ("MATCH (n) RETURN count(n)", True),
]

STATS = [
    "labels_added", "labels_removed", "nodes_created", "nodes_deleted", "properties_set",
    "properties_removed", "relationships_created", "relationships_deleted",
]


def norm(value, names):
    """A comparable form of what the client parsed."""
    if isinstance(value, Node):
        return ("node", tuple(sorted(value.labels or [])), norm(value.properties, names))
    if isinstance(value, Edge):
        return (
            "edge", value.relation, norm(value.properties, names),
            names.get(value.src_node), names.get(value.dest_node),
        )
    if isinstance(value, Path):
        return ("path", [norm(n, names) for n in value.nodes()], [norm(e, names) for e in value.edges()])
    if isinstance(value, dict):
        return ("map", tuple((k, norm(v, names)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(norm(v, names) for v in value))
    if isinstance(value, float):
        return ("float", float(f"{value:.12g}")) if not math.isnan(value) else ("nan",)
    return (type(value).__name__, value)


def run(graph, query, returns):
    """What the client makes of the reply: rows (or the error) and the statistics."""
    try:
        result = graph.query(query)
    except Exception as e:  # an error is an answer too
        return ("error", type(e).__name__)
    # An endpoint is named by its node's properties (ids differ between the servers).
    names = {}
    for n in graph.query("MATCH (n) RETURN n").result_set:
        names[n[0].id] = norm(n[0].properties, {})
    rows = [[norm(v, names) for v in row] for row in result.result_set]
    if "ORDER BY" not in query.upper():
        rows.sort(key=repr)
    header = [h[1] for h in result.header] if returns else []
    stats = {s: getattr(result, s) for s in STATS}
    return (header, rows, stats)


def main():
    meridian_port, falkordb_port = int(sys.argv[1]), int(sys.argv[2])
    graphs = [FalkorDB(host="127.0.0.1", port=p).select_graph("client") for p in (meridian_port, falkordb_port)]
    differences = []
    for query, returns in QUERIES:
        got, want = (run(g, query, returns) for g in graphs)
        if got != want:
            differences.append(f"{query}\n  Meridian: {got}\n  FalkorDB: {want}")
    # The client's own schema calls, answered in the order the entries were created.
    for g in graphs:
        g.schema.refresh(0)
    for name in ("labels", "relationships", "properties"):
        got, want = (getattr(g.schema, name) for g in graphs)
        if got != want:
            differences.append(f"schema {name}: Meridian {got}, FalkorDB {want}")
    print(f"{len(QUERIES)} queries through the falkordb client, {len(differences)} differences")
    for d in differences:
        print(d)
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
