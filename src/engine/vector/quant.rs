//! Eight-bit codes of a graph store's vectors, which a KNN walk reads instead of the
//! vectors themselves (scalar quantisation, one scale per vector).
//!
//! Owns the codes and the integer dot kernel. Never decides a result: a walk over the
//! codes picks its `ef` candidates, and the store re-ranks those by their exact
//! distances before any leaves it (`hnsw/walk.rs`); an insert also chooses its links
//! by code distances (a link only has to point the right way, `hnsw.rs`). Why: a 384-d
//! FLOAT32 vector is 24 cache lines and its code 6, and over a graph larger than the
//! cache the walk waits on memory more than it computes. The codes cost one byte a dimension on top of
//! the vectors (documented in docs/vector.md). Integer sums are exact, so every CPU and
//! kernel gets the same distances: walks stay deterministic across machines.

use crate::engine::huge_pages::HugePages;

use super::distance::Metric;

/// A vector's code: `round(x / scale)` per element, `scale = max |x| / 127`, so the
/// largest element maps to ±127 and the dot product of two codes times their scales
/// approximates the vectors' dot product.
pub fn quantize(vector: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 && max.is_finite() { max / 127.0 } else { 1.0 };
    let inverse = 1.0 / scale;
    // Half away from zero by hand (`f32::round` is a libm call per element on the
    // baseline x86-64 target; this loop vectorises). The cast saturates and maps NaN to 0.
    out.extend(vector.iter().map(|&x| {
        let y = x * inverse;
        (y + 0.5f32.copysign(y)).clamp(-127.0, 127.0) as i8
    }));
    scale
}

/// Every slot's code and scale, and for L2 its squared norm, slot after slot.
pub struct Codes {
    dim: usize,
    metric: Metric,
    codes: Vec<i8>,
    scales: Vec<f32>,
    norms: Vec<f32>,
    dot: DotKernel,
    /// `codes`' buffer as last advised for huge pages (`huge_pages.rs`).
    huge: HugePages,
}

/// A query coded like the slots, with what its distances need.
pub struct CodedQuery {
    codes: Vec<i8>,
    scale: f32,
    norm: f32,
}

impl Codes {
    pub fn new(dim: usize, metric: Metric, capacity: usize) -> Codes {
        Codes {
            dim,
            metric,
            codes: Vec::with_capacity(capacity * dim),
            scales: Vec::with_capacity(capacity),
            norms: Vec::with_capacity(if metric == Metric::L2 { capacity } else { 0 }),
            dot: dot_kernel(),
            huge: HugePages::default(),
        }
    }

    /// Code the next slot's vector; returns the same code as a query (what the insert
    /// walks with), so the vector is coded once.
    pub fn push(&mut self, vector: &[f32]) -> CodedQuery {
        debug_assert_eq!(vector.len(), self.dim);
        let start = self.codes.len();
        let scale = quantize(vector, &mut self.codes);
        self.huge.follow(&self.codes);
        self.scales.push(scale);
        let norm = if self.metric == Metric::L2 { vector.iter().map(|x| x * x).sum() } else { 0.0 };
        if self.metric == Metric::L2 {
            self.norms.push(norm);
        }
        CodedQuery { codes: self.codes[start..].to_vec(), scale, norm }
    }

    pub fn query(&self, query: &[f32]) -> CodedQuery {
        let mut codes = Vec::with_capacity(self.dim);
        let scale = quantize(query, &mut codes);
        let norm = if self.metric == Metric::L2 { query.iter().map(|x| x * x).sum() } else { 0.0 };
        CodedQuery { codes, scale, norm }
    }

    fn row(&self, slot: u32) -> &[i8] {
        let start = slot as usize * self.dim;
        &self.codes[start..start + self.dim]
    }

    /// The approximate distance from `query` to `slot`, in the metric's terms.
    #[inline]
    pub fn distance(&self, query: &CodedQuery, slot: u32) -> f32 {
        let dot = (self.dot)(&query.codes, self.row(slot)) as f32 * query.scale * self.scales[slot as usize];
        match self.metric {
            Metric::L2 => query.norm + self.norms[slot as usize] - 2.0 * dot,
            Metric::Ip | Metric::Cosine => 1.0 - dot,
        }
    }

    /// The approximate distance between two slots, in the metric's terms (what the
    /// graph's links are chosen by, see `hnsw.rs`).
    #[inline]
    pub fn distance_between(&self, a: u32, b: u32) -> f32 {
        let (sa, sb) = (self.scales[a as usize], self.scales[b as usize]);
        let dot = (self.dot)(self.row(a), self.row(b)) as f32 * sa * sb;
        match self.metric {
            Metric::L2 => self.norms[a as usize] + self.norms[b as usize] - 2.0 * dot,
            Metric::Ip | Metric::Cosine => 1.0 - dot,
        }
    }

    /// Where `slot`'s code starts (for a prefetch).
    #[inline]
    pub fn row_start(&self, slot: u32) -> *const u8 {
        self.codes.as_ptr().wrapping_add(slot as usize * self.dim) as *const u8
    }

