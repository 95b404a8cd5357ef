//! The local folder store (`--data-dir`, the default): object_store's
//! `LocalFileSystem` for reads, listings and deletes, and writes of its own.
//!
//! Every object is written to a temporary `name#N` file (which `LocalFileSystem` lists
//! as absent) and linked (create-only) or renamed into place, as the library does. Two
//! things differ:
//!
//! - **Durability** (`--fsync on`, the default): the file's bytes reach the device
//!   (`fdatasync`) before it is linked into place, and its folder's entry after
//!   (`fsync` of the folder, and of each folder above it that the write created), so a
//!   stored segment, checkpoint part or manifest survives the machine losing power, not
//!   only the process being killed. The library writes without either: after a power
//!   cut a manifest could name a checkpoint whose bytes never reached the disk, and a
//!   `--durability sync` acknowledgement would have promised what the disk did not
//!   hold. `--fsync off` leaves small objects to the library, as before (a stored
//!   object then survives a killed process only).
//! - **Big objects skip the page cache**: an object of at least [`DIRECT_BYTES_MIN`] (a
//!   busy node's segment, a checkpoint part) is written with `O_DIRECT` from one
//!   reused, block-aligned window. A node writes its delta stream once and reads it
//!   back only to recover, so the page cache is the wrong home for it: through it
//!   every segment takes fresh pages, which the kernel copies into, later writes back
//!   and then frees when the segment is deleted after a checkpoint. Measured on the
//!   2-core VM (docs/benchmarks.md, "Thirty-first session"): writing a 14 MiB segment
//!   every 250 ms cost 47-56 ms of CPU through the page cache (the VM hands freed pages
//!   back to its host, so each fresh page costs a host fault) against 4-5 ms with
//!   `O_DIRECT` from a reused buffer, and on one core that time is taken from the shard
//!   serving clients. Where the file system refuses `O_DIRECT` (tmpfs on older
//!   kernels, some FUSE mounts), the store says so once and writes big objects through
//!   the page cache from then on.
//!
//!   The window is kept only while big writes keep coming: the persistence driver gives
//!   it back at its first round with nothing to store ([`LocalStore::window_release`]).
//!   Kept for good, it was 4 MiB of `used_memory` after a node's first big write (Redis's
//!   `unit/lazyfree` saw an idle node hold twice its starting memory); made afresh for
//!   every write, it cost a 14 MiB segment 0.3-1.3 ms of CPU more (3.9-4.0 ms against
//!   4.3-5.3) and a 2 MiB one 0.6-0.7 ms (`examples/local_store_puts.rs`,
//!   docs/benchmarks.md, "Fifty-eighth session").
//!
//! Owns the window and nothing else; never decides what is written or when (the
//! streamer does), and never changes what a reader sees: the same files under the same
//! names, create-only where asked. Conditional updates and objects with attributes
//! (neither of which Meridian writes) are the library's.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures_util::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload,
    PutResult,
};

/// Objects this big or bigger are written with `O_DIRECT`. Smaller ones go through the
/// page cache: a lone `--durability sync` writer's small segment is acknowledged after
/// a memory copy there, where a direct write would wait for the device.
pub const DIRECT_BYTES_MIN: usize = 1 << 20;

/// Bytes copied and written per direct `write`: bounds the window's memory.
pub const WINDOW_BYTES: usize = 4 << 20;

/// Offsets, lengths and buffer addresses of a direct write are multiples of this (the
/// largest logical block size in use; 512-byte devices accept it too).
const BLOCK_BYTES: usize = 4096;

const STORE_NAME: &str = "LocalStore";

/// A block-aligned buffer of [`WINDOW_BYTES`], kept between writes so that its pages
/// stay mapped: an aligned slice of a slightly larger `Vec`.
struct Window {
    buffer: Vec<u8>,
    start: usize,
}

impl Window {
    fn new(bytes: usize) -> Window {
        assert!(bytes > 0 && bytes.is_multiple_of(BLOCK_BYTES));
        let buffer = vec![0u8; bytes + BLOCK_BYTES];
        let start = buffer.as_ptr().align_offset(BLOCK_BYTES);
        assert!(start < BLOCK_BYTES, "a byte buffer can always be aligned within one block");
        Window { buffer, start }
    }

    fn slice(&mut self) -> &mut [u8] {
        let len = self.buffer.len() - BLOCK_BYTES;
        &mut self.buffer[self.start..self.start + len]
    }
}

