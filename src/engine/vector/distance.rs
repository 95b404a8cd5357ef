//! Vector distances (L2 squared, inner product, cosine) over `f32` and FLOAT16
//! (`half::f16`) slices, in SIMD.
//!
//! Owns only arithmetic: no state but the kernel table chosen once per process, no
//! allocation. The portable kernels keep 16 independent accumulators so the compiler
//! turns the loop into SIMD lanes (a plain `iter().sum()` is a serial dependency chain
//! it may not reorder); FLOAT16 ones widen 16 elements at a time into a stack buffer.
//! On x86-64 the f32 kernels are also written with AVX2+FMA (four 8-lane accumulators),
//! and the FLOAT16 ones with F16C's `vcvtph2ps` (8 halves to 8 floats per instruction); the table
//! ([`kernels`]) picks them at run time when the CPU has all three, once.
//! Which is faster was measured, not assumed: see docs/vector.md ("Distances").
//!
//! Every metric is a distance (smaller is nearer), as RediSearch reports it: L2 is the
//! squared Euclidean distance, IP is `1 - a·b`, COSINE is `1 - a·b` over vectors that
//! the index normalised when they were stored.

use half::f16;

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
    use half::f16;
    use std::arch::x86_64::*;

    pub fn available() -> bool {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("f16c")
    }

    /// Only reachable through `KERNELS`, which `kernels()` hands out after
    /// `available()` said yes: that is what makes these safe wrappers sound.
    pub static KERNELS: super::Kernels = super::Kernels {
        name: "avx2+fma+f16c",
        // SAFETY (all six): the CPU has AVX2, FMA and F16C (see above).
        dot: |a, b| unsafe { dot(a, b) },
        l2: |a, b| unsafe { l2(a, b) },
        dot_f16: |a, b| unsafe { f16_dot(a, b) },
        l2_f16: |a, b| unsafe { f16_l2(a, b) },
        dot_f16_f16: |a, b| unsafe { f16_f16_dot(a, b) },
        l2_f16_f16: |a, b| unsafe { f16_f16_l2(a, b) },
    };

    /// The f32 kernels: four independent 8-lane accumulators (32 elements a step), so
    /// a step is 4 loads and 4 FMAs with the other operand read from memory, and the
    /// loop runs half as many times as with two registers (12 steps at 384 dimensions
    /// instead of 24). They sum in another order than the portable kernels, so the last
    /// bits of a distance may differ between the two tables (never within a process:
    /// the table is chosen once).
    macro_rules! f32_simd {
        ($name:ident, $l2:expr) => {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn $name(a: &[f32], b: &[f32]) -> f32 {
                debug_assert_eq!(a.len(), b.len());
                let n = a.len().min(b.len());
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc = [_mm256_setzero_ps(); 4];
                let mut i = 0;
                // SAFETY: every load reads 8 elements below `n`.
                unsafe {
                    while i + 32 <= n {
                        for (j, acc) in acc.iter_mut().enumerate() {
                            let (x, y) = (_mm256_loadu_ps(pa.add(i + 8 * j)), _mm256_loadu_ps(pb.add(i + 8 * j)));
                            if $l2 {
                                let d = _mm256_sub_ps(x, y);
                                *acc = _mm256_fmadd_ps(d, d, *acc);
                            } else {
                                *acc = _mm256_fmadd_ps(x, y, *acc);
                            }
                        }
                        i += 32;
                    }
                    while i + 8 <= n {
                        let (x, y) = (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
                        if $l2 {
                            let d = _mm256_sub_ps(x, y);
                            acc[0] = _mm256_fmadd_ps(d, d, acc[0]);
                        } else {
                            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
                        }
                        i += 8;
                    }
                    let mut sum = sum8(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
                    while i < n {
                        let (x, y) = (a[i], b[i]);
                        sum += if $l2 { (x - y) * (x - y) } else { x * y };
                        i += 1;
                    }
                    sum
                }
            }
        };
    }

    f32_simd!(dot, false);
    f32_simd!(l2, true);

    /// Eight f16 at `p`, widened (F16C).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn load_f16(p: *const f16) -> __m256 {
        // SAFETY: the caller keeps `p..p+8` inside its slice; F16C is enabled by the
        // calling function.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn load_f32(p: *const f32) -> __m256 {
        // SAFETY: the caller keeps `p..p+8` inside its slice.
        unsafe { _mm256_loadu_ps(p) }
    }

    /// The eight lanes of `v` summed: halves added pairwise (three adds, no store).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn sum8(v: __m256) -> f32 {
        let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)))
    }

    macro_rules! f16_simd {
        ($name:ident, $b:ty, $load_b:ident, $l2:expr) => {
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn $name(a: &[f16], b: &[$b]) -> f32 {
                debug_assert_eq!(a.len(), b.len());
                let n = a.len().min(b.len());
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
                let mut i = 0;
                // SAFETY: every load reads 8 elements below `n`.
                unsafe {
                    while i + LANES <= n {
                        let (x0, y0) = (load_f16(pa.add(i)), $load_b(pb.add(i)));
                        let (x1, y1) = (load_f16(pa.add(i + 8)), $load_b(pb.add(i + 8)));
                        if $l2 {
                            let (d0, d1) = (_mm256_sub_ps(x0, y0), _mm256_sub_ps(x1, y1));
                            acc0 = _mm256_fmadd_ps(d0, d0, acc0);
                            acc1 = _mm256_fmadd_ps(d1, d1, acc1);
                        } else {
                            acc0 = _mm256_fmadd_ps(x0, y0, acc0);
                            acc1 = _mm256_fmadd_ps(x1, y1, acc1);
                        }
                        i += LANES;
                    }
                    let mut sum = sum8(_mm256_add_ps(acc0, acc1));
                    while i < n {
                        let (x, y) = (a[i].to_f32(), f32::from(b[i]));
                        sum += if $l2 { (x - y) * (x - y) } else { x * y };
                        i += 1;
                    }
                    sum
                }
            }
        };
    }

    f16_simd!(f16_dot, f32, load_f32, false);
    f16_simd!(f16_l2, f32, load_f32, true);
    f16_simd!(f16_f16_dot, f16, load_f16, false);
    f16_simd!(f16_f16_l2, f16, load_f16, true);
}

