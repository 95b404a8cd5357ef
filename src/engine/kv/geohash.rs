//! The geohash arithmetic behind the GEO commands, as Redis 7.0 does it, so that every
//! score, position, distance and search area is the same number Redis computes: a
//! point is a 52-bit interleaved geohash (26 bits of latitude, 26 of longitude) stored
//! as a sorted set member's score; latitudes are limited to the Web Mercator range
//! (±85.05112878°); distances are haversine on a sphere of 6,372,797.560856 m; a
//! search looks at the geohash cell around its centre and the eight cells around that,
//! at a precision chosen from the search's radius. Hand-written, not a crate: the
//! replies must match Redis's to the last digit, which needs its exact ranges, step
//! estimate and neighbour rules (crates encode to base32 over ±90° and agree with
//! none of these numbers).
//!
//! Pure functions: no I/O, no state. Must never: accept a point outside the ranges
//! (callers check with [`valid_point`]), or decode a score into a point Redis would
//! not (the round trip `score_of` → [`decode`] is Redis's cell centre).

/// Bits of precision for each coordinate (26 × 2 = 52 bits: what a double holds exactly).
pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// Earth's quadratic mean radius for WGS-84, as Redis uses it.
pub const EARTH_RADIUS_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(degrees: f64) -> f64 {
    degrees * DEG_TO_RAD
}

fn rad_deg(radians: f64) -> f64 {
    radians / DEG_TO_RAD
}

/// A geohash of `step` bits per coordinate (`bits` holds 2 × `step` of them).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    const NONE: Cell = Cell { bits: 0, step: 0 };

    fn is_none(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The sorted set scores of the points in this cell: `[min, max)`.
    pub fn score_range(self) -> (f64, f64) {
        let shift = 52 - 2 * u32::from(self.step);
        ((self.bits << shift) as f64, ((self.bits + 1) << shift) as f64)
    }
}

/// A coordinate range, degrees.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The area a cell covers.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

const MERCATOR_LONG: Range = Range { min: LONG_MIN, max: LONG_MAX };
const MERCATOR_LAT: Range = Range { min: LAT_MIN, max: LAT_MAX };