pub struct LocalStore {
    library: LocalFileSystem,
    /// The folder the store writes under, as the file system names it: folder syncs
    /// stop at it.
    root: PathBuf,
    /// The window, free between writes (until the driver gives it back: see
    /// [`LocalStore::window_release`]); a second concurrent big write takes a window of
    /// its own for its duration.
    window: Arc<Mutex<Option<Window>>>,
    /// False once the file system refused a direct write.
    direct: Arc<AtomicBool>,
    /// Whether a stored object's bytes and folder entry are synced to the device before
    /// the put returns (`--fsync on`; see the module docs).
    fsync: bool,
    direct_bytes_min: usize,
    window_bytes: usize,
}

impl LocalStore {
    /// The store under `root` (which must exist), syncing what it stores when `fsync`.
    pub fn new(root: &FsPath, fsync: bool) -> object_store::Result<LocalStore> {
        LocalStore::with_limits(root, fsync, DIRECT_BYTES_MIN, WINDOW_BYTES)
    }

    /// [`LocalStore::new`] with other sizes (tests cross the window's edges with small
    /// objects).
    pub fn with_limits(root: &FsPath, fsync: bool, direct_bytes_min: usize, window_bytes: usize) -> object_store::Result<LocalStore> {
        assert!(window_bytes > 0 && window_bytes.is_multiple_of(BLOCK_BYTES));
        let root = std::fs::canonicalize(root).map_err(generic)?;
        if fsync && let Some(parent) = root.parent() {
            // The folder itself may be new (the server creates `--data-dir`): its entry
            // lives in its parent. Best effort: a parent that cannot be opened is the
            // operator's to mind, not a reason to refuse to start.
            let _ = sync_folder(parent);
        }
        Ok(LocalStore {
            library: LocalFileSystem::new_with_prefix(&root)?,
            root,
            window: Arc::new(Mutex::new(None)),
            direct: Arc::new(AtomicBool::new(true)),
            fsync,
            direct_bytes_min,
            window_bytes,
        })
    }

    /// What gives the kept window back (a big write in progress keeps its own): for
    /// the persistence driver's idle rounds, so that an idle node holds none.
    pub fn window_release(&self) -> crate::shell::persistence::IdleMemoryRelease {
        let slot = self.window.clone();
        Arc::new(move || {
            if let Ok(mut slot) = slot.try_lock() {
                slot.take();
            }
        })
    }

    /// Whether big objects are still written directly (false once refused).
    pub fn writes_directly(&self) -> bool {
        self.direct.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalStore({:?})", self.library)
    }
}

impl fmt::Display for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalStore({})", self.library)
    }
}

/// How a direct put ended.
enum Direct {
    Stored,
    /// The file system refused `O_DIRECT`; nothing was left behind.
    Refused,
}

fn generic(source: io::Error) -> object_store::Error {
    object_store::Error::Generic { store: STORE_NAME, source: Box::new(source) }
}

/// A temporary file beside its destination, and whether making it created folders.
struct Staging {
    file: File,
    path: PathBuf,
    created_folders: bool,
}

