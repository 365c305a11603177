//! Tests of the cache probe: capacities read off synthetic curves (truthful and misreported
//! caches, heavy-tailed noise, curves that never drop), the sweep's early stop on a
//! synthetic machine, and one run of the real probe checked for sanity only.

use super::*;
use stencil_core::rng::Rng;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// A cache hierarchy: per level its capacity and read throughput, then memory's throughput.
struct Hierarchy {
    levels: Vec<(usize, f64)>,
    memory: f64,
}

impl Hierarchy {
    /// Read bytes per second over a working set of `size` bytes: a level holding capacity
    /// `c` serves all of a working set up to `c`, and of a larger one a fraction `(c /
    /// size)^4` for the private levels and `(c / size)^2` for the last (shared, its
    /// replacement keeps more lines), as sweeps on the development VM show (the first two
    /// levels drop within one doubling, the last over two); each byte costs the time of the
    /// level that serves it.
    fn rate(&self, size: usize) -> f64 {
        let last = self.levels.len() - 1;
        let held = |level: usize, c: usize| {
            if size <= c {
                1.0
            } else {
                (c as f64 / size as f64).powi(if level == last { 2 } else { 4 })
            }
        };
        let mut served = 0.0;
        let mut seconds = 0.0;
        for (level, &(capacity, rate)) in self.levels.iter().enumerate() {
            let here = (held(level, capacity) - served).max(0.0);
            seconds += here / rate;
            served += here;
        }
        seconds += (1.0 - served) / self.memory;
        1.0 / seconds
    }

    /// The sweep's curve up to `limit` bytes, no early stop.
    fn curve(&self, limit: usize) -> Vec<(usize, f64)> {
        std::iter::successors(Some(FIRST_SIZE), |s| Some(s * 2))
            .take_while(|&s| s <= limit)
            .map(|s| (s, self.rate(s)))
            .collect()
    }
}

/// GB/s, as a sweep reads them.
const G: f64 = 1e9;

/// A server core: 48 KiB, 2 MiB, 32 MiB, memory at a quarter of the last level's speed.
fn server() -> Hierarchy {
    Hierarchy {
        levels: vec![
            (48 * KIB, 300.0 * G),
            (2 * MIB, 150.0 * G),
            (32 * MIB, 80.0 * G),
        ],
        memory: 20.0 * G,
    }
}

/// This project's development VM as measured (Zen 4): 32 KiB at 266 GB/s, 1 MiB at 118,
/// the last level at 99 and memory at 24; `llc` bytes of last level.
fn zen4(llc: usize) -> Hierarchy {
    Hierarchy {
        levels: vec![(32 * KIB, 266.0 * G), (MIB, 118.0 * G), (llc, 99.0 * G)],
        memory: 24.0 * G,
    }
}

fn sizes(l1_bytes: usize, l2_bytes: usize, llc_bytes: usize) -> CacheSizes {
    CacheSizes {
        l1_bytes,
        l2_bytes,
        llc_bytes,
    }
}

fn within(measured: usize, truth: usize, factor: f64) -> bool {
    let ratio = measured as f64 / truth as f64;
    ratio <= factor && ratio >= 1.0 / factor
}

#[test]
fn a_truthful_report_is_confirmed() {
    for (machine, reported) in [
        (server(), sizes(48 * KIB, 2 * MIB, 32 * MIB)),
        (zen4(32 * MIB), sizes(32 * KIB, MIB, 32 * MIB)),
        (zen4(8 * MIB), sizes(32 * KIB, MIB, 8 * MIB)),
    ] {
        let curve = machine.curve(probe_limit(reported));
        let effective = effective_caches(&curve, reported);
        assert_eq!(effective.l1_bytes, reported.l1_bytes, "{effective:?}");
        assert_eq!(effective.l2_bytes, reported.l2_bytes, "{effective:?}");
        assert!(
            within(effective.llc_bytes, reported.llc_bytes, 1.5),
            "{effective:?} for {reported:?}"
        );
    }
}

#[test]
fn a_misreported_last_level_is_measured() {
    // A VM reports its host's 480 MiB; the last level it gets is 32 MiB.
    let reported = sizes(48 * KIB, 2 * MIB, 480 * MIB);
    assert_eq!(probe_limit(reported), MAX_PROBE_BYTES);
    let curve = server().curve(probe_limit(reported));
    let effective = effective_caches(&curve, reported);
    assert!(within(effective.llc_bytes, 32 * MIB, 1.5), "{effective:?}");
    assert_eq!(
        (effective.l1_bytes, effective.l2_bytes),
        (48 * KIB, 2 * MIB)
    );
    // The same on the development VM, whose last level reads nearly as fast as its second.
    let reported = sizes(32 * KIB, MIB, 480 * MIB);
    let effective = effective_caches(&zen4(16 * MIB).curve(MAX_PROBE_BYTES), reported);
    assert!(within(effective.llc_bytes, 16 * MIB, 1.5), "{effective:?}");
    assert_eq!((effective.l1_bytes, effective.l2_bytes), (32 * KIB, MIB));
}

