//! The local store against the library it wraps: every object reads back byte for
//! byte, create-only holds, temporary files stay out of listings, and a file system
//! that refuses `O_DIRECT` still gets every object.

use super::*;
use bytes::Bytes;
use futures_util::TryStreamExt;

/// A fresh folder under `base` for one test (removed at the end of the test).
fn folder(base: &FsPath, test: &str) -> PathBuf {
    let dir = base.join(format!("meridian-local-store-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test folder");
    dir
}

/// Deterministic bytes that differ at every offset a block or window edge could cut.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed).collect()
}

/// A payload of several chunks (a segment is a header and one body per shard).
fn chunked(bytes: &[u8], cuts: &[usize]) -> PutPayload {
    let mut chunks = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().filter(|&&c| c < bytes.len()) {
        chunks.push(Bytes::copy_from_slice(&bytes[start..cut]));
        start = cut;
    }
    chunks.push(Bytes::copy_from_slice(&bytes[start..]));
    chunks.into_iter().collect()
}

async fn read(store: &LocalStore, name: &str) -> Vec<u8> {
    store.get(&Path::from(name)).await.expect("get").bytes().await.expect("read").to_vec()
}

async fn listing(store: &LocalStore) -> Vec<String> {
    let mut names: Vec<String> = store.list(None).map_ok(|meta| meta.location.to_string()).try_collect().await.expect("list");
    names.sort();
    names
}

