//! The MiniLM test data (`../shared/data/minilm-docs`, README there) as the vector
//! examples read it: rows of 384 float16 values, little-endian, widened to f32.

pub const DIM: usize = 384;

/// The first `limit` rows of a `.f16` file, widened to f32 (not normalised).
pub fn read_rows(path: &str, limit: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes
        .chunks_exact(2 * DIM)
        .take(limit)
        .map(|row| row.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect())
        .collect()
}