#[test]
fn first_levels_change_only_when_the_curve_clearly_contradicts_them() {
    let machine = server();
    // 64 KiB reported for 48: not clearly contradicted (within a factor 2), kept.
    let reported = sizes(64 * KIB, 2 * MIB, 32 * MIB);
    let effective = effective_caches(&machine.curve(64 * MIB), reported);
    assert_eq!(effective.l1_bytes, 64 * KIB);
    // A second level reported as 16 MiB, 8 times what there is: measured.
    let reported = sizes(48 * KIB, 16 * MIB, 32 * MIB);
    let effective = effective_caches(&machine.curve(64 * MIB), reported);
    assert!(within(effective.l2_bytes, 2 * MIB, 1.5), "{effective:?}");
    assert!(effective.llc_bytes >= effective.l2_bytes);
}

/// The effective sizes of `curve` with 3x slowdowns at the points `slow` marks.
fn slowed(curve: &[(usize, f64)], slow: &[bool], reported: CacheSizes) -> CacheSizes {
    let noisy: Vec<(usize, f64)> = curve
        .iter()
        .zip(slow)
        .map(|(&(s, r), &slow)| (s, if slow { r / 3.0 } else { r }))
        .collect();
    effective_caches(&noisy, reported)
}

/// Each level of `noisy` within `factor` of `clean`'s.
fn assert_close(noisy: CacheSizes, clean: CacheSizes, factor: f64, what: &str) {
    for (n, c) in [
        (noisy.l1_bytes, clean.l1_bytes),
        (noisy.l2_bytes, clean.l2_bytes),
        (noisy.llc_bytes, clean.llc_bytes),
    ] {
        assert!(within(n, c, factor), "{what}: {noisy:?} against {clean:?}");
    }
}

#[test]
fn one_slow_point_moves_a_knee_by_less_than_a_doubling() {
    for (machine, reported) in [
        (server(), sizes(48 * KIB, 2 * MIB, 32 * MIB)),
        (server(), sizes(48 * KIB, 2 * MIB, 480 * MIB)),
        (zen4(32 * MIB), sizes(32 * KIB, MIB, 32 * MIB)),
    ] {
        let curve = machine.curve(probe_limit(reported));
        let clean = effective_caches(&curve, reported);
        for at in 0..curve.len() {
            let mut slow = vec![false; curve.len()];
            slow[at] = true;
            let noisy = slowed(&curve, &slow, reported);
            // The worst: the last point of a plateau, which then looks like the first one
            // past it (a factor 1.98 here).
            assert_close(noisy, clean, 2.0, &format!("slow point {at}"));
        }
    }
}

#[test]
fn heavy_tailed_noise_moves_a_knee_by_about_a_doubling_at_most() {
    // A 3x slowdown at 10% of the points (never two in a row: a run of slow points at the
    // end of a plateau is a drop), every point off by up to 5% besides.
    for (machine, reported) in [
        (server(), sizes(48 * KIB, 2 * MIB, 32 * MIB)),
        (server(), sizes(48 * KIB, 2 * MIB, 480 * MIB)),
        (zen4(32 * MIB), sizes(32 * KIB, MIB, 32 * MIB)),
    ] {
        let curve = machine.curve(probe_limit(reported));
        let clean = effective_caches(&curve, reported);
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let mut slow = vec![false; curve.len()];
            for i in 0..curve.len() {
                slow[i] = rng.chance(0.1) && (i == 0 || !slow[i - 1]);
            }
            let jittered: Vec<(usize, f64)> = curve
                .iter()
                .map(|&(s, r)| (s, r * rng.uniform(0.95, 1.05)))
                .collect();
            let noisy = slowed(&jittered, &slow, reported);
            // One doubling, and what 5% on the points around a crossing moves it besides
            // (at worst 2.07 over these seeds).
            assert_close(noisy, clean, 2.2, &format!("seed {seed}, slow {slow:?}"));
        }
    }
}