/// Whether a longitude/latitude pair can be indexed.
pub fn valid_point(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// Spread the low 32 bits of `x` to the even bit positions.
fn spread(x: u32) -> u64 {
    let mut x = u64::from(x);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gather the even bit positions of `x` into its low 32 bits.
fn gather(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) as u32
}

/// The cell of `step` bits holding a point, over the given ranges (latitude in the even
/// bits, longitude in the odd), or `None` outside them.
fn encode_in(long_range: Range, lat_range: Range, longitude: f64, latitude: f64, step: u8) -> Option<Cell> {
    debug_assert!((1..=32).contains(&step));
    if !valid_point(longitude, latitude) || !(lat_range.min..=lat_range.max).contains(&latitude) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    // As C converts a double to uint32_t: truncation (the offsets are never negative).
    let lat_offset = ((latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale) as u32;
    let long_offset = ((longitude - long_range.min) / (long_range.max - long_range.min) * scale) as u32;
    Some(Cell { bits: spread(lat_offset) | (spread(long_offset) << 1), step })
}

/// The cell of `step` bits holding a point of the indexable range.
pub fn encode(longitude: f64, latitude: f64, step: u8) -> Option<Cell> {
    encode_in(MERCATOR_LONG, MERCATOR_LAT, longitude, latitude, step)
}

/// The score a point is stored at (its 52-bit cell).
pub fn score_of(longitude: f64, latitude: f64) -> Option<f64> {
    encode(longitude, latitude, STEP_MAX).map(|cell| cell.bits as f64)
}

/// The area a cell covers.
pub fn area(cell: Cell) -> Area {
    let scale = (1u64 << cell.step) as f64;
    let lat = gather(cell.bits);
    let long = gather(cell.bits >> 1);
    let side = |range: Range, at: u32| Range {
        min: range.min + (f64::from(at) / scale) * (range.max - range.min),
        max: range.min + ((f64::from(at) + 1.0) / scale) * (range.max - range.min),
    };
    Area { longitude: side(MERCATOR_LONG, long), latitude: side(MERCATOR_LAT, lat) }
}

/// The point a score stands for: the centre of its cell, clamped to the ranges.
pub fn decode(score: f64) -> (f64, f64) {
    let area = area(Cell { bits: score as u64, step: STEP_MAX });
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (longitude, latitude)
}

/// GEOHASH's 11-character standard geohash of a stored score: its point re-encoded over
/// ±90° of latitude (Redis's own cells span ±85.05°), the eleventh character always
/// `0` (52 bits make ten and a half).
pub fn standard_geohash(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (longitude, latitude) = decode(score);
    let world = Range { min: -90.0, max: 90.0 };
    let bits = encode_in(MERCATOR_LONG, world, longitude, latitude, STEP_MAX).map_or(0, |cell| cell.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

/// Move a cell `d` cells east (+1) or west (-1): the odd (longitude) bits as one number.
fn moved_x(cell: Cell, d: i8) -> Cell {
    moved(cell, d, 0xaaaa_aaaa_aaaa_aaaa)
}

/// Move a cell north (+1) or south (-1): the even (latitude) bits.
fn moved_y(cell: Cell, d: i8) -> Cell {
    moved(cell, d, 0x5555_5555_5555_5555)
}

fn moved(cell: Cell, d: i8, mask: u64) -> Cell {
    // No cell (step 0) has no neighbour; its shift below would be the whole word.
    if d == 0 || cell.step == 0 {
        return cell;
    }
    let shift = 64 - 2 * u32::from(cell.step);
    let mine = cell.bits & mask;
    let other = cell.bits & !mask;
    // The other coordinate's bits, all set, carry an addition across them.
    let carry = !mask >> shift;
    let mine = if d > 0 { mine.wrapping_add(carry + 1) } else { (mine | carry).wrapping_sub(carry + 1) };
    Cell { bits: (mine & (mask >> shift)) | other, step: cell.step }
}

/// The bounding box of a search shape, degrees: `[min_lon, min_lat, max_lon, max_lat]`.
fn bounding_box(shape: &Shape) -> [f64; 4] {
    let (longitude, latitude) = shape.centre;
    let (height, width) = match shape.kind {
        ShapeKind::Radius(r) => (r * shape.unit, r * shape.unit),
        ShapeKind::Box { width, height } => (height / 2.0 * shape.unit, width / 2.0 * shape.unit),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_METERS);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom = rad_deg(width / EARTH_RADIUS_METERS / deg_rad(latitude - lat_delta).cos());
    // The widest edge is the one nearer the equator.
    let long_delta = if latitude < 0.0 { long_delta_bottom } else { long_delta_top };
    [longitude - long_delta, latitude - lat_delta, longitude + long_delta, latitude + lat_delta]
}

/// The precision (bits per coordinate) whose cells are about the search's size.
fn steps_for_radius(meters: f64, latitude: f64) -> u8 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let mut range = meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    // So that the range is inside most of the base cases.
    step -= 2;
    // Cells narrow towards the poles.
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// What a search looks for.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ShapeKind {
    /// Within this radius (in `unit`s) of the centre.
    Radius(f64),
    /// Within a box this wide and high (in `unit`s), centred on the centre.
    Box { width: f64, height: f64 },
}

/// A search area: its centre (longitude, latitude), shape and unit (meters per unit).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Shape {
    pub centre: (f64, f64),
    pub kind: ShapeKind,
    pub unit: f64,
}

/// The cells a search reads, in Redis's order: the centre's cell, then north, south,
/// east, west, north-east, north-west, south-east, south-west, leaving out the ones
/// the shape cannot reach and a neighbour equal to the neighbour read before it (a
/// huge radius makes neighbours coincide).
pub fn search_cells(shape: &Shape) -> Vec<Cell> {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let meters = match shape.kind {
        ShapeKind::Radius(r) => r,
        ShapeKind::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    } * shape.unit;
    let (longitude, latitude) = shape.centre;
    let mut steps = steps_for_radius(meters, latitude);
    let around = |steps: u8| {
        let cell = encode(longitude, latitude, steps).unwrap_or(Cell::NONE);
        (cell, [moved_y(cell, 1), moved_y(cell, -1), moved_x(cell, 1), moved_x(cell, -1)])
    };
    let (mut cell, [north, south, east, west]) = around(steps);
    // Near a cell's edge the estimate may leave part of the shape outside the eight
    // neighbours: one step coarser then.
    let short = area(north).latitude.max < max_lat
        || area(south).latitude.min > min_lat
        || area(east).longitude.max < max_lon
        || area(west).longitude.min > min_lon;
    if steps > 1 && short {
        steps -= 1;
        cell = around(steps).0;
    }
    let centre = area(cell);
    let mut north = [moved_y(cell, 1), moved_x(moved_y(cell, 1), 1), moved_x(moved_y(cell, 1), -1)];
    let mut south = [moved_y(cell, -1), moved_x(moved_y(cell, -1), 1), moved_x(moved_y(cell, -1), -1)];
    let mut east = moved_x(cell, 1);
    let mut west = moved_x(cell, -1);
    // Leave out the sides the shape does not reach.
    if steps >= 2 {
        if centre.latitude.min < min_lat {
            south = [Cell::NONE; 3];
        }
        if centre.latitude.max > max_lat {
            north = [Cell::NONE; 3];
        }
        if centre.longitude.min < min_lon {
            west = Cell::NONE;
            north[2] = Cell::NONE;
            south[2] = Cell::NONE;
        }
        if centre.longitude.max > max_lon {
            east = Cell::NONE;
            north[1] = Cell::NONE;
            south[1] = Cell::NONE;
        }
    }
    let order = [cell, north[0], south[0], east, west, north[1], north[2], south[1], south[2]];
    let mut cells: Vec<Cell> = Vec::with_capacity(order.len());
    for candidate in order {
        // As Redis: a neighbour equal to the centre is still read (the comparison
        // starts after the first neighbour read), so a point there is found twice.
        if candidate.is_none() || (cells.len() >= 2 && cells.last() == Some(&candidate)) {
            continue;
        }
        cells.push(candidate);
    }
    cells
}

/// Meters between two latitudes on one meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The great-circle distance between two points, meters (haversine).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (deg_rad(lon1), deg_rad(lon2));
    let v = ((lon2r - lon1r) / 2.0).sin();
    // The same longitude: the latitudes' difference alone, with no costly trigonometry.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_METERS * a.sqrt().asin()
}

/// A point's distance from the shape's centre in meters, if the shape holds it.
pub fn within(shape: &Shape, longitude: f64, latitude: f64) -> Option<f64> {
    let (cx, cy) = shape.centre;
    match shape.kind {
        ShapeKind::Radius(r) => {
            let d = distance(cx, cy, longitude, latitude);
            (d <= r * shape.unit).then_some(d)
        }
        ShapeKind::Box { width, height } => {
            // The latitude test is the cheaper: first.
            if lat_distance(latitude, cy) > height * shape.unit / 2.0 {
                return None;
            }
            if distance(longitude, latitude, cx, latitude) > width * shape.unit / 2.0 {
                return None;
            }
            Some(distance(cx, cy, longitude, latitude))
        }
    }
}

/// A distance as Redis writes one (GEODIST, WITHDIST): rounded to four decimals, half
/// to even (C's `llrint` of the value × 10⁴).
pub fn format_distance(d: f64) -> String {
    let scaled = (d * 10_000.0).round_ties_even() as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let magnitude = scaled.unsigned_abs();
    format!("{sign}{}.{:04}", magnitude / 10_000, magnitude % 10_000)
}

/// A coordinate as Redis writes one (GEOPOS, WITHCOORD: C's `%.17Lf` of the value,
/// trailing zeros and a trailing point dropped).
pub fn format_coordinate(value: f64) -> String {
    let mut text = format!("{value:.17}");
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    if text == "-0" { "0".to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_and_positions_are_redis_s() {
        // Redis 7.0: GEOADD Sicily 13.361389 38.115556 "Palermo" 15.087269 37.502669 "Catania"
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698.0));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909.0));
        let (lon, lat) = decode(3479099956230698.0);
        assert_eq!(format_coordinate(lon), "13.36138933897018433");
        assert_eq!(format_coordinate(lat), "38.11555639549629859");
        let (lon2, lat2) = decode(3479447370796909.0);
        assert_eq!(format_distance(distance(lon, lat, lon2, lat2)), "166274.1516");
        assert_eq!(format_distance(distance(lon, lat, lon2, lat2) / 1000.0), "166.2742");
        assert_eq!(&standard_geohash(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&standard_geohash(3479447370796909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn out_of_range_points_are_refused() {
        assert!(!valid_point(180.1, 0.0));
        assert!(!valid_point(0.0, 85.06));
        assert!(valid_point(-180.0, -85.05112878));
        assert_eq!(score_of(0.0, 86.0), None);
    }

    #[test]
    fn interleaving_round_trips() {
        for x in [0u32, 1, 0x3ff_ffff, 0x155_5555, 12345] {
            assert_eq!(gather(spread(x)), x);
            assert_eq!(gather(spread(x) << 1 >> 1), x);
        }
    }

    #[test]
    fn neighbours_move_one_cell() {
        let cell = encode(13.361389, 38.115556, 10).unwrap();
        let here = area(cell);
        let east = area(moved_x(cell, 1));
        let north = area(moved_y(cell, 1));
        assert!((east.longitude.min - here.longitude.max).abs() < 1e-9);
        assert!((north.latitude.min - here.latitude.max).abs() < 1e-9);
        assert_eq!(moved_x(moved_x(cell, 1), -1), cell);
        assert_eq!(moved_y(moved_y(cell, -1), 1), cell);
    }

    #[test]
    fn extreme_searches_read_some_cells_and_never_panic() {
        for kind in [ShapeKind::Radius(0.0), ShapeKind::Radius(1e308), ShapeKind::Box { width: 1e308, height: 0.0 }] {
            for centre in [(0.0, 0.0), (LONG_MAX, LAT_MAX), (LONG_MIN, LAT_MIN)] {
                let cells = search_cells(&Shape { centre, kind, unit: 1609.34 });
                assert!((1..=9).contains(&cells.len()), "{kind:?} at {centre:?}: {cells:?}");
            }
        }
        assert_eq!(moved_x(Cell::NONE, 1), Cell::NONE);
    }

    #[test]
    fn a_search_reads_the_cells_around_its_centre() {
        let shape = Shape { centre: (15.0, 37.0), kind: ShapeKind::Radius(200.0), unit: 1000.0 };
        let cells = search_cells(&shape);
        assert!(!cells.is_empty() && cells.len() <= 9);
        // Every point of the shape lies in a cell read.
        for (lon, lat) in [(13.361389, 38.115556), (15.087269, 37.502669), (15.0, 35.3)] {
            if within(&shape, lon, lat).is_some() {
                let score = score_of(lon, lat).unwrap();
                assert!(cells.iter().any(|c| {
                    let (min, max) = c.score_range();
                    (min..max).contains(&score)
                }));
            }
        }
    }

    #[test]
    fn distances_and_coordinates_print_as_redis_prints_them() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.00005), "0.0000");
        assert_eq!(format_distance(1.23456), "1.2346");
        assert_eq!(format_coordinate(0.0), "0");
        assert_eq!(format_coordinate(-0.0), "0");
        assert_eq!(format_coordinate(2.5), "2.5");
    }
}
