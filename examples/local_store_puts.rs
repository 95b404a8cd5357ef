//! CPU per big segment put through the local folder store (its `O_DIRECT` window):
//! `cargo run --release --example local_store_puts -- DIR [MIB] [PUTS] [GAP_MS] [release]`.
//! With `release`, the window is given back after every put, as the persistence
//! driver does at a round with nothing to store, so every put makes it again (a node
//! whose big segments come further apart than its rounds); without, it is kept.
use std::time::{Duration, Instant};

use meridian::shell::local_store::LocalStore;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let mib: usize = args.get(2).map_or(14, |a| a.parse().unwrap());
    let puts: usize = args.get(3).map_or(20, |a| a.parse().unwrap());
    let gap = Duration::from_millis(args.get(4).map_or(250, |a| a.parse().unwrap()));
    let release_each = args.get(5).is_some_and(|a| a == "release");
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = LocalStore::new(&dir, true).unwrap();
    let release = store.window_release();
    let body: Vec<u8> = (0..mib << 20).map(|i| (i * 31 + 7) as u8).collect();
    let mut cpu_total = 0.0;
    let mut wall_total = Duration::ZERO;
    for i in 0..puts {
        let payload = PutPayload::from(body.clone());
        let (cpu0, wall0) = (cpu_seconds(), Instant::now());
        runtime.block_on(store.put(&Path::from(format!("seg-{i}")), payload)).unwrap();
        let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed());
        if i > 0 {
            cpu_total += cpu;
            wall_total += wall;
        }
        runtime.block_on(store.delete(&Path::from(format!("seg-{i}")))).unwrap();
        if release_each {
            release();
        }
        std::thread::sleep(gap);
    }
    let n = (puts - 1) as f64;
    let window = if release_each { "made each put" } else { "kept" };
    println!(
        "{mib} MiB puts, gap {gap:?}, window {window}: cpu {:.2} ms, wall {:.2} ms a put (mean of {})",
        cpu_total / n * 1e3,
        wall_total.as_secs_f64() / n * 1e3,
        puts - 1
    );
}