#[test]
fn a_curve_that_never_drops_keeps_the_report_up_to_the_sizes_probed() {
    // A last level larger than the probe reaches: flat beyond the second level.
    let reported = sizes(48 * KIB, 2 * MIB, 256 * MIB);
    let big = Hierarchy {
        levels: vec![
            (48 * KIB, 300.0 * G),
            (2 * MIB, 150.0 * G),
            (256 * MIB, 80.0 * G),
        ],
        memory: 20.0 * G,
    };
    let curve = big.curve(probe_limit(reported));
    assert_eq!(curve.last().map(|p| p.0), Some(MAX_PROBE_BYTES));
    let effective = effective_caches(&curve, reported);
    assert_eq!(effective, sizes(48 * KIB, 2 * MIB, MAX_PROBE_BYTES));
    // No drop at all: every reported size kept (the last level up to the sweep's end).
    let flat: Vec<(usize, f64)> = curve.iter().map(|&(s, _)| (s, 50.0 * G)).collect();
    assert_eq!(
        effective_caches(&flat, reported),
        sizes(48 * KIB, 2 * MIB, MAX_PROBE_BYTES)
    );
    let small = sizes(48 * KIB, 2 * MIB, 16 * MIB);
    assert_eq!(effective_caches(&flat, small), small);
    // Too short a curve to say anything.
    assert_eq!(effective_caches(&curve[..1], reported), reported);
    assert_eq!(effective_caches(&[], reported), reported);
}

#[test]
fn the_sweep_stops_at_memory_speed_and_never_passes_its_limit() {
    // The development VM with a 16 MiB last level reported as 480 MiB: memory speed from
    // 64 MiB (a quarter of the last level's), so the sweep ends there, not at 128 MiB.
    let reported = sizes(32 * KIB, MIB, 480 * MIB);
    let machine = zen4(16 * MIB);
    let mut asked = Vec::new();
    let curve = sweep(reported, |size| {
        asked.push(size);
        machine.rate(size)
    });
    let last = curve.last().expect("points").0;
    assert!(last <= 64 * MIB, "{curve:?}");
    assert!(asked.iter().all(|&s| s <= last));
    assert_eq!(
        curve.len(),
        last.ilog2() as usize - FIRST_SIZE.ilog2() as usize + 1
    );
    assert_eq!(asked.iter().filter(|&&s| s == last).count(), 2, "confirmed");
    assert_eq!(
        asked.iter().filter(|&&s| s == FIRST_SIZE).count(),
        2,
        "warmed up"
    );
    // One slow measurement at the last level's plateau does not end the sweep: it is
    // measured again.
    let mut first_at_8 = true;
    let curve = sweep(reported, |size| {
        let rate = machine.rate(size);
        if size == 8 * MIB && std::mem::take(&mut first_at_8) {
            rate / 10.0
        } else {
            rate
        }
    });
    assert!(curve.last().expect("points").0 > 8 * MIB);
    // A truthful report: never beyond twice the last level.
    let reported = sizes(48 * KIB, 2 * MIB, 32 * MIB);
    let flat = sweep(reported, |_| 50.0 * G);
    assert_eq!(flat.last().map(|p| p.0), Some(64 * MIB));
    // Small or unknown reports still sweep past the first level.
    assert_eq!(probe_limit(sizes(0, 0, 0)), 4 * FIRST_SIZE);
    assert_eq!(probe_limit(sizes(32 * KIB, MIB, 0)), 4 * MIB);
}

#[test]
fn the_real_probe_is_quick_and_sane() {
    let start = Instant::now();
    let reported = sizes(32 * KIB, MIB, 32 * MIB);
    let probe = measure_caches(reported);
    let wall = start.elapsed().as_secs_f64();
    println!(
        "cache probe: {:.1} ms, effective {:?}",
        probe.seconds * 1e3,
        probe.effective
    );
    for &(size, rate) in &probe.curve {
        println!("  {:>8} KiB {:7.1} GB/s", size >> 10, rate / 1e9);
    }
    assert!(wall < 1.0, "{wall} s");
    assert!(probe.seconds > 0.0 && probe.seconds <= wall);
    assert_eq!(probe.reported, reported);
    let curve = &probe.curve;
    assert!(curve.len() >= 3, "{curve:?}");
    assert_eq!(curve[0].0, FIRST_SIZE);
    assert!(curve.windows(2).all(|w| w[1].0 == 2 * w[0].0));
    assert!(curve.last().expect("points").0 <= 64 * MIB);
    assert!(curve.iter().all(|&(_, r)| r.is_finite() && r > 0.0));
    // Monotone-ish: the smallest working sets read no slower than the largest.
    let rate = |i: usize| curve[i].1;
    let n = curve.len();
    assert!(
        rate(0).max(rate(1)) >= 0.8 * rate(n - 1).min(rate(n - 2)),
        "{curve:?}"
    );
    let e = probe.effective;
    assert!(e.l1_bytes > 0 && e.l1_bytes <= e.l2_bytes && e.l2_bytes <= e.llc_bytes);
    assert!(e.llc_bytes <= curve.last().expect("points").0.max(reported.llc_bytes));
}
