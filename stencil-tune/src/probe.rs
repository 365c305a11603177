//! The effective capacities of the CPU's caches, measured rather than trusted: a working-set
//! read sweep ([`measure_caches`]) and the pure function that reads capacities off its curve
//! ([`effective_caches`]).
//!
//! The sizes the system reports are not always the caches a process gets: a cloud VM may
//! report its host's last-level cache (an Intel Xeon VM reports 480 MiB) while neighbours
//! share the real one, and every decision sized by the report (streaming stores, blocks,
//! temporal blocking, the tuner's cache-fit model) then goes wrong. The sweep reads buffers
//! of doubling sizes and records the read throughput of each: a plateau per cache level, a
//! drop where a level stops holding the working set, and memory speed beyond the last one.
//!
//! The sweep runs on the calling thread, one 8-byte word per 64-byte cache line with eight
//! independent sums (so the loads, not the additions, set the pace); throughput counts whole
//! lines. It reads at the same speeds in optimised builds and in builds with debug
//! assertions at `opt-level = 1`; without optimisation (`opt-level = 0`) the loop itself is
//! slower than the first two levels, whose knees then go unseen (their reported sizes stand)
//! while the last level's is still found. It allocates little (at most twice the reported
//! last level, and never more than [`MAX_PROBE_BYTES`]; the buffer grows with the sizes and
//! the sweep stops once it has seen memory speed), since first touches of pages are slow on
//! virtual machines. It takes tens of milliseconds on a quiet machine.

use std::time::Instant;

use stencil_core::CacheSizes;

/// The smallest working set of the sweep, bytes (below any first-level data cache).
pub const FIRST_SIZE: usize = 16 << 10;

/// The largest buffer the sweep ever allocates, bytes.
pub const MAX_PROBE_BYTES: usize = 128 << 20;

/// Where a level's capacity is read off: the working set at which the throughput has come
/// down this fraction of the way (in logarithm) from the level's plateau to the next level's
/// (see [`effective_caches`]). A quarter rather than half way: the capacity is the largest
/// working set still served at about the level's speed, and a cache loses speed from its
/// first evictions on. On a curve whose throughput halves from one doubling to the next the
/// quarter point lies 1.19 times past the last size fully served (half way: 1.41); on a
/// gradual one (hits falling as capacity over size) 1.3 times (half way: 1.7).
pub const KNEE_FRACTION: f64 = 0.25;

/// The least ratio between a level's plateau and the next level's for the drop between them
/// to count as a knee (a smaller one is within what load and frequency changes do to one
/// plateau).
pub const MIN_DROP: f64 = 1.5;

/// How many times faster or slower than the points around it a point of a sweep must read to
/// be set aside as noise (see [`effective_caches`], step 1): above the few percent that
/// repeated sweeps differ by, below the factor 3 that a neighbour's burst costs one point.
pub const OUTLIER: f64 = 1.25;

/// The sweep stops once a working set beyond the private second level reads this many times
/// slower than the fastest one beyond it (the last level's plateau): memory speed.
pub const MEMORY_DROP: f64 = 2.5;

/// Bytes read per timed repeat at least (several passes over a small working set), so the
/// clock's resolution and overhead stay below a percent.
const REPEAT_BYTES: usize = 4 << 20;

/// Timed repeats per working set up to [`MANY_REPEATS_UP_TO`] bytes (the best is kept).
const MANY_REPEATS: usize = 5;

/// Working sets up to this many bytes get [`MANY_REPEATS`] repeats, larger ones
/// [`FEW_REPEATS`] (each is a long pass already).
const MANY_REPEATS_UP_TO: usize = 8 << 20;

/// Timed repeats per working set above [`MANY_REPEATS_UP_TO`].
const FEW_REPEATS: usize = 3;

/// What a cache probe found.
#[derive(Clone, PartialEq, Debug)]
pub struct CacheProbe {
    /// The capacities to size things by ([`effective_caches`] of the curve).
    pub effective: CacheSizes,
    /// What the system reported (the probe's input).
    pub reported: CacheSizes,
    /// The sweep: `(working-set bytes, read bytes per second)`, sizes doubling from
    /// [`FIRST_SIZE`].
    pub curve: Vec<(usize, f64)>,
    /// Wall-clock seconds the probe took, allocation included.
    pub seconds: f64,
}

