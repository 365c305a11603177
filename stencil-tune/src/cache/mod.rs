//! The persistent tuning cache ("wisdom", as FFTW): a versioned JSON file of tuned schedules,
//! measured machine bandwidths and measured cache capacities.
//!
//! Where: `$STENCIL_TUNE_CACHE` if set, else `$XDG_CACHE_HOME/stencil/tuning.json`, else
//! `$HOME/.cache/stencil/tuning.json`.
//!
//! Concurrency: every change is read-modify-write under an exclusive lock on a sidecar file
//! (`tuning.json.lock`, `std::fs::File::lock`), and the new contents are written to a temporary
//! file in the same directory and renamed over the old one, so readers (who take no lock) always
//! see a whole file and concurrent writers never lose each other's entries.
//!
//! Robustness: a file that cannot be parsed is renamed aside (`tuning.json.corrupt-<time>-<pid>-<serial>`)
//! with a `tracing` warning and the cache starts empty; a file of another [`SCHEMA_VERSION`] is
//! ignored with a warning and replaced on the next write; entries of another library version or
//! another build ([`BUILD_ID`]: target features, code revision, compiler) do not match keys of
//! this one, and measured bandwidths and cache capacities expire after
//! [`BANDWIDTH_MAX_AGE_SECONDS`]. Reading never fails: a missing or unreadable file is an empty
//! cache. Writing returns a [`CacheError`].

mod key;
#[cfg(test)]
mod revision;

pub use key::{
    BANDWIDTH_MAX_AGE_SECONDS, BUILD_ID, BandwidthEntry, CacheKey, CachesEntry, LIBRARY_VERSION,
    SCHEMA_VERSION, TunedEntry,
};

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use key::Document;

use crate::probe::CacheProbe;

/// The environment variable that overrides the cache file's path.
pub const CACHE_ENV_VAR: &str = "STENCIL_TUNE_CACHE";

/// What went wrong writing, exporting or importing the cache.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CacheErrorKind {
    /// No cache path: neither `STENCIL_TUNE_CACHE`, `XDG_CACHE_HOME` nor `HOME` is set.
    NoCacheDir,
    /// Creating, locking, writing or renaming a file failed.
    Io,
    /// A file to import is not a cache file of this schema.
    Unreadable,
}

/// An error of the tuning cache: its kind, the file concerned and the cause.
#[derive(Debug)]
pub struct CacheError {
    kind: CacheErrorKind,
    path: PathBuf,
    detail: String,
}

impl CacheError {
    /// What went wrong.
    pub fn kind(&self) -> CacheErrorKind {
        self.kind
    }

    /// The file concerned (empty for [`CacheErrorKind::NoCacheDir`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(path: &Path, err: io::Error) -> CacheError {
        CacheError {
            kind: CacheErrorKind::Io,
            path: path.to_path_buf(),
            detail: err.to_string(),
        }
    }
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            CacheErrorKind::NoCacheDir => write!(
                f,
                "no tuning-cache path: set {CACHE_ENV_VAR}, XDG_CACHE_HOME or HOME"
            ),
            CacheErrorKind::Io => {
                write!(f, "tuning cache {}: {}", self.path.display(), self.detail)
            }
            CacheErrorKind::Unreadable => write!(
                f,
                "{} is not a tuning cache of schema {SCHEMA_VERSION}: {}",
                self.path.display(),
                self.detail
            ),
        }
    }
}

impl std::error::Error for CacheError {}

/// A tuning cache file (see the module documentation). Cheap to create; every call reads or
/// writes the file, so several handles and several processes may share one file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TuningCache {
    path: PathBuf,
}

impl TuningCache {
    /// The cache at `path`.
    pub fn at(path: impl Into<PathBuf>) -> TuningCache {
        TuningCache { path: path.into() }
    }

