//! What the tuning cache stores: the key of a tuned result, the result, the measured bandwidth
//! and cache capacities of a machine, and the on-disk document.

use serde::{Deserialize, Serialize};
use stencil_core::hash::structural_hash;
use stencil_core::schedule::SearchSpace;
use stencil_core::{CacheSizes, Kernel};

use crate::model::Roofline;
use crate::search::{Found, Outcome};

/// Version of this library, part of every key: a new version re-tunes.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The build that tunes, part of every key: the target architecture, the vector features the
/// build may use (`-C target-cpu`), and a hash of the sources that generate and run the code
/// and of the compiler's version, taken when the library is built. An AVX2 build and an
/// AVX-512 build, or two builds of different code, never share a tuned schedule. Outside
/// this workspace (a packaged crate) only this crate's own sources are hashed, and the
/// version stands for the rest.
pub const BUILD_ID: &str = env!("STENCIL_BUILD_ID");

/// Version of the file's layout. A file of another schema is ignored (and replaced on the next
/// write); bump it whenever a stored type changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything a tuned schedule depends on.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct CacheKey {
    /// Structural hash of the kernel IR (32 hex digits).
    pub kernel_hash: String,
    /// Interior extents of the grid.
    pub shape: Vec<usize>,
    /// Element type (`f32`, `f64`).
    pub elem: String,
    /// Backend name (`cpu`, `cuda`).
    pub backend: String,
    /// Device fingerprint: the backend's (for the CPU: model name and core count; for a GPU: name and compute capability) and compute capability.
    pub device: String,
    /// Threads the schedule runs on.
    pub threads: usize,
    /// [`SearchSpace::checksum`] of the candidates (16 hex digits).
    pub space_checksum: String,
    /// [`LIBRARY_VERSION`] of the library that tuned.
    pub library_version: String,
    /// [`BUILD_ID`] of the build that tuned (empty in files written before it was kept: such
    /// entries match no key and are tuned again).
    #[serde(default)]
    pub build: String,
}

impl CacheKey {
    /// The key of `kernel` over `shape` on `backend`/`device` with `threads` threads, searched
    /// over `space`, by this version and build of the library.
    pub fn new(
        kernel: &Kernel,
        shape: &[usize],
        backend: &str,
        device: &str,
        threads: usize,
        space: &SearchSpace,
    ) -> CacheKey {
        CacheKey {
            kernel_hash: structural_hash(kernel).to_string(),
            shape: shape.to_vec(),
            elem: kernel.elem().rust_name().to_string(),
            backend: backend.to_string(),
            device: device.to_string(),
            threads,
            space_checksum: format!("{:016x}", space.checksum()),
            library_version: LIBRARY_VERSION.to_string(),
            build: BUILD_ID.to_string(),
        }
    }
}

/// A tuned result. Non-finite numbers are stored as 0 (JSON has no NaN or infinity).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct TunedEntry {
    /// The chosen point (one index per dimension of the space).
    pub point: Vec<usize>,
    /// The chosen schedule in words ([`SearchSpace::describe`]).
    pub schedule: String,
    /// Seconds per sweep of the chosen schedule.
    pub seconds: f64,
    /// Achieved compulsory bytes per second.
    pub bytes_per_second: f64,
    /// Fraction of the roofline bound achieved (1 = at the machine's limit).
    pub roofline_fraction: f64,
    /// Trials the search spent.
    pub trials: usize,
    /// Wall-clock seconds the search took.
    pub tuning_seconds: f64,
    /// Relative spread of the chosen schedule's repeats.
    pub spread: f64,
}