/// Measures the effective capacities of this CPU's caches (see the module documentation):
/// working sets doubling from [`FIRST_SIZE`] up to twice `reported.llc_bytes` (at least four
/// times the second level, at most [`MAX_PROBE_BYTES`]), each read in passes of at least a
/// few MiB, the best of a few repeats kept; the sweep stops early once a working set beyond
/// twice the reported second level reads [`MEMORY_DROP`] times slower than the fastest one
/// there, measured twice. The capacities are [`effective_caches`] of the curve.
pub fn measure_caches(reported: CacheSizes) -> CacheProbe {
    let start = Instant::now();
    let mut buffer: Vec<u64> = Vec::new();
    let curve = sweep(reported, |size| {
        let words = size / 8;
        if buffer.len() < words {
            // Written, not only reserved: pages never written all map the one zero page.
            buffer.resize(words, 1);
        }
        read_rate(&buffer[..words])
    });
    drop(buffer);
    CacheProbe {
        effective: effective_caches(&curve, reported),
        reported,
        curve,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The effective capacities that a sweep's `curve` (`(working-set bytes, read bytes per
/// second)`, sizes increasing) shows, given the `reported` ones.
///
/// 1. Noise: a point reading more than [`OUTLIER`] times faster than the size before it,
///    itself in line with the one before (within [`OUTLIER`]), is dropped (a cache
///    hierarchy's curve never rises); then, from the largest size down, a point reading more
///    than [`OUTLIER`] times slower than some larger size is dropped too (a slow moment, not
///    a cache level: the sizes around it carry the curve); finally each remaining throughput
///    is raised to the highest at the same or a larger size (what is left of jitter). A slow
///    point therefore moves a knee by about one doubling at most: it is skipped and the knee
///    placed between the points around it (step 3), unless it is the last point of a
///    plateau, which then looks like the first one past it.
/// 2. Plateaus, by the reported sizes of the levels before: the first level's is the
///    smoothed throughput at the first size; the second level's at the first size of at
///    least twice the reported first level; the last level's at the first size of at least
///    twice the reported second level (so a misreported last level does not matter); the
///    deepest level's (memory, when the sweep reached it) at the last size.
/// 3. Knees: for each level, when its plateau is at least [`MIN_DROP`] times the next
///    level's, the working set where the smoothed throughput crosses
///    `plateau * (next / plateau)^`[`KNEE_FRACTION`], interpolated between the two sizes
///    around the crossing on a logarithmic scale of both size and throughput, rounded to
///    KiB; where those sizes are more than a doubling apart (a point between was set aside
///    as noise), the geometric middle of the two, since the knee may lie anywhere between
///    them.
/// 4. Which size stands: the last level takes its knee where one is found (the measurement
///    wins); the first two levels keep their reported sizes unless the knee is found and
///    more than a factor 2 away from them (the curve clearly contradicts them). A level
///    whose knee is not found keeps its reported size, but never more than the largest
///    size shown to be cache-resident: the largest size whose throughput is at least the
///    threshold between that level's plateau and the deepest level's when those differ by
///    [`MIN_DROP`] or more, else the largest size of the sweep (nothing reads at a lower
///    level's speed).
/// 5. Order: the second level is at least the first, the last level at least the second.
///
/// With fewer than two points, `reported` is returned.
pub fn effective_caches(curve: &[(usize, f64)], reported: CacheSizes) -> CacheSizes {
    let points: Vec<(usize, f64)> = curve
        .iter()
        .copied()
        .filter(|&(size, rate)| size > 0 && rate.is_finite() && rate > 0.0)
        .collect();
    if points.len() < 2 {
        return reported;
    }
    let points = smoothed(&points);
    if points.len() < 2 {
        return reported;
    }
    let sizes: Vec<usize> = points.iter().map(|p| p.0).collect();
    let envelope: Vec<f64> = points.iter().map(|p| p.1).collect();
    let last = sizes.len() - 1;
    let deepest = envelope[last];
    let first_at = |bytes: usize| sizes.iter().position(|&s| s >= bytes);
    let l2_start = first_at(reported.l1_bytes.saturating_mul(2));
    let llc_start = first_at(reported.l2_bytes.saturating_mul(2));
    let curve = Curve {
        sizes: &sizes,
        rates: &envelope,
    };

    let l1 = curve.level(
        reported.l1_bytes,
        Some(0),
        l2_start.map(|i| envelope[i]),
        deepest,
        false,
    );
    let l2 = curve.level(
        reported.l2_bytes,
        l2_start,
        llc_start.map(|i| envelope[i]),
        deepest,
        false,
    );
    let llc = curve.level(reported.llc_bytes, llc_start, Some(deepest), deepest, true);
    let l2 = l2.max(l1);
    CacheSizes {
        l1_bytes: l1,
        l2_bytes: l2,
        llc_bytes: llc.max(l2),
    }
}

/// A smoothed sweep: sizes and their throughputs, never rising.
struct Curve<'a> {
    sizes: &'a [usize],
    rates: &'a [f64],
}

impl Curve<'_> {
    /// The effective size of a level reported as `reported` bytes whose plateau starts at
    /// index `start` and whose next level reads at `next` (see [`effective_caches`], steps 3
    /// and 4); `measured_wins`: the knee replaces the reported size whenever found (the last
    /// level), else only when more than a factor 2 away from it.
    fn level(
        &self,
        reported: usize,
        start: Option<usize>,
        next: Option<f64>,
        deepest: f64,
        measured_wins: bool,
    ) -> usize {
        let Some(start) = start else {
            return reported.min(self.resident(None, deepest));
        };
        let plateau = self.rates[start];
        let knee = next.and_then(|next| self.knee(start, plateau, next));
        match knee {
            Some(knee) => {
                let contradicts =
                    knee > reported.saturating_mul(2) || knee.saturating_mul(2) < reported;
                if measured_wins || contradicts {
                    knee
                } else {
                    reported
                }
            }
            None => reported.min(self.resident(Some(plateau), deepest)),
        }
    }

    /// Where the curve from index `start` crosses the threshold between `upper` and `lower`
    /// (see [`KNEE_FRACTION`]), or `None` when they differ by less than [`MIN_DROP`].
    fn knee(&self, start: usize, upper: f64, lower: f64) -> Option<usize> {
        if upper < MIN_DROP * lower {
            return None;
        }
        let threshold = threshold(upper, lower);
        let i = (start + 1..self.sizes.len()).find(|&i| self.rates[i] < threshold)?;
        let (r0, r1) = (self.rates[i - 1], self.rates[i]);
        let (s0, s1) = (self.sizes[i - 1] as f64, self.sizes[i] as f64);
        let bytes = if s1 > 2.0 * s0 * (1.0 + 1e-9) {
            // A gap left by a point set aside: the knee may lie anywhere in it.
            (s0 * s1).sqrt()
        } else {
            // Both throughputs are positive and r1 < threshold <= r0.
            let t = ((r0 / threshold).ln() / (r0 / r1).ln()).clamp(0.0, 1.0);
            s0 * (s1 / s0).powf(t)
        };
        Some(((bytes / 1024.0).round() as usize).max(1) * 1024)
    }

    /// The largest size shown to be cache-resident for a level whose plateau reads at
    /// `plateau` (see [`effective_caches`], step 4).
    fn resident(&self, plateau: Option<f64>, deepest: f64) -> usize {
        let largest = self.sizes[self.sizes.len() - 1];
        match plateau {
            Some(plateau) if plateau >= MIN_DROP * deepest => {
                let threshold = threshold(plateau, deepest);
                self.sizes
                    .iter()
                    .zip(self.rates)
                    .filter(|&(_, &rate)| rate >= threshold)
                    .map(|(&size, _)| size)
                    .max()
                    .unwrap_or(largest)
            }
            _ => largest,
        }
    }
}