/// The distance kernels this CPU runs, chosen once per process ([`kernels`]): a
/// store keeps the table and calls through it, so no distance call tests the CPU.
pub struct Kernels {
    pub name: &'static str,
    pub dot: fn(&[f32], &[f32]) -> f32,
    pub l2: fn(&[f32], &[f32]) -> f32,
    /// A stored FLOAT16 vector against an f32 query.
    pub dot_f16: fn(&[f16], &[f32]) -> f32,
    pub l2_f16: fn(&[f16], &[f32]) -> f32,
    /// Two stored FLOAT16 vectors (neighbour selection while inserting).
    pub dot_f16_f16: fn(&[f16], &[f16]) -> f32,
    pub l2_f16_f16: fn(&[f16], &[f16]) -> f32,
}

/// The portable kernels (every CPU).
pub static PORTABLE: Kernels = Kernels {
    name: "portable",
    dot: dot_portable,
    l2: l2_portable,
    dot_f16: f16_portable::dot_f16,
    l2_f16: f16_portable::l2_f16,
    dot_f16_f16: f16_portable::dot_f16_f16,
    l2_f16_f16: f16_portable::l2_f16_f16,
};

/// The kernels for this CPU: AVX2+FMA (and F16C for FLOAT16) where it has them,
/// else the portable ones. Decided on the first call, then a plain load.
pub fn kernels() -> &'static Kernels {
    static CHOSEN: std::sync::OnceLock<&'static Kernels> = std::sync::OnceLock::new();
    CHOSEN.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if avx2::available() {
            return &avx2::KERNELS;
        }
        &PORTABLE
    })
}

/// The dot product.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    (kernels().dot)(a, b)
}

