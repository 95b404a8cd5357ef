// The differential corpus (tests/graph_differential.rs): one query per line, run in
// order on one graph in FalkorDB and in Meridian. `RO ` runs a line as GRAPH.RO_QUERY.
// Setup
CREATE (:Person {name:'Alice', age:34, city:'Paris'}), (:Person {name:'Bob', age:28, city:'London'}), (:Person {name:'Carol', age:45, city:'Paris'})
CREATE (:Person {name:'Dave', age:19}), (:Person {name:'Eve', age:28, city:'Berlin', tags:['x','y']})
CREATE (:City {name:'Paris', pop:2100000}), (:City {name:'London', pop:8900000}), (:City {name:'Berlin', pop:3600000})
MATCH (a:Person {name:'Alice'}), (b:Person {name:'Bob'}) CREATE (a)-[:KNOWS {since:2010}]->(b)
MATCH (a:Person {name:'Alice'}), (b:Person {name:'Carol'}) CREATE (a)-[:KNOWS {since:2015}]->(b)
MATCH (a:Person {name:'Bob'}), (b:Person {name:'Dave'}) CREATE (a)-[:KNOWS {since:2020}]->(b)
MATCH (a:Person {name:'Carol'}), (b:Person {name:'Eve'}) CREATE (a)-[:KNOWS]->(b)
MATCH (p:Person), (c:City) WHERE p.city = c.name CREATE (p)-[:LIVES_IN]->(c)
// Reads: patterns, labels, property maps, directions
MATCH (n) RETURN count(n)
MATCH (n:Person) RETURN n.name ORDER BY n.name
MATCH (n:City) RETURN n.name, n.pop ORDER BY n.pop DESC
MATCH (n:Person {city:'Paris'}) RETURN n.name
MATCH (a:Person)-[:KNOWS]->(b:Person) RETURN a.name, b.name
MATCH (a:Person)<-[:KNOWS]-(b:Person) RETURN a.name, b.name
MATCH (a:Person {name:'Bob'})-[:KNOWS]-(b) RETURN b.name
MATCH (a)-[r:KNOWS]->(b) RETURN a.name, r.since, b.name
MATCH (a)-[r]->(b:City) RETURN a.name, type(r), b.name
MATCH (a:Person)-[:KNOWS]->(b)-[:KNOWS]->(c) RETURN a.name, b.name, c.name
MATCH (a:Person)-[:KNOWS]->(b), (b)-[:LIVES_IN]->(c) RETURN a.name, b.name, c.name
MATCH (a:Person {name:'Alice'}), (c:City) RETURN a.name, c.name
MATCH (n:Person {name:'Alice'}) RETURN n
MATCH (a:Person {name:'Alice'})-[r:KNOWS]->(b:Person {name:'Bob'}) RETURN r
MATCH (a:Person {name:'Alice'})-[r:KNOWS]->(b:Person {name:'Bob'}) RETURN a, r, b
MATCH (n:Nobody) RETURN n
// WHERE
MATCH (n:Person) WHERE n.age > 30 RETURN n.name
MATCH (n:Person) WHERE n.age >= 28 AND n.age < 40 RETURN n.name
MATCH (n:Person) WHERE n.age < 20 OR n.city = 'Berlin' RETURN n.name
MATCH (n:Person) WHERE NOT n.city = 'Paris' RETURN n.name
MATCH (n:Person) WHERE n.age <> 28 RETURN n.name
MATCH (n:Person) WHERE n.name IN ['Alice', 'Eve', 'Zed'] RETURN n.name
MATCH (n:Person) WHERE n.name STARTS WITH 'A' RETURN n.name
MATCH (n:Person) WHERE n.name ENDS WITH 'e' RETURN n.name
MATCH (n:Person) WHERE n.name CONTAINS 'o' RETURN n.name
MATCH (n:Person) WHERE n.city IS NULL RETURN n.name
MATCH (n:Person) WHERE n.city IS NOT NULL RETURN n.name
MATCH (n:Person) WHERE n.age = 28 XOR n.city = 'London' RETURN n.name
MATCH (a)-[r:KNOWS]->(b) WHERE r.since > 2012 RETURN a.name, b.name
MATCH (a)-[r:KNOWS]->(b) WHERE r.since IS NULL RETURN a.name, b.name
MATCH (n) WHERE n:City RETURN n.name
MATCH (n:Person) WHERE 'x' IN n.tags RETURN n.name
// RETURN: aliases, expressions, DISTINCT, aggregates
MATCH (n:Person) RETURN n.name AS who, n.age * 2 AS twice ORDER BY who
MATCH (n:Person) RETURN DISTINCT n.age ORDER BY n.age
MATCH (n:Person) RETURN DISTINCT n.city
MATCH (n:Person) RETURN count(*), sum(n.age), min(n.age), max(n.age)
MATCH (n:Person) RETURN avg(n.age)
MATCH (n:Person) RETURN n.city, count(*) ORDER BY n.city
MATCH (n:Person) RETURN n.age, count(n) AS c ORDER BY c DESC, n.age
MATCH (n:Person) RETURN count(DISTINCT n.age)
MATCH (n:Person) WHERE n.age > 100 RETURN count(n), sum(n.age), collect(n.name)
MATCH (a:Person)-[:KNOWS]->(b) RETURN a.name, count(b) ORDER BY a.name
MATCH (n:Person) WITH n ORDER BY n.name RETURN collect(n.name)
MATCH (n:Person) RETURN n.name ORDER BY n.age DESC, n.name
MATCH (n:Person) RETURN n.name ORDER BY n.name SKIP 1 LIMIT 2
MATCH (n:Person) RETURN n.name ORDER BY n.name LIMIT 0
MATCH (n:Person) RETURN n.name, n.age ORDER BY n.age, n.name DESC
MATCH (n:Person) RETURN max(n.name), min(n.city)
// Expressions and functions
RETURN 1 + 2 * 3, 10 / 4, 10 % 3, 2 ^ 3, -5
RETURN 'a' + 'b', 1.5 + 1, 10 / 4.0
RETURN [1, 2, 3], {k: 1}, null, true, false
RETURN toUpper('abc'), toLower('ABC'), trim('  x  '), size('hello'), reverse('abc')
RETURN substring('hello', 1, 3), left('hello', 2), right('hello', 2), replace('aXbX', 'X', '-')
RETURN split('a,b,c', ','), size([1,2,3]), head([1,2,3]), last([1,2,3]), tail([1,2,3])
RETURN range(1, 5), range(0, 10, 3), abs(-3), ceil(1.2), floor(1.8), round(2.5)
RETURN toInteger('42'), toInteger(3.9), toFloat('1.5'), toString(12), coalesce(null, 2, 3)
RETURN 1 = 1.0, 1 < 2, 'a' < 'b', null = null, 1 IN [1,2], 3 IN [1, null]
RETURN [1,2,3][0], [1,2,3][-1], [1,2,3][1..], [1,2,3][..2]
RETURN CASE WHEN 1 > 2 THEN 'a' ELSE 'b' END, CASE 2 WHEN 1 THEN 'one' WHEN 2 THEN 'two' END
MATCH (n:Person {name:'Eve'}) RETURN labels(n), n.tags, size(n.tags), keys(n)
MATCH (a)-[r:KNOWS]->(b:Person {name:'Bob'}) RETURN type(r), properties(r)
// Parameters
CYPHER name='Carol' MATCH (n:Person {name:$name}) RETURN n.age
CYPHER min=30 MATCH (n:Person) WHERE n.age > $min RETURN n.name
CYPHER names=['Bob','Dave'] MATCH (n:Person) WHERE n.name IN $names RETURN n.name
// WITH, UNWIND, OPTIONAL MATCH, variable-length paths
MATCH (n:Person) WITH n.city AS city, count(*) AS c WHERE c > 1 RETURN city, c
MATCH (n:Person) WITH n WHERE n.age > 30 RETURN n.name
UNWIND [3, 1, 2] AS x RETURN x ORDER BY x
UNWIND [1, 2, 3] AS x RETURN sum(x), collect(x)
MATCH (p:Person) OPTIONAL MATCH (p)-[:LIVES_IN]->(c) RETURN p.name, c.name
MATCH (a:Person {name:'Alice'})-[:KNOWS*1..2]->(b) RETURN b.name
MATCH (a:Person {name:'Alice'})-[:KNOWS*]->(b) RETURN b.name
MATCH (a:Person {name:'Alice'})-[:KNOWS*2]->(b) RETURN b.name
// Read-only queries
RO MATCH (n:Person) RETURN count(n)
RO CREATE (:Person {name:'Mallory'})
// Errors
MATCH (n) RETURN nosuchfn(n)
RETURN 1 +
MATCH (n) RETURN m
CREATE (a)-[:R|S]->(b)
CREATE (a)-[]->(b)
// Writes: SET, REMOVE, DELETE, MERGE
MATCH (n:Person {name:'Dave'}) SET n.age = 20
MATCH (n:Person {name:'Dave'}) SET n.age = 20
MATCH (n:Person {name:'Dave'}) SET n.nick = 'D', n.score = 1.5
MATCH (n:Person {name:'Dave'}) SET n.nick = NULL
MATCH (n:Person {name:'Dave'}) SET n += {score: 2.5, level: 3}
MATCH (n:Person {name:'Dave'}) RETURN n.age, n.nick, n.score, n.level
MATCH (n:Person {name:'Dave'}) REMOVE n.level RETURN n.level
MATCH (n:Person {name:'Dave'}) SET n:Teen RETURN labels(n)
MATCH (n:Teen) RETURN n.name
MATCH (a:Person {name:'Alice'})-[r:KNOWS]->(b:Person {name:'Bob'}) SET r.since = 2011 RETURN r.since
MERGE (c:City {name:'Rome'})
MERGE (c:City {name:'Rome'})
MERGE (c:City {name:'Madrid'}) ON CREATE SET c.pop = 3300000 ON MATCH SET c.seen = true RETURN c.pop, c.seen
MERGE (c:City {name:'Madrid'}) ON CREATE SET c.pop = 1 ON MATCH SET c.seen = true RETURN c.pop, c.seen
UNWIND ['Oslo', 'Oslo', 'Lima'] AS n MERGE (:City {name:n})
MATCH (c:City) RETURN c.name ORDER BY c.name
CREATE (a:Tmp {i:1})-[:T]->(b:Tmp {i:2}), (b)-[:T]->(a) RETURN a.i, b.i
MATCH (a:Tmp)-[r:T]->() DELETE r
MATCH (n:Tmp) DELETE n
MATCH (n:Tmp) RETURN count(n)
MATCH (p:Person {name:'Bob'}) DETACH DELETE p
MATCH (a)-[r:KNOWS]->(b) RETURN a.name, b.name
MATCH (n:Person) RETURN count(n)
MATCH (n:Person {name:'Eve'}) DELETE n
MATCH (n) RETURN count(n)
MATCH ()-[r]->() RETURN count(r)
UNWIND range(1, 20) AS i CREATE (:Bulk {i: i, even: i % 2 = 0})
MATCH (b:Bulk) WHERE b.even RETURN count(b), sum(b.i)
MATCH (b:Bulk) WITH b ORDER BY b.i DESC LIMIT 3 RETURN b.i
MATCH (b:Bulk) DELETE b
MATCH (n) RETURN count(n)
// More reads over the remaining graph (Alice, Carol, Dave; cities)
MATCH (n:Person) RETURN n.name, n.age ORDER BY n.age
MATCH (n:Person) RETURN n.name, n.age > 30 AS old ORDER BY n.name
MATCH (n:Person) WHERE n.age IN [34, 45] RETURN n.name ORDER BY n.name
MATCH (n:Person) WHERE NOT (n.age > 30) RETURN n.name
MATCH (n:Person) WHERE n.name >= 'B' AND n.name < 'D' RETURN n.name
MATCH (n:Person) WHERE n.nick IS NULL AND n.age IS NOT NULL RETURN count(n)
MATCH (n:City) WHERE n.pop > 3000000 RETURN n.name ORDER BY n.pop
MATCH (n:City) RETURN n.name, n.pop / 1000000 AS millions ORDER BY n.name
MATCH (n:City) RETURN sum(n.pop), avg(n.pop), min(n.pop), max(n.pop)
MATCH (n:City) WHERE n.pop IS NULL RETURN n.name ORDER BY n.name
MATCH (n:City) RETURN count(n.pop), count(*)
MATCH (p:Person)-[:LIVES_IN]->(c:City) RETURN c.name, collect(p.name)
MATCH (p:Person)-[:LIVES_IN]->(c:City) RETURN c.name AS city, count(p) AS people ORDER BY people DESC, city
MATCH (p:Person) OPTIONAL MATCH (p)-[:KNOWS]->(q) RETURN p.name, count(q) ORDER BY p.name
MATCH (p:Person) OPTIONAL MATCH (p)-[r:KNOWS]->(q) RETURN p.name, q.name, r.since ORDER BY p.name
MATCH (a)-[r]->(b) RETURN type(r), count(*) ORDER BY type(r)
// FalkorDB answers count(r) here with each edge once (its edge-count shortcut); openCypher,
// and Meridian, count each edge once per direction, as count(*) does in both.
MATCH (a)-[r]-(b) RETURN count(*)
MATCH (a:Person)-[:KNOWS]-(b:Person) RETURN a.name, b.name
MATCH (a:Person {name:'Alice'})-->(b) RETURN b.name
MATCH (a:Person {name:'Alice'})<--(b) RETURN b.name
MATCH (a:Person {name:'Alice'})-[*1..3]->(b) RETURN DISTINCT b.name
MATCH (a)-[:KNOWS*0..1]->(b) WHERE a.name = 'Alice' RETURN b.name
MATCH (a:Person), (b:Person) WHERE a.age < b.age RETURN a.name, b.name
MATCH (a:Person) WITH a.age AS age RETURN max(age) - min(age)
MATCH (a:Person) WITH a ORDER BY a.age DESC LIMIT 1 RETURN a.name
MATCH (a:Person) WITH count(a) AS c RETURN c * 10
MATCH (a:Person) WITH a.name AS name ORDER BY name RETURN collect(name) AS names
UNWIND [1, 2, 2, 3, null] AS x RETURN count(x), count(DISTINCT x), collect(DISTINCT x)
UNWIND [[1, 2], [3]] AS l UNWIND l AS x RETURN sum(x)
UNWIND [] AS x RETURN count(x)
UNWIND range(1, 10) AS x WITH x WHERE x % 3 = 0 RETURN collect(x)
UNWIND ['b', 'a', 'c'] AS s RETURN s ORDER BY s DESC
UNWIND [1, 'a', null, true, 2.5] AS v RETURN v
WITH 1 AS a, 2 AS b RETURN a + b, a * b
RETURN 7 / 2, 7 / 2.0, -7 / 2, 7 % -3, 2 ^ 0.5
RETURN 'abc' STARTS WITH 'a', 'abc' ENDS WITH 'bc', 'abc' CONTAINS 'x', null STARTS WITH 'a'
RETURN true AND null, false AND null, true OR null, false OR null, NOT null, true XOR true
RETURN [1, 2] + [3], [1] + 2, size([]), [] + []
RETURN toString(1.5), toString(true), toInteger('x'), toFloat(3), toUpper(null)
RETURN coalesce(null, null), coalesce('a', null)
RETURN range(5, 1, -2), reverse([1, 2, 3]), split('abc', '')
RETURN substring('hello', 2), trim(' a b '), lTrim('  a'), rTrim('a  ')
RETURN abs(-2.5), sign(-3), sign(0), round(-1.5), floor(-1.5), ceil(-1.5)
RETURN {a: 1, b: 'x'}.b, [1, 2, 3][5], [1, 2, 3][1..2]
RETURN CASE WHEN null THEN 1 WHEN true THEN 2 END, CASE 'x' WHEN 'y' THEN 1 ELSE 0 END
CYPHER a=5 b=2.5 c='s' d=true e=null f=[1,2] RETURN $a, $b, $c, $d, $e, $f
CYPHER lim=2 UNWIND [1, 2, 3] AS x RETURN x ORDER BY x LIMIT $lim
RO MATCH (a)-[r]->(b) RETURN count(r)
RO MATCH (n:Person) SET n.x = 1
RO MATCH (n) DETACH DELETE n
RETURN size(1)
RETURN 1 / 0
MATCH (n) RETURN n.name ORDER BY
CREATE (:Z {v: {a: 1}})
// More writes
CREATE (a:W {k: 1}), (b:W {k: 2}), (a)-[:L {w: 5}]->(b)
MATCH (a:W {k: 1})-[r:L]->(b:W) SET r.w = r.w + 1, b.k = 20 RETURN r.w, b.k
MATCH (a:W) SET a.tag = 'w' RETURN count(a)
MATCH (a:W) REMOVE a.tag RETURN a.k ORDER BY a.k
MATCH (a:W {k: 1}) SET a = {k: 10, z: true} RETURN a.k, a.z
MATCH (a:W) RETURN a ORDER BY a.k
MATCH (a:W)-[r]->(b) RETURN a, r, b
MATCH (a:W {k: 10}) CREATE (a)-[:L]->(:W {k: 30})
MATCH (a:W {k: 10})-[:L]->(b) RETURN b.k ORDER BY b.k
MERGE (a:W {k: 10})-[:L]->(b:W {k: 20}) RETURN a.k, b.k
MERGE (a:W {k: 99})-[:L]->(b:W {k: 98}) RETURN a.k, b.k
MATCH (a:W {k: 10}) MERGE (a)-[:M]->(c:W {k: 7}) RETURN c.k
MATCH (a:W {k: 10}) MERGE (a)-[:M]->(c:W {k: 7}) RETURN c.k
MATCH (n:W) RETURN count(n)
MATCH (a:W {k: 10}) DETACH DELETE a
MATCH (n:W) RETURN n.k ORDER BY n.k
MATCH ()-[r:L]->() RETURN count(r)
MATCH (n:W) DELETE n
MATCH (n:W) RETURN count(n)
// Edge cases on an empty label set and fresh data
CREATE (:Q {s: 'x', n: 1}), (:Q {s: 'y', n: 2}), (:Q {s: 'x', n: 3})
MATCH (q:Q) RETURN q.s, sum(q.n) ORDER BY q.s
MATCH (q:Q) RETURN DISTINCT q.s ORDER BY q.s DESC
MATCH (q:Q) WITH q.s AS s, collect(q.n) AS ns RETURN s, size(ns) ORDER BY s
MATCH (q:Q) WHERE q.n > 1 WITH q ORDER BY q.n RETURN q.s, q.n
MATCH (q:Q) RETURN q.n ORDER BY q.n DESC SKIP 1
MATCH (q:Q) RETURN min(q.s), max(q.s), count(DISTINCT q.s)
MATCH (q:Q) RETURN q.s + toString(q.n) AS label ORDER BY label
MATCH (a:Q {n: 1}), (b:Q {n: 2}) CREATE (a)-[:NEXT]->(b)
MATCH (a:Q {n: 2}), (b:Q {n: 3}) CREATE (a)-[:NEXT]->(b)
MATCH (a:Q)-[:NEXT*]->(b:Q) RETURN a.n, b.n ORDER BY a.n, b.n
MATCH (a:Q)-[:NEXT*2..]->(b:Q) RETURN a.n, b.n
MATCH (a:Q)<-[:NEXT*1..1]-(b:Q) RETURN a.n, b.n ORDER BY a.n
MATCH (a:Q)-[r:NEXT]->(b) RETURN a.n, type(r), b.n ORDER BY a.n
MATCH (q:Q) WHERE q.s = 'x' AND (q.n = 1 OR q.n = 3) RETURN count(q)
MATCH (q:Q) DETACH DELETE q
MATCH (q:Q) RETURN count(q)
// Procedures: the schema lists, in the order their entries entered the graph
CALL db.labels()
CALL db.relationshipTypes()
CALL db.propertyKeys()
RO CALL db.labels() YIELD label RETURN label ORDER BY label
CALL db.propertyKeys() YIELD propertyKey AS k WHERE k STARTS WITH 'n' RETURN k ORDER BY k
MATCH (p:Person {name:'Alice'}) CALL db.relationshipTypes() YIELD relationshipType RETURN p.name, relationshipType
CALL db.labels() YIELD nope
CALL db.nothing()
CALL db.labels(1)
// Indexes: declared, used by MATCH with equality, range and IN, kept up to date by writes
CREATE INDEX FOR (p:Person) ON (p.age)
CREATE INDEX ON :City(pop)
CREATE INDEX FOR (p:Person) ON (p.age)
CREATE INDEX FOR (x:Idx) ON (x.k, x.s)
CALL db.indexes() YIELD label, properties, types, options, language, stopwords, entitytype, status
RO MATCH (p:Person {age: 28}) RETURN p.name ORDER BY p.name
RO MATCH (p:Person) WHERE p.age = 34 RETURN p.name
RO MATCH (p:Person) WHERE p.age > 28 RETURN p.name ORDER BY p.name
RO MATCH (p:Person) WHERE p.age >= 28 AND p.age < 45 RETURN p.name ORDER BY p.name
RO MATCH (p:Person) WHERE 30 > p.age RETURN p.name ORDER BY p.name
RO MATCH (p:Person) WHERE p.age IN [19, 45, 99] RETURN p.name ORDER BY p.name
RO MATCH (p:Person) WHERE p.age = 28.0 RETURN count(p)
RO MATCH (c:City) WHERE c.pop < 4000000 RETURN c.name ORDER BY c.name
RO MATCH (p:Person)-[:KNOWS]->(q) WHERE p.age = 34 RETURN q.name ORDER BY q.name
UNWIND range(1, 50) AS i CREATE (:Idx {k: i, s: toString(i % 7)})
RO MATCH (x:Idx) WHERE x.k >= 10 AND x.k <= 12 RETURN x.k ORDER BY x.k
RO MATCH (x:Idx {s: '3'}) RETURN count(x)
RO MATCH (x:Idx) WHERE x.s > '4' RETURN count(x)
RO MATCH (x:Idx) WHERE x.k < 2.5 RETURN x.k ORDER BY x.k
MATCH (x:Idx) WHERE x.k <= 5 SET x.k = x.k + 100
RO MATCH (x:Idx) WHERE x.k > 100 RETURN x.k ORDER BY x.k
RO MATCH (x:Idx) WHERE x.k = 3 RETURN count(x)
MATCH (x:Idx {k: 101}) REMOVE x:Idx
RO MATCH (x:Idx) WHERE x.k > 100 RETURN x.k ORDER BY x.k
MATCH (x:Idx) WHERE x.k > 40 DETACH DELETE x
RO MATCH (x:Idx) WHERE x.k > 38 RETURN x.k ORDER BY x.k
MATCH (x:Idx {k: 30}) SET x.k = null
RO MATCH (x:Idx) WHERE x.k >= 29 AND x.k <= 31 RETURN x.k ORDER BY x.k
DROP INDEX ON :Idx(s)
DROP INDEX FOR (x:Idx) ON (x.s)
RO MATCH (x:Idx {s: '3'}) RETURN count(x)
DROP INDEX FOR (x:Idx) ON (x.k)
CALL db.indexes() YIELD label, properties, entitytype
CREATE INDEX FOR (n:NewLabel) ON (n.fresh)
CALL db.labels()
CALL db.propertyKeys()
// shortestPath (WITH/RETURN only, as FalkorDB); allShortestPaths only in MATCH (refused)
CREATE (:SP {k:1})-[:R]->(:SP {k:2})-[:R]->(:SP {k:3})-[:R]->(:SP {k:4})-[:R]->(:SP {k:5}), (:SP {k:6})
MATCH (a:SP {k:1}), (b:SP {k:3}) CREATE (a)-[:S]->(b)
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[*]->(b)))
MATCH (a:SP {k:1}), (b:SP {k:5}) WITH shortestPath((a)-[:R*]->(b)) AS p RETURN length(p), size(nodes(p)), size(relationships(p))
MATCH (a:SP {k:1}), (b:SP {k:5}) WITH shortestPath((a)-[*]->(b)) AS p UNWIND relationships(p) AS r RETURN type(r)
MATCH (a:SP {k:1}), (b:SP {k:5}) WITH shortestPath((a)-[*]->(b)) AS p UNWIND nodes(p) AS n RETURN n.k ORDER BY n.k
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN shortestPath((a)-[*..2]->(b)) IS NULL
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[:R*1..4]->(b)))
MATCH (a:SP {k:1}), (b:SP {k:6}) RETURN shortestPath((a)-[*]->(b)) IS NULL
MATCH (a:SP {k:5}), (b:SP {k:1}) RETURN length(shortestPath((b)<-[*]-(a)))
MATCH (a:SP {k:5}), (b:SP {k:1}) RETURN shortestPath((a)-[*]->(b)) IS NULL
MATCH (a:SP), (b:SP {k:5}) RETURN a.k, length(shortestPath((a)-[*]->(b))) ORDER BY a.k
MATCH (a:SP {k:2}), (b:SP {k:2}) RETURN shortestPath((a)-[*0..]->(b)) IS NULL
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[*2..]->(b)))
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[*]-(b)))
MATCH (a:SP {k:1}), (b:SP {k:5}) MATCH p = shortestPath((a)-[*]->(b)) RETURN length(p)
MATCH (a:SP {k:1}), (b:SP {k:5}) MATCH p = allShortestPaths((a)-[*]->(b)) RETURN length(p)
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[* {x:1}]->(b)))
MATCH (a:SP {k:1}), (b:SP {k:5}) RETURN length(shortestPath((a)-[*]->(c)-[*]->(b)))
// Named paths (p = ... in MATCH; refused in CREATE, as FalkorDB's 'p' not defined)
MATCH p = (a:SP {k:1})-[*1..3]->(b) RETURN length(p) AS l, b.k AS k ORDER BY k, l
MATCH p = (a:SP {k:1})-[:R]->(b) RETURN length(p), size(nodes(p)), size(relationships(p))
MATCH p = (a:SP {k:3})<-[:R]-(b) UNWIND nodes(p) AS n RETURN n.k
MATCH p = (a:SP {k:1})-[*2]->(b) UNWIND relationships(p) AS r RETURN type(r), b.k
MATCH p = (a:SP {k:6}) RETURN length(p), size(nodes(p))
OPTIONAL MATCH p = (a:SP {k:9})-->(b) RETURN p
MATCH p = (a:SP {k:1})-[:S]->(b), q = (b)-[:R]->(c) RETURN length(p) + length(q), c.k
MATCH p = (a:SP)-[:R*]->(b:SP {k:5}) WHERE length(p) > 2 RETURN a.k, length(p) ORDER BY a.k
MATCH p = (a:SP {k:2})-[:R]-(b) RETURN b.k, length(p) ORDER BY b.k
MATCH p = (a:SP {k:1})-[:R]->(b) WITH p, b RETURN b.k, length(p)
MATCH p = (a:SP {k:1})-[:R*1..2]->(b) RETURN count(p)
MATCH p = (a:SP {k:4})-[:R]->(b) RETURN startNode(relationships(p)[0]).k, nodes(p)[1].k
CREATE p = (:X)-[:R]->(:X) RETURN length(p)
// List comprehensions: [x IN list], [x IN list WHERE p], [x IN list | e], both, nested
RETURN [x IN range(1, 10) WHERE x % 2 = 0 | x * 10] AS both, [x IN [1, 2, 3] WHERE x > 1] AS filtered, [x IN [1, 2, 3] | x + 1] AS mapped, [x IN ['a', 'b']] AS bare
RETURN [x IN [] | x] AS empty, [x IN null | x] AS nothing, [x IN [1, null, 3] WHERE x > 1] AS nulls
RETURN [x IN [[1, 2], [3]] | [y IN x | y * 2]] AS nested, size([x IN range(1, 100) WHERE x % 7 = 0]) AS sevens
WITH 7 AS x RETURN [x IN [1, 2] | x] AS inner, x AS outer
RETURN [x IN 5 | x]
RETURN [x IN [1, 2] WHERE 1]
CREATE (:LC {k:1, tags:['a','b','c']})-[:T {w:1}]->(:LC {k:2, tags:['b']})-[:T {w:2}]->(:LC {k:3}), (:LC {k:1})-[:U]->(:LC {k:4})
MATCH (n:LC) RETURN n.k, [t IN n.tags WHERE t <> 'b' | toUpper(t)] AS up ORDER BY n.k, size(up)
MATCH (n:LC) WITH n ORDER BY n.k WITH collect(n.k) AS ks RETURN [k IN ks WHERE k > 1 | k * k] AS squares
MATCH (n:LC) RETURN [k IN collect(n.k) WHERE k < 3] AS small
MATCH (n:LC) WHERE size([t IN n.tags WHERE t = 'b']) > 0 RETURN n.k ORDER BY n.k
UNWIND [x IN range(1, 5) | x * x] AS sq RETURN sum(sq)
// Pattern comprehensions: [(a)-[:R]->(b) WHERE p | e]. Two in one projection use different
// variables: FalkorDB answers the second wrongly when they share names (docs/graph.md).
MATCH (a:LC) RETURN a.k, [(a)-[:T]->(b) | b.k] AS next ORDER BY a.k, size(next)
MATCH (a:LC) RETURN a.k, [(a)-->(b) WHERE b.k > 2 | b.k] AS far ORDER BY a.k, size(far)
MATCH (a:LC) RETURN a.k, [(a)-[r]->(b) WHERE r.w = 2 | type(r)] AS ty ORDER BY a.k, size(ty)
MATCH (a:LC) RETURN a.k, [(a)<-[:T]-(b) | b.k + 100] AS prev, size([(a)-[:T*1..2]->(c) | c.k]) AS reach ORDER BY a.k, reach
MATCH (a:LC) RETURN a.k, [p = (a)-[:T]->() | length(p)] AS lens ORDER BY a.k, size(lens)
MATCH (a:LC {k:2}) RETURN size([(a)-[r:T]-(b:LC) | r.w * b.k]) AS prods, [(a)-[s:T]-(c:LC) WHERE c.k = 3 | s.w * c.k] AS three
// allShortestPaths (MATCH, ends bound by an earlier clause) and GRAPH.PROFILE (`PROFILE `)
CREATE (a:ASP {v:1}), (b:ASP {v:2}), (c:ASP {v:3}), (d:ASP {v:4}), (e:ASP {v:5}), (f:ASP {v:6}), (g:ASP {v:7}), (a)-[:R]->(b), (a)-[:R]->(c), (b)-[:R]->(d), (c)-[:R]->(d), (d)-[:S]->(e), (a)-[:S]->(f), (f)-[:S]->(e), (e)-[:R]->(a)
MATCH (a:ASP {v:1}), (b:ASP {v:4}) WITH a, b MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN [n IN nodes(p) | n.v] AS vs, length(p) AS len ORDER BY vs
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*]->(b)) RETURN [n IN nodes(p) | n.v] AS vs, [r IN relationships(p) | type(r)] AS ts ORDER BY vs
MATCH (a:ASP {v:2}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*]->(b)) RETURN [n IN nodes(p) | n.v] AS vs ORDER BY vs
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*]-(b)) RETURN [n IN nodes(p) | n.v] AS vs ORDER BY vs
MATCH (a:ASP {v:4}), (b:ASP {v:1}) WITH a, b MATCH p = allShortestPaths((a)-[*]-(b)) RETURN [n IN nodes(p) | n.v] AS vs ORDER BY vs
MATCH (a:ASP {v:4}), (b:ASP {v:1}) WITH a, b MATCH p = allShortestPaths((a)<-[:R*]-(b)) RETURN [n IN nodes(p) | n.v] AS vs ORDER BY vs
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)<-[*]-(b)) RETURN [n IN nodes(p) | n.v] AS vs
MATCH (a:ASP {v:5}), (b:ASP {v:6}) WITH a, b MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN p
MATCH (a:ASP {v:1}), (b:ASP {v:7}) WITH a, b MATCH p = allShortestPaths((a)-[*]-(b)) RETURN count(p)
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*..1]->(b)) RETURN count(p)
MATCH (a:ASP {v:1}), (b:ASP {v:4}) WITH a, b MATCH p = allShortestPaths((a)-[:R*..2]->(b)) RETURN count(p)
MATCH (a:ASP), (b:ASP) WITH a, b MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN a.v, b.v, length(p) ORDER BY a.v, b.v
MATCH (a:ASP), (b:ASP) WITH a, b MATCH p = allShortestPaths((a)-[:R|S*]-(b)) RETURN a.v, b.v, count(p) AS n, min(length(p)) AS len ORDER BY a.v, b.v
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[:R|S*]->(b)) WHERE length(p) > 1 RETURN count(p)
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b OPTIONAL MATCH p = allShortestPaths((a)-[:X*]->(b)) RETURN a.v, p
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH allShortestPaths((a)-[*]->(b:ASP)) RETURN a.v, b.v
MATCH (a:ASP {v:1}) WITH a MATCH p = allShortestPaths((a)-[*]->(a)) RETURN length(p), size(nodes(p))
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[* {w:1}]->(b)) RETURN count(p)
MATCH (a:ASP {v:1}), (b:ASP {v:5}) MATCH p = allShortestPaths((a)-[*]->(b)) RETURN p
MATCH p = allShortestPaths((a:ASP {v:1})-[*]->(b:ASP {v:5})) RETURN p
MATCH (a:ASP {v:1}) WITH a MATCH p = allShortestPaths((a)-[*]->(b)) RETURN p
MATCH (a:ASP {v:1}), (b:ASP {v:5}) RETURN allShortestPaths((a)-[*]->(b))
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*2..]->(b)) RETURN p
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*0..]->(b)) RETURN p
MATCH (a:ASP {v:1}), (b:ASP {v:5}) WITH a, b MATCH p = allShortestPaths((a)-[*]->(c)-[*]->(b)) RETURN p
MATCH (a:ASP {v:1}), (b:ASP {v:5}) UNWIND [1, 2] AS x MATCH p = allShortestPaths((a)-[*]->(b)) RETURN x, length(p) ORDER BY x
MATCH (a:ASP {v:1}) WITH a MATCH (b:ASP {v:5}) MATCH p = allShortestPaths((a)-[*]->(b)) RETURN length(p)
MATCH (a:ASP {v:1}) WITH a MATCH (b:ASP {v:4}) OPTIONAL MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN length(p)
MATCH (a:ASP {v:1}), (b:ASP {v:4}) WITH * MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN count(p)
PROFILE MATCH (n:ASP) WHERE n.v > 2 RETURN n.v ORDER BY n.v
PROFILE MATCH (n:ASP {v:1}) RETURN n.v
PROFILE MATCH (a:ASP)-[:R]->(b) RETURN a.v, b.v
PROFILE MATCH (a:ASP)-[r:S]->(b:ASP) RETURN a.v, type(r), b.v
PROFILE MATCH (a:ASP {v:1})-[:R*1..3]->(b) RETURN b.v
PROFILE MATCH (n:ASP) RETURN n.v ORDER BY n.v SKIP 1 LIMIT 2
PROFILE MATCH (n:ASP) RETURN DISTINCT n.v % 2 AS odd
PROFILE MATCH (n:ASP) WITH n.v AS v WHERE v > 2 RETURN v
PROFILE MATCH (n:ASP) RETURN n.v % 2 AS k, count(*) AS c ORDER BY k
PROFILE MATCH (a:ASP) WITH a OPTIONAL MATCH (a)-[:S]->(b) RETURN a.v, b.v
PROFILE CALL db.labels()
PROFILE UNWIND range(1, 3) AS x CREATE (:PF {x: x})
PROFILE UNWIND range(4, 5) AS x CREATE (t:PF {x: x}) RETURN t.x
PROFILE MATCH (t:PF) WHERE t.x < 3 SET t.y = 1
PROFILE MATCH (t:PF) WHERE t.x > 3 SET t.y = 2 RETURN t.x, t.y ORDER BY t.x
MATCH (t:PF) RETURN t.x, t.y ORDER BY t.x
PROFILE MATCH (t:PF) DELETE t
MATCH (t:PF) RETURN count(t)
PROFILE MATCH (a:ASP {v:1}) WITH a MATCH (b:ASP {v:4}) WITH a, b MATCH p = allShortestPaths((a)-[:R*]->(b)) RETURN length(p)
PROFILE MATCH (n RETURN n
