//! What tuning knows of the machine beyond a call: its memory bandwidth per device and
//! thread count, measured by the backend, and kept in the tuning cache (dated, measured
//! again after seven days).

use crate::cache::TuningCache;

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
