//! The GEO commands: their typed form and their parser, with Redis 7.0's argument
//! checks in its order and its error texts. A geospatial index is a sorted set whose
//! scores are 52-bit geohashes (`engine::kv::geohash`), so GEOADD parses into a ZADD
//! and converges across regions as a sorted set does; the reads (GEOPOS, GEODIST,
//! GEOHASH, GEOSEARCH, GEORADIUS and their forms) are [`ZsetCommand::Geo`]s run by the
//! engine (`engine::kv::geo`), and the STORE forms are [`ZsetMulti::GeoStore`]s, run
//! where their two keys live as ZRANGESTORE is.

use bytes::Bytes;

use super::errors;
use super::numbers::{parse_f64, parse_i64};
use super::parse::take;
use super::table::CmdId;
use super::zset::{ZAddFlags, ZsetCommand, ZsetMulti};
use super::{Command, KeyCommand, MultiKeyCommand};
use crate::engine::kv::geohash::{self, ShapeKind};
use crate::protocol::Frame;

/// A GEO read of one key.
#[derive(Clone, Debug, PartialEq)]
pub enum GeoQuery {
    /// GEOPOS: each member's position, or a null array.
    Pos { key: Bytes, members: Vec<Bytes> },
    /// GEODIST: the distance between two members in `unit`s (meters per unit).
    Dist { key: Bytes, from: Bytes, to: Bytes, unit: f64 },
    /// GEOHASH: each member's 11-character geohash, or a null.
    Hash { key: Bytes, members: Vec<Bytes> },
    /// GEOSEARCH, GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms.
    Search(GeoSearch),
}

impl GeoQuery {
    pub fn key(&self) -> &Bytes {
        match self {
            GeoQuery::Pos { key, .. } | GeoQuery::Dist { key, .. } | GeoQuery::Hash { key, .. } => key,
            GeoQuery::Search(search) => &search.key,
        }
    }
}

/// Where a search is centred.
#[derive(Clone, Debug, PartialEq)]
pub enum GeoCentre {
    Point(f64, f64),
    /// A member's position (an error if the key holds no such member).
    Member(Bytes),
}

/// How a search's results are ordered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GeoOrder {
    /// As found (cell by cell, by score within a cell).
    Unsorted,
    Nearest,
    Farthest,
}

/// A search: what it looks for and what it answers.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoSearch {
    pub key: Bytes,
    pub centre: GeoCentre,
    pub kind: ShapeKind,
    /// Meters per unit of the radius, width and height, and of reported distances.
    pub unit: f64,
    pub with_dist: bool,
    pub with_hash: bool,
    pub with_coord: bool,
    pub order: GeoOrder,
    /// The most results answered (0: all).
    pub count: u64,
    /// Stop at the first `count` found rather than the nearest `count`.
    pub any: bool,
}

/// Where a search's results are stored (STORE/STOREDIST, GEOSEARCHSTORE): the
/// destination, and whether as distances (STOREDIST) or as positions (the members'
/// scores).
#[derive(Clone, Debug, PartialEq)]
pub struct GeoStore {
    pub dst: Bytes,
    pub distances: bool,
    /// The event the stored destination raises (`georadiusstore`, `geosearchstore`).
    pub event: &'static str,
}

