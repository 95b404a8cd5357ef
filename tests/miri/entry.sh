#!/usr/bin/env bash
# Run src/engine/kv/keyspace/entry.rs's unit tests under Miri (undefined behaviour,
# out-of-bounds reads, leaks, double drops). The whole crate cannot run under Miri (its
# allocator is jemalloc, C code), so this builds a copy of entry.rs as a crate of its
# own, with a stand-in `KeyState` that owns heap data (so drops and leaks are checked)
# and is 48 bytes (so the layout's offsets differ from the real 32 and are not assumed).
# Needs the nightly toolchain with miri and rust-src:
#   rustup component add miri rust-src --toolchain nightly
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${TMPDIR:-/tmp}/meridian-miri-entry"
mkdir -p "$WORK/src"
cat > "$WORK/Cargo.toml" <<'TOML'
[package]
name = "entry_under_miri"
version = "0.0.0"
edition = "2024"
[dependencies]
bytes = "1"
TOML
python3 - "$ROOT/src/engine/kv/keyspace/entry.rs" "$WORK/src/lib.rs" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.replace("use super::KeyState;", """#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyState { a: Option<Box<[u8]>>, b: u64, c: Vec<u8> }
impl KeyState { pub fn new() -> KeyState { KeyState::default() } }
const _: () = assert!(std::mem::size_of::<KeyState>() == 48);""")
start = s.index("    fn string_state(value: &[u8]) -> KeyState {")
end = s.index("    #[test]", start)
s = s[:start] + """    fn string_state(value: &[u8]) -> KeyState {
        KeyState { a: Some(value.into()), b: 7, c: value.to_vec() }
    }

""" + s[end:]
# The crate's prefetch hint is not in this copy; a hint may do nothing.
s = s.replace("use crate::engine::prefetch::prefetch;", "fn prefetch<T>(_: *const T) {}")
s = s.replace("use crate::engine::bytes_eq::same_bytes;", "fn same_bytes(a: &[u8], b: &[u8]) -> bool { a == b }")
# The size test names the real state's sizes (32 + 1 + 14, + 8): 16 more here.
s = s.replace("allocated_bytes(), 47)", "allocated_bytes(), 63)").replace("allocated_bytes(), 55)", "allocated_bytes(), 71)")
open(sys.argv[2], "w").write(s)
PY
cd "$WORK" && CARGO_TARGET_DIR="$WORK/target" cargo +nightly miri test
