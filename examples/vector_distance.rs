//! Measures the distance kernels of the vector engine (docs/vector.md, "Distances"):
//! a naive iterator sum, the 16-lane portable kernel (SSE2 as compiled for x86-64's
//! baseline) and the same kernel built with AVX2+FMA (what `dot` picks at run time
//! when the CPU has them). Prints nanoseconds per 384-dimension distance.
//!
//! FLOAT16: the naive `half` widening per element, the portable 16-lane kernel, and
//! the kernel table's choice (F16C+AVX2+FMA where the CPU has them).
//!
//! Codes (`quant.rs`): each byte dot product kernel the CPU can run, on the codes of
//! the same vectors.
//!
//! cargo run --release --example vector_distance

use std::hint::black_box;
use std::time::Instant;

use half::f16;
use meridian::engine::vector::distance::{PORTABLE, dot, kernels, l2_squared, variants};
use meridian::engine::vector::quant::{dot_kernels, quantize};

const DIM: usize = 384;
const VECTORS: usize = 4_096;
const ROUNDS: usize = 50;

fn time<T>(name: &str, data: &[T], query: &[f32], f: impl Fn(&[T], &[f32]) -> f32) {
    let start = Instant::now();
    let mut sink = 0.0;
    for _ in 0..ROUNDS {
        for v in data.chunks_exact(DIM) {
            sink += f(black_box(v), black_box(query));
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / (ROUNDS * VECTORS) as f64;
    println!("{name:28} {ns:7.1} ns/distance  (checksum {sink:.3})");
}

fn main() {
    // A fixed pseudo-random fill (no RNG crate needed for a measurement).
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let data: Vec<f32> = (0..VECTORS * DIM).map(|_| next()).collect();
    let query: Vec<f32> = (0..DIM).map(|_| next()).collect();
    time("dot naive (iter().sum())", &data, &query, variants::dot_naive);
    time("dot portable 16 lanes", &data, &query, variants::dot_portable);
    time("dot dispatched (AVX2+FMA)", &data, &query, dot);
    time("l2 portable 16 lanes", &data, &query, variants::l2_portable);
    time("l2 dispatched (AVX2+FMA)", &data, &query, l2_squared);
    let halves: Vec<f16> = data.iter().map(|&x| f16::from_f32(x)).collect();
    println!("kernel table: {}", kernels().name);
    time("f16 dot naive (half to_f32)", &halves, &query, variants::dot_f16_naive);
    time("f16 dot portable 16 lanes", &halves, &query, PORTABLE.dot_f16);
    time("f16 dot dispatched", &halves, &query, kernels().dot_f16);
    time("f16 l2 portable 16 lanes", &halves, &query, PORTABLE.l2_f16);
    time("f16 l2 dispatched", &halves, &query, kernels().l2_f16);

    let mut codes: Vec<i8> = Vec::with_capacity(data.len());
    data.chunks_exact(DIM).for_each(|v| {
        quantize(v, &mut codes);
    });
    let mut coded_query = Vec::with_capacity(DIM);
    quantize(&query, &mut coded_query);
    for (name, kernel) in dot_kernels() {
        let start = Instant::now();
        let mut sink = 0i64;
        for _ in 0..ROUNDS {
            for v in codes.chunks_exact(DIM) {
                sink += i64::from(kernel(black_box(v), black_box(&coded_query)));
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / (ROUNDS * VECTORS) as f64;
        println!("{:28} {ns:7.1} ns/distance  (checksum {sink})", format!("code dot {name}"));
    }
}