/// The squared Euclidean distance.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    (kernels().l2)(a, b)
}

/// The portable FLOAT16 kernels: widen 16 elements at a time into a stack buffer, then
/// the same 16-lane accumulation as the f32 kernels.
mod f16_portable {
    use super::LANES;
    use half::f16;

    #[inline(always)]
    fn widen(chunk: &[f16]) -> [f32; LANES] {
        let mut out = [0f32; LANES];
        for (o, x) in out.iter_mut().zip(chunk) {
            *o = x.to_f32();
        }
        out
    }

    macro_rules! f16_kernel {
        ($name:ident, $b:ty, $widen_b:expr, $term:expr) => {
            pub fn $name(a: &[f16], b: &[$b]) -> f32 {
                debug_assert_eq!(a.len(), b.len());
                let mut acc = [0f32; LANES];
                let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
                let (ra, rb) = (ca.remainder(), cb.remainder());
                for (x, y) in ca.zip(cb) {
                    let (x, y) = (widen(x), $widen_b(y));
                    for i in 0..LANES {
                        acc[i] += $term(x[i], y[i]);
                    }
                }
                let mut sum: f32 = acc.iter().sum();
                let (x, y) = (widen(ra), $widen_b(rb));
                for i in 0..ra.len() {
                    sum += $term(x[i], y[i]);
                }
                sum
            }
        };
    }

    fn same(chunk: &[f32]) -> [f32; LANES] {
        let mut out = [0f32; LANES];
        out[..chunk.len()].copy_from_slice(chunk);
        out
    }
    fn dot_term(x: f32, y: f32) -> f32 {
        x * y
    }
    fn l2_term(x: f32, y: f32) -> f32 {
        (x - y) * (x - y)
    }
    f16_kernel!(dot_f16, f32, same, dot_term);
    f16_kernel!(l2_f16, f32, same, l2_term);
    f16_kernel!(dot_f16_f16, f16, widen, dot_term);
    f16_kernel!(l2_f16_f16, f16, widen, l2_term);
}

/// The portable kernels and a naive loop, for the measurement in docs/vector.md.
pub mod variants {
    pub use super::f16_portable::{dot_f16 as dot_f16_portable, l2_f16 as l2_f16_portable};
    pub fn dot_naive(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }
    /// FLOAT16 widened element by element with `half`, then summed: the baseline.
    pub fn dot_f16_naive(a: &[half::f16], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x.to_f32() * y).sum()
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
    fn float16_kernels_agree_with_the_f32_kernels_on_widened_data() {
        for dim in [1usize, 7, 8, 15, 16, 17, 31, 384, 385] {
            let a: Vec<f16> = (0..dim).map(|i| f16::from_f32(((i * 7 % 13) as f32 - 6.0) / 5.0)).collect();
            let b: Vec<f16> = (0..dim).map(|i| f16::from_f32(((i * 5 % 11) as f32 - 5.0) / 3.0)).collect();
            let (wa, wb): (Vec<f32>, Vec<f32>) = (a.iter().map(|x| x.to_f32()).collect(), b.iter().map(|x| x.to_f32()).collect());
            let (want_dot, want_l2) = (variants::dot_naive(&wa, &wb), variants::l2_portable(&wa, &wb));
            let close = |got: f32, want: f32| (got - want).abs() <= 1e-4 * want.abs().max(1.0);
            for table in [kernels(), &PORTABLE] {
                let name = table.name;
                assert!(close((table.dot_f16)(&a, &wb), want_dot), "{name} dot_f16 dim {dim}");
                assert!(close((table.l2_f16)(&a, &wb), want_l2), "{name} l2_f16 dim {dim}");
                assert!(close((table.dot_f16_f16)(&a, &b), want_dot), "{name} dot_f16_f16 dim {dim}");
                assert!(close((table.l2_f16_f16)(&a, &b), want_l2), "{name} l2_f16_f16 dim {dim}");
                assert!(close((table.dot)(&wa, &wb), want_dot), "{name} dot dim {dim}");
            }
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
