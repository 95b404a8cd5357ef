//! Vector distances (L2 squared, inner product, cosine) over `f32` slices, in SIMD.
//!
//! Owns only arithmetic: no state, no allocation. The portable kernels keep 16
//! independent accumulators so the compiler turns the loop into SIMD lanes (a plain
//! `iter().sum()` is a serial dependency chain it may not reorder); on x86-64 the same
//! kernel is also compiled with AVX2+FMA and chosen at run time when the CPU has them.
//! Which is faster was measured, not assumed: see docs/vector.md ("Distances").
//!
//! Every metric is a distance (smaller is nearer), as RediSearch reports it: L2 is the
//! squared Euclidean distance, IP is `1 - a·b`, COSINE is `1 - a·b` over vectors that
//! the index normalised when they were stored.

/// Lanes of the unrolled kernels: two AVX registers of f32.
const LANES: usize = 16;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    L2,
    Ip,
    Cosine,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "L2",
            Metric::Ip => "IP",
            Metric::Cosine => "COSINE",
        }
    }

    /// The distance between a stored vector and a query (both normalised for COSINE).
    #[inline]
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Metric::L2 => l2_squared(a, b),
            Metric::Ip | Metric::Cosine => 1.0 - dot(a, b),
        }
    }
}

macro_rules! kernels {
    ($dot:ident, $l2:ident, $fma:expr) => {
        #[inline(always)]
        fn $dot(a: &[f32], b: &[f32]) -> f32 {
            let mut acc = [0f32; LANES];
            let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
            let (ra, rb) = (ca.remainder(), cb.remainder());
            for (x, y) in ca.zip(cb) {
                for i in 0..LANES {
                    acc[i] = if $fma { x[i].mul_add(y[i], acc[i]) } else { acc[i] + x[i] * y[i] };
                }
            }
            let mut sum: f32 = acc.iter().sum();
            for (x, y) in ra.iter().zip(rb) {
                sum += x * y;
            }
            sum
        }

        #[inline(always)]
        fn $l2(a: &[f32], b: &[f32]) -> f32 {
            let mut acc = [0f32; LANES];
            let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
            let (ra, rb) = (ca.remainder(), cb.remainder());
            for (x, y) in ca.zip(cb) {
                for i in 0..LANES {
                    let d = x[i] - y[i];
                    acc[i] = if $fma { d.mul_add(d, acc[i]) } else { acc[i] + d * d };
                }
            }
            let mut sum: f32 = acc.iter().sum();
            for (x, y) in ra.iter().zip(rb) {
                sum += (x - y) * (x - y);
            }
            sum
        }
    };
}

kernels!(dot_portable, l2_portable, false);

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::LANES;
    kernels!(dot_body, l2_body, true);

    /// # Safety
    /// The CPU must support AVX2 and FMA (checked by the caller).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        dot_body(a, b)
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA (checked by the caller).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn l2(a: &[f32], b: &[f32]) -> f32 {
        l2_body(a, b)
    }
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    // `is_x86_feature_detected!` caches its answer; it reads the CPU, not the world.
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// The dot product.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        return unsafe { avx2::dot(a, b) };
    }
    dot_portable(a, b)
}

/// The squared Euclidean distance.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        return unsafe { avx2::l2(a, b) };
    }
    l2_portable(a, b)
}

/// The portable kernels and a naive loop, for the measurement in docs/vector.md.
pub mod variants {
    pub fn dot_naive(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }
    pub fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
        super::dot_portable(a, b)
    }
    pub fn l2_portable(a: &[f32], b: &[f32]) -> f32 {
        super::l2_portable(a, b)
    }
}

/// Scale `v` to unit length (a zero vector stays zero: its cosine distance to anything
/// is then 1, as RediSearch's).
pub fn normalize(v: &mut [f32]) {
    let norm = dot_portable(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_kernels_agree_with_the_naive_sums_on_odd_lengths() {
        for dim in [1usize, 3, 15, 16, 17, 33, 384, 385] {
            let a: Vec<f32> = (0..dim).map(|i| ((i * 7 % 13) as f32 - 6.0) / 5.0).collect();
            let b: Vec<f32> = (0..dim).map(|i| ((i * 5 % 11) as f32 - 5.0) / 3.0).collect();
            let naive_dot = variants::dot_naive(&a, &b);
            let naive_l2: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!((dot(&a, &b) - naive_dot).abs() <= 1e-3 * naive_dot.abs().max(1.0), "dot dim {dim}");
            assert!((l2_squared(&a, &b) - naive_l2).abs() <= 1e-3 * naive_l2.max(1.0), "l2 dim {dim}");
            assert!((dot_portable(&a, &b) - naive_dot).abs() <= 1e-3 * naive_dot.abs().max(1.0));
        }
    }

    #[test]
    fn cosine_distance_of_a_vector_to_itself_is_zero_after_normalising() {
        let mut v = vec![3.0, 4.0, 0.0];
        normalize(&mut v);
        assert!(Metric::Cosine.distance(&v, &v).abs() < 1e-6);
        assert_eq!(Metric::L2.distance(&[0.0, 0.0], &[3.0, 4.0]), 25.0);
    }
}