/// The throughput at which a level's capacity is read off between its plateau `upper` and
/// the next level's `lower` (see [`KNEE_FRACTION`]).
fn threshold(upper: f64, lower: f64) -> f64 {
    upper * (lower / upper).powf(KNEE_FRACTION)
}

/// `points` without their outliers, never rising (see [`effective_caches`], step 1).
fn smoothed(points: &[(usize, f64)]) -> Vec<(usize, f64)> {
    let n = points.len();
    let rate = |i: usize| points[i].1;
    // Faster than the size before, which is in line with the one before it (else that one
    // is the outlier, a slow one).
    let spike_up = |i: usize| {
        i >= 2 && rate(i) > OUTLIER * rate(i - 1) && rate(i - 2) <= OUTLIER * rate(i - 1)
    };
    let kept: Vec<(usize, f64)> = (0..n)
        .filter(|&i| !spike_up(i))
        .map(|i| points[i])
        .collect();
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(kept.len());
    let mut fastest_beyond = 0.0f64;
    for &(size, rate) in kept.iter().rev() {
        if rate * OUTLIER < fastest_beyond {
            continue;
        }
        fastest_beyond = fastest_beyond.max(rate);
        out.push((size, fastest_beyond));
    }
    out.reverse();
    out
}

/// The largest working set the sweep reads (see [`measure_caches`]).
fn probe_limit(reported: CacheSizes) -> usize {
    reported
        .llc_bytes
        .saturating_mul(2)
        .max(reported.l2_bytes.saturating_mul(4))
        .clamp(4 * FIRST_SIZE, MAX_PROBE_BYTES)
}

