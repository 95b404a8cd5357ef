//! The local folder store (`--data-dir`, the default): object_store's
//! `LocalFileSystem` with one change. An object of at least [`DIRECT_BYTES_MIN`] (a
//! busy node's segment, a checkpoint part) is written with `O_DIRECT` from one reused,
//! block-aligned window instead of through the page cache; everything else (reads,
//! listings, deletes, small objects such as manifests) is the library's.
//!
//! Why by hand: a node writes its delta stream once and reads it back only to recover,
//! so the page cache is the wrong home for it. Through the page cache every segment
//! takes fresh pages, which the kernel copies into, later writes back and then frees
//! when the segment is deleted after a checkpoint. Measured on the 2-core VM
//! (docs/benchmarks.md, "Thirty-first session"): writing a 14 MiB segment every 250 ms
//! cost 47-56 ms of CPU through the page cache (the VM hands freed pages back to its
//! host, so each fresh page costs a host fault) against 4-5 ms with `O_DIRECT` from a
//! reused buffer, and on one core that time is taken from the shard serving clients.
//!
//! Owns the window and nothing else; never decides what is written or when (the
//! streamer does), and never changes what a reader sees: the same files under the same
//! names, a temporary `name#N` file (which `LocalFileSystem` lists as absent) linked
//! into place, create-only where asked. Durability is the library's too: no fsync (a
//! stored object survives the process being killed, not the machine losing power).
//! Where the file system refuses `O_DIRECT` (tmpfs on older kernels, some FUSE
//! mounts), the store says so once and writes through the library from then on.

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
    /// The window, free between writes; a second concurrent big write takes a window
    /// of its own for its duration.
    window: Arc<Mutex<Option<Window>>>,
    /// False once the file system refused a direct write.
    direct: Arc<AtomicBool>,
    direct_bytes_min: usize,
    window_bytes: usize,
}

impl LocalStore {
    pub fn new(root: &FsPath) -> object_store::Result<LocalStore> {
        LocalStore::with_limits(root, DIRECT_BYTES_MIN, WINDOW_BYTES)
    }

    /// [`LocalStore::new`] with other sizes (tests cross the window's edges with small
    /// objects).
    pub fn with_limits(root: &FsPath, direct_bytes_min: usize, window_bytes: usize) -> object_store::Result<LocalStore> {
        assert!(window_bytes > 0 && window_bytes.is_multiple_of(BLOCK_BYTES));
        Ok(LocalStore {
            library: LocalFileSystem::new_with_prefix(root)?,
            window: Arc::new(Mutex::new(None)),
            direct: Arc::new(AtomicBool::new(true)),
            direct_bytes_min,
            window_bytes,
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

/// Create `dest#N` for the first free N, as `LocalFileSystem` names its own temporary
/// files (its listings skip them), creating parent folders as needed.
fn create_staging(dest: &FsPath) -> io::Result<(File, PathBuf)> {
    // Bounded: each attempt either succeeds, fails for good, or finds a name taken by
    // another writer's temporary file, and there are only so many of those.
    for suffix in 1..=1024u32 {
        let mut name = dest.as_os_str().to_owned();
        name.push(format!("#{suffix}"));
        let staging = PathBuf::from(name);
        let open = || OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_DIRECT).open(&staging);
        match open() {
            Ok(file) => return Ok((file, staging)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                return open().map(|file| (file, staging));
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

/// Write `payload` to `dest` directly; `Refused` when the file system does not take
/// `O_DIRECT`, with nothing left behind.
fn put_direct(dest: &FsPath, payload: &PutPayload, mode: &PutMode, window: &mut [u8]) -> object_store::Result<Direct> {
    let (mut file, staging) = match create_staging(dest) {
        Ok(created) => created,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(Direct::Refused),
        Err(e) => return Err(generic(e)),
    };
    let cleanup = |e| remove_then(&staging, e);
    let refused = || remove_then(&staging, Direct::Refused);
    match write_through_window(&mut file, window, payload) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(refused()),
        Err(e) => return Err(cleanup(generic(e))),
    }
    drop(file);
    match mode {
        PutMode::Create => match std::fs::hard_link(&staging, dest) {
            Ok(()) => {
                let _ = std::fs::remove_file(&staging);
                Ok(Direct::Stored)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                Err(cleanup(object_store::Error::AlreadyExists { path: dest.display().to_string(), source: Box::new(e) }))
            }
            Err(e) => Err(cleanup(generic(e))),
        },
        PutMode::Overwrite => std::fs::rename(&staging, dest).map(|()| Direct::Stored).map_err(|e| cleanup(generic(e))),
        PutMode::Update(_) => unreachable!("the caller sends conditional updates to the library"),
    }
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> object_store::Result<PutResult> {
        let eligible = self.direct.load(Ordering::Relaxed)
            && payload.content_length() >= self.direct_bytes_min
            && !matches!(opts.mode, PutMode::Update(_))
            && opts.attributes.is_empty();
        if !eligible {
            return self.library.put_opts(location, payload, opts).await;
        }
        let dest = self.library.path_to_filesystem(location)?;
        let (window_slot, direct, window_bytes) = (self.window.clone(), self.direct.clone(), self.window_bytes);
        let mode = opts.mode.clone();
        let direct_payload = payload.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut reused = window_slot.try_lock().ok().map(|mut slot| slot.take().unwrap_or_else(|| Window::new(window_bytes)));
            let mut own = None;
            let window = match reused.as_mut() {
                Some(window) => window,
                None => own.insert(Window::new(window_bytes)),
            };
            let outcome = put_direct(&dest, &direct_payload, &mode, window.slice());
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
        match outcome {
            Ok(Direct::Stored) => Ok(PutResult { e_tag: None, version: None }),
            Ok(Direct::Refused) => self.library.put_opts(location, payload, opts).await,
            Err(e @ object_store::Error::AlreadyExists { .. }) => Err(e),
            Err(direct_error) => {
                // A file system may refuse direct writes with other errors than EINVAL
                // (some FUSE mounts). If the library's write succeeds where the direct
                // one failed, the failure was the direct write's: stop trying it. If
                // both fail (a full disk, say), the error is the store's, and the
                // streamer retries as it does for any store error.
                let stored = self.library.put_opts(location, payload, opts).await?;
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
