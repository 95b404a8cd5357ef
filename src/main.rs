//! The `meridian` binary: parse settings, start logging, run the server.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