/// Sizes on both sides of the block and window edges, with a window of 3 blocks.
#[tokio::test]
async fn objects_across_block_and_window_edges_read_back_exactly() {
    let dir = folder(&std::env::temp_dir(), "edges");
    let window = 3 * BLOCK_BYTES;
    let store = LocalStore::with_limits(&dir, true, 1, window).expect("store");
    let sizes =
        [1, 63, BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1, window - 1, window, window + 1, 2 * window + 100, 7 * BLOCK_BYTES + 5];
    for (i, &size) in sizes.iter().enumerate() {
        let bytes = pattern(size, i as u8);
        let name = format!("node-00001/segments/{i:020}");
        let payload = chunked(&bytes, &[64, 64 + BLOCK_BYTES / 2, window + 7]);
        store.put_opts(&Path::from(name.as_str()), payload, PutOptions::from(PutMode::Create)).await.expect("put");
        let back = read(&store, &name).await;
        assert_eq!(back.len(), size, "object {i}: length");
        assert!(back == bytes, "object {i} of {size} bytes reads back different bytes");
        assert_eq!(std::fs::metadata(dir.join(&name)).expect("stat").len(), size as u64, "padding cut off");
    }
    assert!(store.writes_directly() || !direct_supported(&dir), "a file system that takes O_DIRECT was given up on");
    assert_eq!(listing(&store).await.len(), sizes.len(), "only the objects, no temporary files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A big write leaves its window for the next one; the driver's release gives it back,
/// and the next big write makes one again.
#[tokio::test]
async fn the_window_is_kept_between_big_writes_until_released() {
    let dir = folder(&std::env::temp_dir(), "window");
    let store = LocalStore::with_limits(&dir, true, 1, 2 * BLOCK_BYTES).expect("store");
    let release = store.window_release();
    let kept = || store.window.lock().expect("window").is_some();
    assert!(!kept(), "no window before the first big write");
    for (i, release_after) in [(0u8, false), (1, true), (2, true)] {
        let name = format!("o{i}");
        let bytes = pattern(3 * BLOCK_BYTES + 5, i);
        store.put(&Path::from(name.as_str()), PutPayload::from(bytes.clone())).await.expect("put");
        assert!(read(&store, &name).await == bytes, "object {i} reads back");
        assert!(kept(), "the window stays after write {i}");
        if release_after {
            release();
            assert!(!kept(), "released after write {i}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `dir`'s file system takes `O_DIRECT` at all (tmpfs on older kernels does not).
fn direct_supported(dir: &FsPath) -> bool {
    let probe = dir.join("probe-direct");
    let supported = OpenOptions::new().write(true).create(true).truncate(true).custom_flags(libc::O_DIRECT).open(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    supported
}

/// Create `name` from `first`; a second create (`second`) is refused and leaves the
/// first untouched; an overwrite with `third` replaces it.
async fn create_refuse_overwrite(store: &LocalStore, name: &Path, first: PutPayload, second: PutPayload, third: PutPayload) {
    let bytes = |payload: &PutPayload| payload.iter().flat_map(|chunk| chunk.iter().copied()).collect::<Vec<u8>>();
    let (first_bytes, third_bytes) = (bytes(&first), bytes(&third));
    store.put_opts(name, first, PutOptions::from(PutMode::Create)).await.expect("first create");
    let refused = store.put_opts(name, second, PutOptions::from(PutMode::Create)).await;
    assert!(matches!(refused, Err(object_store::Error::AlreadyExists { .. })), "second create: {refused:?}");
    assert!(read(store, name.as_ref()).await == first_bytes, "the first object is untouched");
    store.put_opts(name, third, PutOptions::from(PutMode::Overwrite)).await.expect("overwrite");
    assert!(read(store, name.as_ref()).await == third_bytes);
}

#[tokio::test]
async fn create_only_refuses_a_second_object_and_keeps_the_first() {
    let dir = folder(&std::env::temp_dir(), "create");
    let store = LocalStore::with_limits(&dir, true, 1, 2 * BLOCK_BYTES).expect("store");
    let name = Path::from("node-00001/manifest/00000000000000000001");
    // Overwrite replaces it, and leaves no temporary file behind either way.
    create_refuse_overwrite(
        &store,
        &name,
        chunked(&pattern(5000, 1), &[]),
        chunked(&pattern(9000, 2), &[]),
        chunked(&pattern(100, 3), &[]),
    )
    .await;
    let files: Vec<_> = std::fs::read_dir(dir.join("node-00001/manifest")).expect("read_dir").collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without `--fsync`, objects under the threshold go through the library; both kinds
/// list and read alike.
#[tokio::test]
async fn small_objects_take_the_library_path_and_big_ones_the_direct_one() {
    let dir = folder(&std::env::temp_dir(), "threshold");
    let store = LocalStore::with_limits(&dir, false, 10_000, 2 * BLOCK_BYTES).expect("store");
    let small = pattern(9_999, 4);
    let big = pattern(10_000, 5);
    store.put(&Path::from("a/small"), chunked(&small, &[])).await.expect("small");
    store.put(&Path::from("a/big"), chunked(&big, &[100])).await.expect("big");
    assert!(read(&store, "a/small").await == small && read(&store, "a/big").await == big);
    assert_eq!(listing(&store).await, vec!["a/big".to_string(), "a/small".to_string()]);
    store.delete(&Path::from("a/big")).await.expect("delete");
    assert_eq!(listing(&store).await, vec!["a/small".to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a file system without `O_DIRECT` the store stops trying and still stores. Shared
/// memory is tmpfs; where this kernel's tmpfs takes `O_DIRECT`, the direct path runs
/// instead and the object must read back all the same.
#[tokio::test]
async fn a_file_system_that_refuses_direct_writes_still_stores_every_object() {
    let shm = FsPath::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let dir = folder(shm, "refused");
    let store = LocalStore::with_limits(&dir, true, 1, 2 * BLOCK_BYTES).expect("store");
    let bytes = pattern(3 * BLOCK_BYTES + 11, 6);
    store.put(&Path::from("x/one"), chunked(&bytes, &[10])).await.expect("put");
    store.put(&Path::from("x/two"), chunked(&bytes, &[])).await.expect("put");
    assert!(read(&store, "x/one").await == bytes && read(&store, "x/two").await == bytes);
    assert_eq!(store.writes_directly(), direct_supported(&dir));
    assert_eq!(listing(&store).await.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--fsync`, objects under the threshold are written staged by the store itself
/// (page cache, synced): they read back, create-only holds, overwrite replaces, new
/// folders are made, and no temporary file is left or listed.
#[tokio::test]
async fn with_fsync_small_objects_are_staged_and_create_only_holds() {
    let dir = folder(&std::env::temp_dir(), "staged");
    let store = LocalStore::with_limits(&dir, true, 10_000, 2 * BLOCK_BYTES).expect("store");
    let name = Path::from("node-00001/manifest/00000000000000000001");
    let (first, third) = (chunked(&pattern(700, 7), &[100, 300]), chunked(&pattern(9_999, 9), &[4096]));
    create_refuse_overwrite(&store, &name, first, chunked(&pattern(50, 8), &[]), third).await;
    let empty = Path::from("node-00001/a/b/c/empty");
    store.put(&empty, PutPayload::default()).await.expect("an empty object in new folders");
    assert!(read(&store, empty.as_ref()).await.is_empty());
    assert_eq!(listing(&store).await, vec!["node-00001/a/b/c/empty".to_string(), name.to_string()]);
    let files: Vec<_> = std::fs::read_dir(dir.join("node-00001/manifest")).expect("read_dir").collect();
    assert_eq!(files.len(), 1, "no temporary file left: {files:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
