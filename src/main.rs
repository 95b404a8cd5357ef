//! The `meridian` binary: parse settings, start logging, run the server.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings: a background thread returns freed pages to the system as they
/// age, as Redis runs its jemalloc (`jemalloc-bg-thread yes`), after one second unused
/// rather than ten. Without it, pages freed by a burst of writes (request buffers,
/// deltas awaiting their segment) stay resident until the process allocates again:
/// an idle node kept hundreds of bytes per key more than it held (docs/benchmarks.md).
#[cfg(not(target_env = "msvc"))]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8; 43] = b"background_thread:true,dirty_decay_ms:1000\0";

fn main() {
    let config = match meridian::config::Config::load() {
        Ok(config) => config,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&config.log).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).init();
    let result = match &config.command {
        Some(meridian::config::Subcommand::Restore { to, into }) => meridian::shell::restore::run(&config, to, into),
        None => meridian::shell::run(config),
    };
    if let Err(message) = result {
        tracing::error!("{message}");
        std::process::exit(1);
    }
}
