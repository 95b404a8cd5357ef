//! The GEO reads on one shard's keyspace, with Redis 7.0's replies: GEOPOS, GEODIST,
//! GEOHASH, the searches (GEOSEARCH, GEORADIUS and their forms) and what the STORE
//! forms store. A geospatial index is a sorted set of geohash scores
//! (`engine::kv::geohash`), so these read its members and their score order as ZRANGE
//! does; GEOADD is a ZADD (`command::geo`). Must never: write (the STORE forms write
//! through `store_zset`, as ZRANGESTORE does), or answer a point Redis would not.

use bytes::Bytes;

use super::KvEngine;
use super::elements::Elements;
use super::geohash::{self, Shape};
use super::score_order::ScoreBound;
use super::zset_query::Scored;
use super::zsets::order_of;
use crate::command::geo::{GeoCentre, GeoOrder, GeoQuery, GeoSearch};
use crate::protocol::Frame;

/// A member a search found.
struct Found {
    member: Bytes,
    score: f64,
    /// From the centre, meters.
    meters: f64,
    longitude: f64,
    latitude: f64,
}

fn coordinates(longitude: f64, latitude: f64) -> Frame {
    let text = |v: f64| Frame::DoubleText(Bytes::from(geohash::format_coordinate(v)));
    Frame::Array(vec![text(longitude), text(latitude)])
}

fn distance(meters: f64, unit: f64) -> Frame {
    Frame::Bulk(Bytes::from(geohash::format_distance(meters / unit)))
}

/// The members `search` finds around `centre`, in reply order and at most COUNT of
/// them, as Redis's `membersOfAllNeighbors` finds them: cell by cell, each cell's
/// members by score, each kept if the shape holds its point; with ANY, the first COUNT
/// found.
fn find(members: &Elements, search: &GeoSearch, centre: (f64, f64)) -> Vec<Found> {
    let shape = Shape { centre, kind: search.kind, unit: search.unit };
    let limit = if search.any { search.count as usize } else { usize::MAX };
    let order = order_of(members);
    let mut found = Vec::new();
    for cell in geohash::search_cells(&shape) {
        if found.len() >= limit {
            break;
        }
        let (min, max) = cell.score_range();
        let cell_members = order.by_score(ScoreBound { value: min, exclusive: false }, ScoreBound { value: max, exclusive: true }, false);
        for (score, member) in cell_members {
            let (longitude, latitude) = geohash::decode(score);
            if let Some(meters) = geohash::within(&shape, longitude, latitude) {
                found.push(Found { member: Bytes::copy_from_slice(member), score, meters, longitude, latitude });
                if found.len() >= limit {
                    break;
                }
            }
        }
    }
    match search.order {
        GeoOrder::Unsorted => {}
        GeoOrder::Nearest => found.sort_by(|a, b| a.meters.total_cmp(&b.meters)),
        GeoOrder::Farthest => found.sort_by(|a, b| b.meters.total_cmp(&a.meters)),
    }
    if search.count != 0 {
        found.truncate(search.count as usize);
    }
    found
}

/// A search's centre on this key, or the error for a member it does not hold.
fn centre_of(members: &Elements, centre: &GeoCentre) -> Result<(f64, f64), Frame> {
    match centre {
        GeoCentre::Point(x, y) => Ok((*x, *y)),
        GeoCentre::Member(member) => match members.get(member) {
            Some(element) => Ok(geohash::decode(element.score())),
            None => Err(Frame::static_error("ERR could not decode requested zset member")),
        },
    }
}

fn search_reply(found: Vec<Found>, search: &GeoSearch) -> Frame {
    let plain = !(search.with_dist || search.with_hash || search.with_coord);
    Frame::Array(
        found
            .into_iter()
            .map(|f| {
                if plain {
                    return Frame::Bulk(f.member);
                }
                let mut item = vec![Frame::Bulk(f.member)];
                if search.with_dist {
                    item.push(distance(f.meters, search.unit));
                }
                if search.with_hash {
                    item.push(Frame::Integer(f.score as i64));
                }
                if search.with_coord {
                    item.push(coordinates(f.longitude, f.latitude));
                }
                Frame::Array(item)
            })
            .collect(),
    )
}

impl KvEngine {
    /// A GEO read of one key; WRONGTYPE for a key of another type.
    pub fn geo_read(&mut self, query: GeoQuery, now_ms: u64) -> Result<Frame, Frame> {
        let members = self.zset_members(query.key(), now_ms)?;
        Ok(match query {
            GeoQuery::Pos { members: names, .. } => Frame::Array(
                names
                    .iter()
                    .map(|name| match members.and_then(|z| z.get(name)) {
                        Some(element) => {
                            let (longitude, latitude) = geohash::decode(element.score());
                            coordinates(longitude, latitude)
                        }
                        None => Frame::NullArray,
                    })
                    .collect(),
            ),
            GeoQuery::Hash { members: names, .. } => Frame::Array(
                names
                    .iter()
                    .map(|name| match members.and_then(|z| z.get(name)) {
                        Some(element) => Frame::Bulk(Bytes::copy_from_slice(&geohash::standard_geohash(element.score()))),
                        None => Frame::Null,
                    })
                    .collect(),
            ),
            GeoQuery::Dist { from, to, unit, .. } => {
                let at = |name: &Bytes| members.and_then(|z| z.get(name)).map(|e| geohash::decode(e.score()));
                match (at(&from), at(&to)) {
                    (Some((x1, y1)), Some((x2, y2))) => distance(geohash::distance(x1, y1, x2, y2), unit),
                    _ => Frame::Null,
                }
            }
            GeoQuery::Search(search) => {
                let Some(members) = members else { return Ok(Frame::Array(Vec::new())) };
                let centre = centre_of(members, &search.centre)?;
                search_reply(find(members, &search, centre), &search)
            }
        })
    }

    /// What a STORE search puts in its destination: the members found, scored by their
    /// geohash or (`distances`, STOREDIST) their distance in the search's unit; empty for
    /// a missing key (the destination is then deleted, as in Redis).
    pub fn geo_matches(&mut self, search: &GeoSearch, distances: bool, now_ms: u64) -> Result<Vec<Scored>, Frame> {
        let Some(members) = self.zset_members(&search.key, now_ms)? else { return Ok(Vec::new()) };
        let centre = centre_of(members, &search.centre)?;
        Ok(find(members, search, centre)
            .into_iter()
            .map(|f| {
                let score = if distances { f.meters / search.unit } else { f.score };
                (f.member, score)
            })
            .collect())
    }
}