impl TunedEntry {
    /// The entry for `found`, chosen by a search of `space` that took `outcome.trials` trials
    /// and `outcome.elapsed`; throughput and roofline fraction from `roofline` (0 without one).
    pub fn new(
        space: &SearchSpace,
        found: &Found,
        outcome: &Outcome,
        roofline: Option<&Roofline>,
    ) -> TunedEntry {
        let seconds = found.trial.seconds;
        TunedEntry {
            point: found.point.clone(),
            schedule: space.describe(&found.point),
            seconds,
            bytes_per_second: roofline.map_or(0.0, |r| r.bytes_per_second(seconds)),
            roofline_fraction: roofline.map_or(0.0, |r| r.fraction_of_bound(seconds)),
            trials: outcome.trials,
            tuning_seconds: outcome.elapsed.as_secs_f64(),
            spread: found.trial.spread,
        }
        .sanitised()
    }

    /// This entry with non-finite numbers replaced by 0.
    pub(crate) fn sanitised(mut self) -> TunedEntry {
        for v in [
            &mut self.seconds,
            &mut self.bytes_per_second,
            &mut self.roofline_fraction,
            &mut self.tuning_seconds,
            &mut self.spread,
        ] {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
        self
    }
}

/// A machine's measured memory bandwidth.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct BandwidthEntry {
    /// Device fingerprint.
    pub device: String,
    /// Threads the measurement ran on.
    pub threads: usize,
    /// Bytes per second.
    pub bytes_per_second: f64,
    /// When it was measured, in seconds since the Unix epoch (0 in files written before it
    /// was kept: such a measurement counts as expired).
    #[serde(default)]
    pub measured_unix: u64,
}

/// How long a measured bandwidth or measured cache capacities are trusted, in seconds (7
/// days): older ones are measured again, so a measurement taken while the machine was loaded
/// does not skew every later bound, roofline fraction and cache-sized decision.
pub const BANDWIDTH_MAX_AGE_SECONDS: u64 = 7 * 24 * 3600;

/// Whether a measurement taken at `measured_unix` is still trusted at `now_unix` (not older
/// than [`BANDWIDTH_MAX_AGE_SECONDS`], not from the future, not of unknown age: 0).
fn is_fresh(measured_unix: u64, now_unix: u64) -> bool {
    measured_unix != 0
        && measured_unix <= now_unix
        && now_unix - measured_unix <= BANDWIDTH_MAX_AGE_SECONDS
}

impl BandwidthEntry {
    /// Whether the measurement is still trusted at `now_unix` (not older than
    /// [`BANDWIDTH_MAX_AGE_SECONDS`], not from the future, not of unknown age).
    pub fn is_fresh(&self, now_unix: u64) -> bool {
        is_fresh(self.measured_unix, now_unix)
    }
}

/// A machine's cache capacities as a cache probe measured them
/// ([`crate::probe::measure_caches`]), with what the system reported then.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CachesEntry {
    /// Device fingerprint.
    pub device: String,
    /// The effective capacities, which the backend sizes things by
    /// ([`Backend::use_measured_caches`](stencil_core::Backend::use_measured_caches)).
    #[serde(with = "CacheSizesDef")]
    pub effective: CacheSizes,
    /// What the system reported when they were measured (a report that has changed since,
    /// on a machine of the same fingerprint, calls for measuring again).
    #[serde(with = "CacheSizesDef")]
    pub reported: CacheSizes,
    /// When they were measured, in seconds since the Unix epoch.
    pub measured_unix: u64,
}

impl CachesEntry {
    /// Whether the measurement is still trusted at `now_unix`, under the rules of measured
    /// bandwidths ([`BandwidthEntry::is_fresh`]).
    pub fn is_fresh(&self, now_unix: u64) -> bool {
        is_fresh(self.measured_unix, now_unix)
    }
}

/// How [`CacheSizes`] (stencil-core, which has no serde) is stored: its three fields.
#[derive(Serialize, Deserialize)]
#[serde(remote = "CacheSizes")]
struct CacheSizesDef {
    l1_bytes: usize,
    l2_bytes: usize,
    llc_bytes: usize,
}

/// One tuned record of the file.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) key: CacheKey,
    pub(crate) value: TunedEntry,
}

