//! What tuning knows of the machine beyond a call: its memory bandwidth per device and
//! thread count, measured by the backend, and its cache capacities, measured by the
//! working-set sweep of [`probe`](crate::probe). Both are kept in the tuning cache, dated,
//! and measured again after seven days ([`BANDWIDTH_MAX_AGE_SECONDS`]); the capacities also
//! when the system's report changed since they were measured.
//!
//! [`BANDWIDTH_MAX_AGE_SECONDS`]: crate::cache::BANDWIDTH_MAX_AGE_SECONDS

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use stencil_core::CacheSizes;

use crate::cache::TuningCache;
use crate::probe::{CacheProbe, measure_caches};

/// The device's bandwidth: cached, or measured now (`measure`) and cached.
pub fn bandwidth(
    measure: &dyn Fn() -> Option<f64>,
    cache: Option<&TuningCache>,
    device: &str,
    threads: usize,
) -> Option<f64> {
    match cache {
        Some(cache) => {
            let cached = cache.bandwidth(device, threads).filter(|bw| *bw > 0.0);
            cached.or_else(|| {
                let bw = measure()?;
                Some(cache.bandwidth_or_measure(device, threads, || bw))
            })
        }
        None => measure(),
    }
    .filter(|bw| bw.is_finite() && *bw > 0.0)
}

/// Where a machine's cache capacities came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CachesSource {
    /// Known to this process already.
    Remembered,
    /// Read from the tuning cache.
    Cached,
    /// Measured now (and stored, when there is a cache file).
    Measured,
}

fn known() -> &'static Mutex<HashMap<String, (CacheSizes, CacheSizes)>> {
    static KNOWN: OnceLock<Mutex<HashMap<String, (CacheSizes, CacheSizes)>>> = OnceLock::new();
    KNOWN.get_or_init(Mutex::default)
}

/// The effective cache capacities of `device`, which reports `reported`: remembered from an
/// earlier call of this process, else read from `cache` (a fresh entry measured under the
/// same report), else, when `may_measure`, measured now by the probe (tens of milliseconds)
/// and stored in `cache`. `None` when unknown and not measured.
pub fn caches(
    cache: Option<&TuningCache>,
    device: &str,
    reported: CacheSizes,
    may_measure: bool,
) -> Option<(CacheSizes, CachesSource)> {
    caches_with(cache, device, reported, may_measure, &measure_caches)
}

/// [`caches`] with the probe given (tests measure nothing).
pub fn caches_with(
    cache: Option<&TuningCache>,
    device: &str,
    reported: CacheSizes,
    may_measure: bool,
    probe: &dyn Fn(CacheSizes) -> CacheProbe,
) -> Option<(CacheSizes, CachesSource)> {
    if let Some(&(sizes, under)) = super::locks::lock(known()).get(device)
        && under == reported
    {
        return Some((sizes, CachesSource::Remembered));
    }
    let stored = cache
        .and_then(|c| c.caches(device))
        .filter(|e| e.reported == reported);
    let (sizes, source) = match stored {
        Some(entry) => (entry.effective, CachesSource::Cached),
        None if may_measure => {
            let measured = probe(reported);
            if let Some(cache) = cache
                && let Err(e) = cache.store_caches(device, &measured)
            {
                tracing::warn!(target: "stencil::tuning", error = %e, "could not cache the measured cache capacities");
            }
            tracing::info!(
                target: "stencil::tuning",
                device,
                reported = ?reported,
                measured = ?measured.effective,
                seconds = measured.seconds,
                "measured the cache capacities"
            );
            (measured.effective, CachesSource::Measured)
        }
        None => return None,
    };
    super::locks::lock(known()).insert(device.to_string(), (sizes, reported));
    Some((sizes, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(llc_mib: usize) -> CacheSizes {
        CacheSizes {
            l1_bytes: 32 << 10,
            l2_bytes: 1 << 20,
            llc_bytes: llc_mib << 20,
        }
    }

    fn temp_cache(name: &str) -> TuningCache {
        let dir = std::env::temp_dir().join(format!(
            "stencil-tune-machine-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TuningCache::at(dir.join("tuning.json"))
    }

    #[test]
    fn capacities_are_measured_once_then_remembered_and_cached() {
        let cache = temp_cache("once");
        let probes = std::cell::Cell::new(0);
        let probe = |reported: CacheSizes| {
            probes.set(probes.get() + 1);
            CacheProbe {
                effective: sizes(12),
                reported,
                curve: Vec::new(),
                seconds: 0.01,
            }
        };
        let device = format!("test device {}", std::process::id());
        // Not known, not allowed to measure: nothing.
        assert_eq!(
            caches_with(Some(&cache), &device, sizes(480), false, &probe),
            None
        );
        let first = caches_with(Some(&cache), &device, sizes(480), true, &probe);
        assert_eq!(first, Some((sizes(12), CachesSource::Measured)));
        let again = caches_with(Some(&cache), &device, sizes(480), true, &probe);
        assert_eq!(again, Some((sizes(12), CachesSource::Remembered)));
        assert_eq!(probes.get(), 1);
        // Another process (the memo forgotten) reads the file.
        super::super::locks::lock(known()).remove(&device);
        let read = caches_with(Some(&cache), &device, sizes(480), false, &probe);
        assert_eq!(read, Some((sizes(12), CachesSource::Cached)));
        // A changed report is measured again.
        let changed = caches_with(Some(&cache), &device, sizes(32), true, &probe);
        assert_eq!(changed.map(|c| c.1), Some(CachesSource::Measured));
        assert_eq!(probes.get(), 2);
    }
}