/// Create `dest#N` for the first free N, as `LocalFileSystem` names its own temporary
/// files (its listings skip them), creating parent folders as needed; opened with
/// `O_DIRECT` when `direct`.
fn create_staging(dest: &FsPath, direct: bool) -> io::Result<Staging> {
    let flags = if direct { libc::O_DIRECT } else { 0 };
    // Bounded: each attempt either succeeds, fails for good, or finds a name taken by
    // another writer's temporary file, and there are only so many of those.
    for suffix in 1..=1024u32 {
        let mut name = dest.as_os_str().to_owned();
        name.push(format!("#{suffix}"));
        let path = PathBuf::from(name);
        let open = || OpenOptions::new().write(true).create_new(true).custom_flags(flags).open(&path);
        match open() {
            Ok(file) => return Ok(Staging { file, path, created_folders: false }),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                return open().map(|file| Staging { file, path, created_folders: true });
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(ErrorKind::AlreadyExists, format!("no free temporary name beside {}", dest.display())))
}

/// One aligned write of all of `block`; a short write is an error (the next offset
/// would not be aligned), and the streamer retries the whole object.
fn write_aligned(file: &mut File, block: &[u8]) -> io::Result<()> {
    debug_assert!(block.len().is_multiple_of(BLOCK_BYTES) && (block.as_ptr() as usize).is_multiple_of(BLOCK_BYTES));
    let written = file.write(block)?;
    if written != block.len() {
        return Err(io::Error::new(ErrorKind::WriteZero, format!("direct write stored {written} of {} bytes", block.len())));
    }
    Ok(())
}

/// Copy `chunks` through `window` into `file`, the last block padded with zeros, then
/// cut the file to the object's length.
fn write_through_window(file: &mut File, window: &mut [u8], chunks: &PutPayload) -> io::Result<()> {
    let mut filled = 0usize;
    let mut total = 0u64;
    for chunk in chunks {
        let mut rest: &[u8] = chunk;
        while !rest.is_empty() {
            let n = rest.len().min(window.len() - filled);
            window[filled..filled + n].copy_from_slice(&rest[..n]);
            filled += n;
            rest = &rest[n..];
            if filled == window.len() {
                write_aligned(file, window)?;
                total += filled as u64;
                filled = 0;
            }
        }
    }
    if filled > 0 {
        let padded = filled.next_multiple_of(BLOCK_BYTES);
        window[filled..padded].fill(0);
        write_aligned(file, &window[..padded])?;
        total += filled as u64;
    }
    file.set_len(total)
}

/// Remove a temporary file that will not be linked into place, and pass `outcome` on.
fn remove_then<T>(staging: &FsPath, outcome: T) -> T {
    let _ = std::fs::remove_file(staging);
    outcome
}

/// Sync `folder`'s entries to the device (a file linked, renamed or created in it).
/// A file system that cannot sync a folder at all (`EINVAL`, `EBADF`: some network and
/// FUSE mounts) is taken at its word, as PostgreSQL does: its names are as durable as
/// it makes them, and refusing every write there would stop persistence altogether.
fn sync_folder(folder: &FsPath) -> io::Result<()> {
    match File::open(folder)?.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EBADF)) => Ok(()),
        synced => synced,
    }
}

/// Make a file just linked or renamed to `dest` durable as a name: sync its folder,
/// and, when the write created folders, every folder above it up to `root` (a new
/// folder's own entry lives in its parent).
fn sync_entries(dest: &FsPath, root: &FsPath, created_folders: bool) -> io::Result<()> {
    let Some(folder) = dest.parent() else { return Ok(()) };
    sync_folder(folder)?;
    if created_folders {
        // Bounded by the depth of `dest` below `root`.
        for above in folder.ancestors().skip(1) {
            if !above.starts_with(root) {
                break;
            }
            sync_folder(above)?;
        }
    }
    Ok(())
}

/// How one put writes: through the window (`O_DIRECT`) or the page cache, and
/// whether it syncs.
struct PutHow<'a> {
    window: Option<&'a mut [u8]>,
    fsync: bool,
    root: &'a FsPath,
}

/// Write `payload` to `dest` through a temporary file, synced before it is linked
/// (create-only) or renamed into place when `how.fsync`, and its folder synced after.
/// `Refused`, with nothing left behind, when a direct write meets a file system that
/// does not take `O_DIRECT`.
fn put_staged(dest: &FsPath, payload: &PutPayload, mode: &PutMode, how: PutHow<'_>) -> object_store::Result<Direct> {
    let direct = how.window.is_some();
    let Staging { mut file, path: staging, created_folders } = match create_staging(dest, direct) {
        Ok(created) => created,
        Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => return Ok(Direct::Refused),
        Err(e) => return Err(generic(e)),
    };
    let cleanup = |e| remove_then(&staging, e);
    let written = match how.window {
        Some(window) => write_through_window(&mut file, window, payload),
        None => payload.iter().try_for_each(|chunk| file.write_all(chunk)),
    };
    match written {
        Ok(()) => {}
        Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => return Ok(remove_then(&staging, Direct::Refused)),
        Err(e) => return Err(cleanup(generic(e))),
    }
    // The bytes (and the length that reads them back) are on the device before any
    // name points at them: a power cut leaves the object whole or absent.
    if how.fsync {
        file.sync_data().map_err(|e| cleanup(generic(e)))?;
    }
    drop(file);
    match mode {
        PutMode::Create => match std::fs::hard_link(&staging, dest) {
            Ok(()) => {
                let _ = std::fs::remove_file(&staging);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                return Err(cleanup(object_store::Error::AlreadyExists { path: dest.display().to_string(), source: Box::new(e) }));
            }
            Err(e) => return Err(cleanup(generic(e))),
        },
        PutMode::Overwrite => std::fs::rename(&staging, dest).map_err(|e| cleanup(generic(e)))?,
        PutMode::Update(_) => unreachable!("the caller sends conditional updates to the library"),
    }
    if how.fsync
        && let Err(e) = sync_entries(dest, how.root, created_folders)
    {
        // The name is stored only once its folder is: until then the put has not
        // returned, so nothing was acknowledged on it. A created object whose name
        // could not be made durable goes again, so that the streamer's retry creates
        // it anew instead of finding it taken (which it would read as another writer,
        // fencing this node out); an overwrite is simply written again.
        if matches!(mode, PutMode::Create) {
            let _ = std::fs::remove_file(dest);
        }
        return Err(generic(e));
    }
    Ok(Direct::Stored)
}