    pub fn memory_bytes(&self) -> usize {
        self.codes.capacity() + (self.scales.capacity() + self.norms.capacity()) * 4
    }
}

/// The dot product of two codes, in integers (exact: at most 127² per element, and
/// dimensions are far below 2^31 / 127²).
pub fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
    debug_assert_eq!(a.len(), b.len());
    const LANES: usize = 32;
    let mut sums = [0i32; LANES];
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for i in 0..LANES {
            sums[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let rest: i32 = a_rest.iter().zip(b_rest).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
    sums.iter().sum::<i32>() + rest
}

/// A byte dot product kernel.
pub type DotKernel = fn(&[i8], &[i8]) -> i32;

/// The kernels this CPU can run, by name, fastest first: the first is used; the tests
/// and `examples/vector_distance.rs` run them all.
pub fn dot_kernels() -> Vec<(&'static str, DotKernel)> {
    let mut kernels: Vec<(&'static str, DotKernel)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            kernels.push(("AVX2", avx2::dot_safe));
        }
    }
    kernels.push(("portable", dot_portable));
    kernels
}

fn dot_kernel() -> DotKernel {
    static CHOSEN: std::sync::OnceLock<DotKernel> = std::sync::OnceLock::new();
    *CHOSEN.get_or_init(|| dot_kernels()[0].1)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    pub fn dot_safe(a: &[i8], b: &[i8]) -> i32 {
        // SAFETY: chosen only where the CPU has AVX2 (`dot_kernel`).
        unsafe { dot(a, b) }
    }

    /// 32 elements a step: `maddubs` multiplies unsigned by signed bytes, so `a` goes in
    /// as |a| and its sign moves onto `b` (codes are within ±127: a pair's sum, at most
    /// 2·127², fits the i16 it lands in without saturating).
    #[target_feature(enable = "avx2")]
    unsafe fn dot(a: &[i8], b: &[i8]) -> i32 {
        debug_assert_eq!(a.len(), b.len());
        let steps = a.len() / 32;
        let ones = _mm256_set1_epi16(1);
        // Pairs of i16 products are summed into i32 lanes (`madd`) every step, so no
        // i16 sum can overflow; two accumulators let consecutive steps overlap.
        let step = |i: usize| {
            let x = unsafe { _mm256_loadu_si256(a.as_ptr().add(i * 32) as *const __m256i) };
            let y = unsafe { _mm256_loadu_si256(b.as_ptr().add(i * 32) as *const __m256i) };
            _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x)), ones)
        };
        let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut i = 0;
        while i + 2 <= steps {
            even = _mm256_add_epi32(even, step(i));
            odd = _mm256_add_epi32(odd, step(i + 1));
            i += 2;
        }
        if i < steps {
            even = _mm256_add_epi32(even, step(i));
        }
        let sum = _mm256_add_epi32(even, odd);
        let halves = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        let pairs = _mm_add_epi32(halves, _mm_shuffle_epi32(halves, 0b01_00_11_10));
        let total = _mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0b10_11_00_01));
        let tail = steps * 32;
        let rest = if tail == a.len() { 0 } else { super::dot_portable(&a[tail..], &b[tail..]) };
        _mm_cvtsi128_si32(total) + rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_agree_exactly_and_a_code_keeps_the_dot_product_close() {
        let mut state = 7u64;
        let mut draw = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        };
        for dim in [1, 31, 32, 33, 384, 1000] {
            let a: Vec<f32> = (0..dim).map(|_| draw()).collect();
            let b: Vec<f32> = (0..dim).map(|_| draw()).collect();
            let (mut ca, mut cb) = (Vec::new(), Vec::new());
            let (sa, sb) = (quantize(&a, &mut ca), quantize(&b, &mut cb));
            assert!(ca.iter().all(|&c| c != i8::MIN), "codes stay within ±127");
            for (name, kernel) in dot_kernels() {
                assert_eq!(dot_portable(&ca, &cb), kernel(&ca, &cb), "{name}, dim {dim}");
            }
            let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let coded = dot_portable(&ca, &cb) as f32 * sa * sb;
            assert!((exact - coded).abs() <= 0.02 * (dim as f32).sqrt(), "dim {dim}: {exact} vs {coded}");
        }
        // Extremes: ±127 everywhere, where a pair's sum is largest.
        let a = vec![127i8; 64];
        let b = vec![-127i8; 64];
        for (_, kernel) in dot_kernels() {
            assert_eq!(kernel(&a, &b), -127 * 127 * 64);
            assert_eq!(kernel(&a, &a), 127 * 127 * 64);
            assert_eq!(kernel(&b, &a), -127 * 127 * 64);
        }
    }

    #[test]
    fn a_zero_vector_codes_to_zeros() {
        let mut codes = Vec::new();
        let scale = quantize(&[0.0; 8], &mut codes);
        assert_eq!(codes, vec![0i8; 8]);
        assert_eq!(scale, 1.0);
    }
}