/// The whole file.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Document {
    pub(crate) schema: u32,
    pub(crate) tuned: Vec<Record>,
    pub(crate) bandwidth: Vec<BandwidthEntry>,
    /// Measured cache capacities per device (absent from files written before they were
    /// kept: those load with none; readers that predate them ignore the field).
    #[serde(default)]
    pub(crate) caches: Vec<CachesEntry>,
}

impl Document {
    /// An empty document of the current schema.
    pub(crate) fn empty() -> Document {
        Document {
            schema: SCHEMA_VERSION,
            ..Document::default()
        }
    }

    /// Inserts or replaces the record of `key`.
    pub(crate) fn put(&mut self, key: CacheKey, value: TunedEntry) {
        let value = value.sanitised();
        match self.tuned.iter_mut().find(|r| r.key == key) {
            Some(r) => r.value = value,
            None => self.tuned.push(Record { key, value }),
        }
    }

    /// Inserts or replaces the bandwidth of `device` with `threads`.
    pub(crate) fn put_bandwidth(&mut self, entry: BandwidthEntry) {
        match self
            .bandwidth
            .iter_mut()
            .find(|b| b.device == entry.device && b.threads == entry.threads)
        {
            Some(b) => *b = entry,
            None => self.bandwidth.push(entry),
        }
    }

    /// Inserts or replaces the cache capacities of `entry.device`.
    pub(crate) fn put_caches(&mut self, entry: CachesEntry) {
        match self.caches.iter_mut().find(|c| c.device == entry.device) {
            Some(c) => *c = entry,
            None => self.caches.push(entry),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_from_a_search_outcome() {
        use crate::measure::Trial;
        use crate::search::StopReason;
        let space = SearchSpace::new().with_ints("tile", [8, 16, 32]);
        let found = Found {
            point: vec![1],
            trial: Trial {
                seconds: 0.004,
                spread: 0.02,
                repeats: 3,
            },
        };
        let outcome = Outcome {
            best: Some(found.clone()),
            trials: 7,
            failed: 0,
            illegal: 0,
            pruned: 0,
            elapsed: std::time::Duration::from_millis(250),
            stop: StopReason::Completed,
            history: Vec::new(),
        };
        let roofline = Roofline {
            n_points: 1.0e6,
            bytes_per_point: 16.0,
            flops_per_point: 8.0,
            bandwidth: 1.0e10,
            peak_flops: 1.0e11,
            cache_fit: None,
            stores: None,
        };
        let e = TunedEntry::new(&space, &found, &outcome, Some(&roofline));
        assert_eq!(e.point, vec![1]);
        assert_eq!(e.schedule, "tile=16");
        // 16e6 bytes in 4 ms = 4e9 B/s; the bound is 1.6 ms, so 40% of it.
        assert!((e.bytes_per_second - 4.0e9).abs() < 1.0);
        assert!((e.roofline_fraction - 0.4).abs() < 1e-12);
        assert_eq!((e.trials, e.tuning_seconds, e.spread), (7, 0.25, 0.02));
    }

    #[test]
    fn put_replaces_the_same_key_and_sanitises() {
        let key = CacheKey {
            kernel_hash: "ab".into(),
            shape: vec![8, 8],
            elem: "f64".into(),
            backend: "cpu".into(),
            device: "d".into(),
            threads: 2,
            space_checksum: "00".into(),
            library_version: LIBRARY_VERSION.into(),
            build: BUILD_ID.into(),
        };
        let entry = TunedEntry {
            point: vec![1],
            schedule: "a=1".into(),
            seconds: 0.5,
            bytes_per_second: f64::NAN,
            roofline_fraction: 0.9,
            trials: 3,
            tuning_seconds: 0.1,
            spread: 0.01,
        };
        let mut doc = Document::empty();
        doc.put(key.clone(), entry.clone());
        doc.put(
            key.clone(),
            TunedEntry {
                seconds: 0.25,
                ..entry
            },
        );
        assert_eq!(doc.tuned.len(), 1);
        assert_eq!(doc.tuned[0].value.seconds, 0.25);
        assert_eq!(doc.tuned[0].value.bytes_per_second, 0.0);
    }
}