impl LocalStore {
    /// Write `payload` through the page cache (an object below the direct threshold, or
    /// a big one where direct writes failed): staged and synced by this store, on a
    /// blocking thread, when syncing; the library's write otherwise, as are
    /// conditional updates and objects with attributes.
    async fn put_through_cache(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> object_store::Result<PutResult> {
        let ours = !matches!(opts.mode, PutMode::Update(_)) && opts.attributes.is_empty();
        if !(ours && self.fsync) {
            return self.library.put_opts(location, payload, opts).await;
        }
        let dest = self.library.path_to_filesystem(location)?;
        let (root, mode) = (self.root.clone(), opts.mode);
        let outcome =
            tokio::task::spawn_blocking(move || put_staged(&dest, &payload, &mode, PutHow { window: None, fsync: true, root: &root }))
                .await
                .map_err(|e| generic(io::Error::other(e)))?;
        outcome.map(|_| PutResult { e_tag: None, version: None })
    }
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> object_store::Result<PutResult> {
        let ours = !matches!(opts.mode, PutMode::Update(_)) && opts.attributes.is_empty();
        let big = payload.content_length() >= self.direct_bytes_min;
        let direct = ours && big && self.direct.load(Ordering::Relaxed);
        if !direct {
            return self.put_through_cache(location, payload, opts).await;
        }
        let dest = self.library.path_to_filesystem(location)?;
        let (window_slot, direct, window_bytes) = (self.window.clone(), self.direct.clone(), self.window_bytes);
        let (root, fsync) = (self.root.clone(), self.fsync);
        let mode = opts.mode.clone();
        let direct_payload = payload.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut reused = window_slot.try_lock().ok().map(|mut slot| slot.take().unwrap_or_else(|| Window::new(window_bytes)));
            let mut own = None;
            let window = match reused.as_mut() {
                Some(window) => window,
                None => own.insert(Window::new(window_bytes)),
            };
            let how = PutHow { window: Some(window.slice()), fsync, root: &root };
            let outcome = put_staged(&dest, &direct_payload, &mode, how);
            if let (Some(window), Ok(mut slot)) = (reused, window_slot.lock()) {
                *slot = Some(window);
            }
            if matches!(outcome, Ok(Direct::Refused)) && direct.swap(false, Ordering::Relaxed) {
                tracing::warn!("the data folder refuses O_DIRECT: big objects are written through the page cache");
            }
            outcome
        })
        .await
        .map_err(|e| generic(io::Error::other(e)))?;
        // Where the direct write did not store the object, a write through the page
        // cache does.
        let through_cache = self.put_through_cache(location, payload, opts);
        match outcome {
            Ok(Direct::Stored) => Ok(PutResult { e_tag: None, version: None }),
            Ok(Direct::Refused) => through_cache.await,
            Err(e @ object_store::Error::AlreadyExists { .. }) => Err(e),
            Err(direct_error) => {
                // A file system may refuse direct writes with other errors than EINVAL
                // (some FUSE mounts). If a write through the page cache succeeds where
                // the direct one failed, the failure was the direct write's: stop trying
                // it. If both fail (a full disk, say), the error is the store's, and the
                // streamer retries as it does for any store error.
                let stored = through_cache.await?;
                if self.direct.swap(false, Ordering::Relaxed) {
                    tracing::warn!(
                        "a direct write failed ({direct_error}) where a buffered one succeeded: big objects are written through the page cache"
                    );
                }
                Ok(stored)
            }
        }
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.library.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.library.get_opts(location, options).await
    }

    async fn delete(&self, location: &Path) -> object_store::Result<()> {
        self.library.delete(location).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.library.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.library.list_with_delimiter(prefix).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.library.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.library.copy_if_not_exists(from, to).await
    }
}

#[cfg(test)]
mod tests;