    /// The cache at the default path (see the module documentation).
    pub fn open_default() -> Result<TuningCache, CacheError> {
        default_path().map(TuningCache::at).ok_or(CacheError {
            kind: CacheErrorKind::NoCacheDir,
            path: PathBuf::new(),
            detail: String::new(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tuned result stored under `key`, if any.
    pub fn lookup(&self, key: &CacheKey) -> Option<TunedEntry> {
        self.load()
            .tuned
            .into_iter()
            .find(|r| r.key == *key)
            .map(|r| r.value)
    }

    /// Every tuned result in the file, in the order stored.
    pub fn entries(&self) -> Vec<(CacheKey, TunedEntry)> {
        self.load()
            .tuned
            .into_iter()
            .map(|r| (r.key, r.value))
            .collect()
    }

    /// Stores (or replaces) the result of `key`.
    pub fn store(&self, key: CacheKey, entry: TunedEntry) -> Result<(), CacheError> {
        self.update(|doc| doc.put(key, entry))
    }

    /// The measured bandwidth (bytes per second) of `device` with `threads` threads, if stored
    /// and still fresh ([`BandwidthEntry::is_fresh`]: measured within
    /// [`BANDWIDTH_MAX_AGE_SECONDS`]).
    pub fn bandwidth(&self, device: &str, threads: usize) -> Option<f64> {
        let now = unix_now();
        self.load()
            .bandwidth
            .into_iter()
            .find(|b| b.device == device && b.threads == threads && b.is_fresh(now))
            .map(|b| b.bytes_per_second)
    }

    /// Every measured bandwidth in the file: `(device, threads, bytes per second)`.
    pub fn bandwidths(&self) -> Vec<(String, usize, f64)> {
        self.load()
            .bandwidth
            .into_iter()
            .map(|b| (b.device, b.threads, b.bytes_per_second))
            .collect()
    }

    /// Stores the measured bandwidth of `device` with `threads` threads.
    pub fn store_bandwidth(
        &self,
        device: &str,
        threads: usize,
        bytes_per_second: f64,
    ) -> Result<(), CacheError> {
        self.update(|doc| {
            doc.put_bandwidth(BandwidthEntry {
                device: device.to_string(),
                threads,
                bytes_per_second: if bytes_per_second.is_finite() {
                    bytes_per_second
                } else {
                    0.0
                },
                measured_unix: unix_now(),
            })
        })
    }

    /// The cached bandwidth of `device` with `threads` threads, or `measure()` stored for next
    /// time (the machine's bandwidth is measured once per machine and again when the
    /// measurement has expired, see [`bandwidth`](Self::bandwidth)). A failure to store is
    /// logged, not returned: the measured value is still good.
    pub fn bandwidth_or_measure(
        &self,
        device: &str,
        threads: usize,
        measure: impl FnOnce() -> f64,
    ) -> f64 {
        if let Some(bw) = self.bandwidth(device, threads).filter(|bw| *bw > 0.0) {
            return bw;
        }
        let bw = measure();
        if let Err(e) = self.store_bandwidth(device, threads, bw) {
            tracing::warn!(target: "stencil_tune::cache", error = %e, "could not cache the measured bandwidth");
        }
        bw
    }

    /// The cache capacities measured on `device`, if stored and still fresh
    /// ([`CachesEntry::is_fresh`]: measured within [`BANDWIDTH_MAX_AGE_SECONDS`], as
    /// bandwidths). A caller whose system now reports other sizes than
    /// [`CachesEntry::reported`] should measure again.
    pub fn caches(&self, device: &str) -> Option<CachesEntry> {
        let now = unix_now();
        self.load()
            .caches
            .into_iter()
            .find(|c| c.device == device && c.is_fresh(now))
    }

    /// Stores (or replaces) the cache capacities `probe` measured on `device`, dated now.
    pub fn store_caches(&self, device: &str, probe: &CacheProbe) -> Result<(), CacheError> {
        self.update(|doc| {
            doc.put_caches(CachesEntry {
                device: device.to_string(),
                effective: probe.effective,
                reported: probe.reported,
                measured_unix: unix_now(),
            })
        })
    }

    /// Writes this cache's contents to `path` (an application ships that file); returns the
    /// number of tuned entries written.
    pub fn export_to(&self, path: &Path) -> Result<usize, CacheError> {
        let doc = self.load();
        let n = doc.tuned.len();
        write_atomically(path, &doc)?;
        Ok(n)
    }

    /// Merges the cache file at `path` into this one (entries of `path` replace entries of the
    /// same key, and its bandwidths and cache capacities those of the same device); returns
    /// the number of tuned entries imported. A file that is not a cache of
    /// this schema is an error and is left untouched.
    pub fn import_from(&self, path: &Path) -> Result<usize, CacheError> {
        let text = fs::read_to_string(path).map_err(|e| CacheError::io(path, e))?;
        let incoming = parse(&text).map_err(|detail| CacheError {
            kind: CacheErrorKind::Unreadable,
            path: path.to_path_buf(),
            detail,
        })?;
        let n = incoming.tuned.len();
        self.update(|doc| {
            for r in incoming.tuned {
                doc.put(r.key, r.value);
            }
            for b in incoming.bandwidth {
                doc.put_bandwidth(b);
            }
            for c in incoming.caches {
                doc.put_caches(c);
            }
        })?;
        Ok(n)
    }

    /// Reads the file without locking; never fails (see the module documentation).
    fn load(&self) -> Document {
        match fs::read_to_string(&self.path) {
            Ok(text) => match parse(&text) {
                Ok(doc) => doc,
                Err(detail) => self.recover(&detail),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => Document::empty(),
            Err(e) => {
                tracing::warn!(target: "stencil_tune::cache", path = %self.path.display(), error = %e, "cannot read the tuning cache; tuning without it");
                Document::empty()
            }
        }
    }

    /// Handles an unparsable file: under the lock, reads it again and, if it is still bad,
    /// sets it aside (another process may have replaced it meanwhile).
    fn recover(&self, detail: &str) -> Document {
        let Ok(_lock) = self.lock() else {
            return Document::empty();
        };
        match fs::read_to_string(&self.path).map(|t| parse(&t)) {
            Ok(Ok(doc)) => doc,
            Ok(Err(_)) => {
                self.set_aside(detail);
                Document::empty()
            }
            Err(_) => Document::empty(),
        }
    }

    /// Renames the current file aside with a warning.
    fn set_aside(&self, detail: &str) {
        let aside = sibling(
            &self.path,
            &format!(
                "corrupt-{}-{}-{}",
                unix_seconds(),
                std::process::id(),
                next_serial()
            ),
        );
        match fs::rename(&self.path, &aside) {
            Ok(()) => tracing::warn!(
                target: "stencil_tune::cache",
                path = %self.path.display(),
                moved_to = %aside.display(),
                error = detail,
                "the tuning cache is corrupt; set it aside and started an empty one"
            ),
            Err(e) => tracing::warn!(
                target: "stencil_tune::cache",
                path = %self.path.display(),
                error = %e,
                "the tuning cache is corrupt and could not be set aside"
            ),
        }
    }

    /// Read-modify-write under the lock.
    fn update(&self, change: impl FnOnce(&mut Document)) -> Result<(), CacheError> {
        let _lock = self.lock()?;
        let mut doc = match fs::read_to_string(&self.path) {
            Ok(text) => match parse(&text) {
                Ok(doc) => doc,
                Err(detail) => {
                    self.set_aside(&detail);
                    Document::empty()
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => Document::empty(),
            Err(e) => return Err(CacheError::io(&self.path, e)),
        };
        change(&mut doc);
        write_atomically(&self.path, &doc)
    }

    /// Takes the exclusive lock on the sidecar file (released when the file is dropped).
    fn lock(&self) -> Result<File, CacheError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| CacheError::io(dir, e))?;
        }
        let lock_path = sibling(&self.path, "lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| CacheError::io(&lock_path, e))?;
        file.lock().map_err(|e| CacheError::io(&lock_path, e))?;
        Ok(file)
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The default cache path (see the module documentation).
pub fn default_path() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var(CACHE_ENV_VAR) {
        return Some(p);
    }
    let base = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("stencil").join("tuning.json"))
}

/// Parses a file's text; a file of another schema is an empty document (with a warning).
fn parse(text: &str) -> Result<Document, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let schema = value
        .get("schema")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| "no `schema` number".to_string())?;
    if schema != u64::from(SCHEMA_VERSION) {
        tracing::warn!(target: "stencil_tune::cache", schema, expected = SCHEMA_VERSION, "tuning cache of another schema; its entries are ignored");
        return Ok(Document::empty());
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Writes `doc` to a temporary file next to `path` and renames it over `path`.
fn write_atomically(path: &Path, doc: &Document) -> Result<(), CacheError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| CacheError::io(dir, e))?;
    }
    let text = serde_json::to_string_pretty(doc).map_err(|e| CacheError {
        kind: CacheErrorKind::Io,
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let temp = sibling(
        path,
        &format!("tmp-{}-{}", std::process::id(), next_serial()),
    );
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&temp);
        CacheError::io(path, e)
    })
}

/// A number unique within this process (for temporary and set-aside file names).
fn next_serial() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// `path` with `.suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