fn float(arg: &[u8]) -> Result<f64, Frame> {
    parse_f64(arg).ok_or_else(|| errors::error(errors::NOT_FLOAT))
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A longitude and a latitude, in range.
fn point(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Frame> {
    let (x, y) = (float(lon)?, float(lat)?);
    if !geohash::valid_point(x, y) {
        return Err(Frame::error(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok((x, y))
}

/// Meters per unit.
fn unit(arg: &[u8]) -> Result<f64, Frame> {
    match () {
        _ if eq(arg, "m") => Ok(1.0),
        _ if eq(arg, "km") => Ok(1000.0),
        _ if eq(arg, "ft") => Ok(0.3048),
        _ if eq(arg, "mi") => Ok(1609.34),
        _ => Err(Frame::static_error("ERR unsupported unit provided. please use M, KM, FT, MI")),
    }
}

/// A radius and its unit.
fn radius(value: &[u8], unit_arg: &[u8]) -> Result<(ShapeKind, f64), Frame> {
    let r = parse_f64(value).ok_or_else(|| Frame::static_error("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(Frame::static_error("ERR radius cannot be negative"));
    }
    Ok((ShapeKind::Radius(r), unit(unit_arg)?))
}

/// A box's width, height and unit.
fn bounds(width: &[u8], height: &[u8], unit_arg: &[u8]) -> Result<(ShapeKind, f64), Frame> {
    let w = parse_f64(width).ok_or_else(|| Frame::static_error("ERR need numeric width"))?;
    let h = parse_f64(height).ok_or_else(|| Frame::static_error("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(Frame::static_error("ERR height or width cannot be negative"));
    }
    Ok((ShapeKind::Box { width: w, height: h }, unit(unit_arg)?))
}

/// Parse a GEO command whose arity the caller has checked against the table.
pub fn parse(id: CmdId, a: &mut [Bytes]) -> Result<Command, Frame> {
    let geo = |query: GeoQuery| Ok(Command::Key(KeyCommand::Zset(ZsetCommand::Geo(Box::new(query)))));
    match id {
        CmdId::GeoAdd => parse_geoadd(a),
        CmdId::GeoPos => geo(GeoQuery::Pos { key: take(a, 1), members: a[2..].iter_mut().map(std::mem::take).collect() }),
        CmdId::GeoHash => geo(GeoQuery::Hash { key: take(a, 1), members: a[2..].iter_mut().map(std::mem::take).collect() }),
        CmdId::GeoDist => {
            let unit = match a.len() {
                4 => 1.0,
                5 => unit(&a[4])?,
                _ => return Err(errors::error(errors::SYNTAX)),
            };
            geo(GeoQuery::Dist { key: take(a, 1), from: take(a, 2), to: take(a, 3), unit })
        }
        _ => match parse_search(id, a)? {
            (search, Some(store)) => Ok(Command::Multi(MultiKeyCommand::Zset(ZsetMulti::GeoStore { search: Box::new(search), store }))),
            (search, None) => geo(GeoQuery::Search(search)),
        },
    }
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: a ZADD of the members at
/// their geohashes.
fn parse_geoadd(a: &mut [Bytes]) -> Result<Command, Frame> {
    let mut flags = ZAddFlags::default();
    let mut at = 2;
    while at < a.len() {
        match &a[at] {
            arg if eq(arg, "nx") => flags.nx = true,
            arg if eq(arg, "xx") => flags.xx = true,
            arg if eq(arg, "ch") => flags.ch = true,
            _ => break,
        }
        at += 1;
    }
    let elements = a.len() - at;
    if elements == 0 || !elements.is_multiple_of(3) || (flags.xx && flags.nx) {
        return Err(errors::error(errors::SYNTAX));
    }
    let mut pairs = Vec::with_capacity(elements / 3);
    for triple in a[at..].chunks_mut(3) {
        let (x, y) = point(&triple[0], &triple[1])?;
        let score = geohash::score_of(x, y).expect("a point in range has a geohash");
        pairs.push((score, take(triple, 2)));
    }
    Ok(Command::Key(KeyCommand::Zset(ZsetCommand::Add { key: take(a, 1), flags, pairs })))
}

/// The search commands, by Redis's `georadiusGeneric`: the fixed arguments, then the
/// options in any order, then the checks across them; with where to store the results
/// for the STORE forms.
fn parse_search(id: CmdId, a: &[Bytes]) -> Result<(GeoSearch, Option<GeoStore>), Frame> {
    let by_member = matches!(id, CmdId::GeoRadiusByMember | CmdId::GeoRadiusByMemberRo);
    let search_form = matches!(id, CmdId::GeoSearch | CmdId::GeoSearchStore);
    let stores = matches!(id, CmdId::GeoRadius | CmdId::GeoRadiusByMember);
    let (key, first_option) = match id {
        CmdId::GeoSearchStore => (a[2].clone(), 3),
        CmdId::GeoSearch => (a[1].clone(), 2),
        _ if by_member => (a[1].clone(), 5),
        _ => (a[1].clone(), 6),
    };
    let mut centre = None;
    let mut shape = None;
    if matches!(id, CmdId::GeoRadius | CmdId::GeoRadiusRo) {
        let (x, y) = point(&a[2], &a[3])?;
        centre = Some(GeoCentre::Point(x, y));
        shape = Some(radius(&a[4], &a[5])?);
    } else if by_member {
        centre = Some(GeoCentre::Member(a[2].clone()));
        shape = Some(radius(&a[3], &a[4])?);
    }
    let event = if search_form { "geosearchstore" } else { "georadiusstore" };
    let mut store = (id == CmdId::GeoSearchStore).then(|| GeoStore { dst: a[1].clone(), distances: false, event });
    let (mut with_dist, mut with_hash, mut with_coord, mut any) = (false, false, false, false);
    let mut order = GeoOrder::Unsorted;
    let mut count: u64 = 0;
    let options = &a[first_option..];
    let mut i = 0;
    while i < options.len() {
        let arg = &options[i];
        let left = options.len() - i - 1;
        if eq(arg, "withdist") {
            with_dist = true;
        } else if eq(arg, "withhash") {
            with_hash = true;
        } else if eq(arg, "withcoord") {
            with_coord = true;
        } else if eq(arg, "any") {
            any = true;
        } else if eq(arg, "asc") {
            order = GeoOrder::Nearest;
        } else if eq(arg, "desc") {
            order = GeoOrder::Farthest;
        } else if eq(arg, "count") && left >= 1 {
            let n = parse_i64(&options[i + 1]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
            if n <= 0 {
                return Err(Frame::static_error("ERR COUNT must be > 0"));
            }
            count = n as u64;
            i += 1;
        } else if (eq(arg, "store") || eq(arg, "storedist")) && left >= 1 && stores {
            store = Some(GeoStore { dst: options[i + 1].clone(), distances: eq(arg, "storedist"), event });
            i += 1;
        } else if eq(arg, "storedist") && id == CmdId::GeoSearchStore {
            store = Some(GeoStore { dst: a[1].clone(), distances: true, event });
        } else if eq(arg, "frommember") && left >= 1 && search_form && !matches!(centre, Some(GeoCentre::Point(..))) {
            centre = Some(GeoCentre::Member(options[i + 1].clone()));
            i += 1;
        } else if eq(arg, "fromlonlat") && left >= 2 && search_form && !matches!(centre, Some(GeoCentre::Member(_))) {
            let (x, y) = point(&options[i + 1], &options[i + 2])?;
            centre = Some(GeoCentre::Point(x, y));
            i += 2;
        } else if eq(arg, "byradius") && left >= 2 && search_form && !matches!(shape, Some((ShapeKind::Box { .. }, _))) {
            shape = Some(radius(&options[i + 1], &options[i + 2])?);
            i += 2;
        } else if eq(arg, "bybox") && left >= 3 && search_form && !matches!(shape, Some((ShapeKind::Radius(_), _))) {
            shape = Some(bounds(&options[i + 1], &options[i + 2], &options[i + 3])?);
            i += 3;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    if store.is_some() && (with_dist || with_hash || with_coord) {
        let what = if id == CmdId::GeoSearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(Frame::error(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")));
    }
    // Redis names the command as the client spelled it.
    let name = String::from_utf8_lossy(&a[0]);
    let Some(centre) = centre else {
        return Err(Frame::error(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}")));
    };
    let Some((kind, unit)) = shape else {
        return Err(Frame::error(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}")));
    };
    if any && count == 0 {
        return Err(Frame::static_error("ERR the ANY argument requires COUNT argument"));
    }
    // COUNT without an order means the nearest COUNT (not with ANY: the first found).
    if count != 0 && order == GeoOrder::Unsorted && !any {
        order = GeoOrder::Nearest;
    }
    Ok((GeoSearch { key, centre, kind, unit, with_dist, with_hash, with_coord, order, count, any }, store))
}