/// The sweep of [`measure_caches`] with `rate_of(size)` measuring the read throughput of a
/// working set of `size` bytes: the curve, sizes doubling from [`FIRST_SIZE`] to
/// [`probe_limit`] or to where [`memory_reached`] holds twice (a second measurement of the
/// last size keeps the faster of the two). The first size is measured twice too (the faster
/// kept), after the clock and the core have warmed up.
fn sweep(reported: CacheSizes, mut rate_of: impl FnMut(usize) -> f64) -> Vec<(usize, f64)> {
    let limit = probe_limit(reported);
    let mut curve: Vec<(usize, f64)> = Vec::new();
    let mut size = FIRST_SIZE;
    while size <= limit {
        let mut rate = rate_of(size);
        if curve.is_empty() {
            rate = rate.max(rate_of(size));
        }
        curve.push((size, rate));
        if memory_reached(&curve, reported) {
            // Confirmed by a second measurement, so one slow moment does not end the sweep.
            let again = rate_of(size);
            if let Some(last) = curve.last_mut() {
                last.1 = last.1.max(again);
            }
            if memory_reached(&curve, reported) {
                break;
            }
        }
        size *= 2;
    }
    curve
}

/// Whether the sweep has seen memory speed (see [`measure_caches`]): its last working set,
/// beyond twice the reported second level, reads [`MEMORY_DROP`] times slower than the
/// fastest one there.
fn memory_reached(curve: &[(usize, f64)], reported: CacheSizes) -> bool {
    let beyond_l2: Vec<f64> = curve
        .iter()
        .filter(|&&(size, _)| size >= reported.l2_bytes.saturating_mul(2))
        .map(|&(_, rate)| rate)
        .collect();
    match beyond_l2.split_last() {
        Some((&last, before)) if !before.is_empty() => {
            let fastest = before.iter().copied().fold(last, f64::max);
            last * MEMORY_DROP <= fastest
        }
        _ => false,
    }
}

/// Read bytes per second over `words`, one word per cache line: the best of a few timed
/// repeats of passes over it, after one pass that brings it into cache.
fn read_rate(words: &[u64]) -> f64 {
    let bytes = words.len() * 8;
    let passes = REPEAT_BYTES.div_ceil(bytes.max(1)).max(1);
    let repeats = if bytes <= MANY_REPEATS_UP_TO {
        MANY_REPEATS
    } else {
        FEW_REPEATS
    };
    std::hint::black_box(read_lines(std::hint::black_box(words)));
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..passes {
            // `black_box`: every pass reads the memory (the sum of one pass is not reused).
            sum = sum.wrapping_add(read_lines(std::hint::black_box(words)));
        }
        std::hint::black_box(sum);
        best = best.min(start.elapsed().as_secs_f64());
    }
    (bytes * passes) as f64 / best.max(1e-9)
}

/// The wrapping sum of the first word of every 64-byte line of `words` (whole groups of 8
/// lines), in eight independent sums.
///
/// Written out, sum by sum, with constant indices into each group, so that a build with debug
/// assertions reads as fast as an optimised one (an iterator over the sums runs at a tenth
/// of the first level's speed there). The compiler fence, which emits no instruction, keeps
/// the compiler from vectorising the loop across groups into gathers, which read the first
/// level at a third of the speed of plain loads (measured on Zen 4: 190 against 570 GB/s).
fn read_lines(words: &[u64]) -> u64 {
    let (mut s0, mut s1, mut s2, mut s3) = (0u64, 0u64, 0u64, 0u64);
    let (mut s4, mut s5, mut s6, mut s7) = (0u64, 0u64, 0u64, 0u64);
    let (groups, _) = words.as_chunks::<64>();
    for group in groups {
        s0 = s0.wrapping_add(group[0]);
        s1 = s1.wrapping_add(group[8]);
        s2 = s2.wrapping_add(group[16]);
        s3 = s3.wrapping_add(group[24]);
        s4 = s4.wrapping_add(group[32]);
        s5 = s5.wrapping_add(group[40]);
        s6 = s6.wrapping_add(group[48]);
        s7 = s7.wrapping_add(group[56]);
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
    [s1, s2, s3, s4, s5, s6, s7]
        .into_iter()
        .fold(s0, u64::wrapping_add)
}

#[cfg(test)]
mod tests;
