//! Eight processes writing different entries to one tuning cache at once lose none.
//!
//! The test binary re-runs itself: with `STENCIL_TUNE_TEST_CHILD` set, the test body is a
//! child that writes its entries and returns; without it, the body spawns eight children on
//! a fresh cache file and checks every entry afterwards.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use stencil_tune::cache::{BUILD_ID, CacheKey, LIBRARY_VERSION, TunedEntry, TuningCache};

const CHILD_VAR: &str = "STENCIL_TUNE_TEST_CHILD";
const CACHE_VAR: &str = "STENCIL_TUNE_TEST_CACHE";
const PROCESSES: usize = 8;
const ENTRIES_PER_PROCESS: usize = 12;

fn key(child: usize, i: usize) -> CacheKey {
    CacheKey {
        kernel_hash: format!("{:032x}", child * 1000 + i),
        shape: vec![256, 256, 256],
        elem: "f32".into(),
        backend: "cpu".into(),
        device: format!("process test x{child}"),
        threads: 2,
        space_checksum: "0123456789abcdef".into(),
        library_version: LIBRARY_VERSION.into(),
        build: BUILD_ID.into(),
    }
}

fn entry(child: usize, i: usize) -> TunedEntry {
    TunedEntry {
        point: vec![child, i],
        schedule: format!("child={child} i={i}"),
        seconds: 1.0 / (1 + child * 100 + i) as f64,
        bytes_per_second: 1.0e9,
        roofline_fraction: 0.75,
        trials: i,
        tuning_seconds: 0.5,
        spread: 0.02,
    }
}

#[test]
fn eight_processes_writing_at_once_lose_no_entry() {
    if let Ok(child) = std::env::var(CHILD_VAR) {
        let child: usize = child.parse().expect("child index");
        let cache = TuningCache::at(std::env::var(CACHE_VAR).expect("cache path"));
        for i in 0..ENTRIES_PER_PROCESS {
            cache
                .store(key(child, i), entry(child, i))
                .expect("child store");
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("stencil-tune-processes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path: PathBuf = dir.join("tuning.json");
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..PROCESSES)
        .map(|c| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "eight_processes_writing_at_once_lose_no_entry",
                    "--test-threads=1",
                ])
                .env(CHILD_VAR, c.to_string())
                .env(CACHE_VAR, &path)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn child")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a child failed");
    }
    let cache = TuningCache::at(&path);
    let entries = cache.entries();
    assert_eq!(entries.len(), PROCESSES * ENTRIES_PER_PROCESS);
    for c in 0..PROCESSES {
        for i in 0..ENTRIES_PER_PROCESS {
            assert_eq!(
                cache.lookup(&key(c, i)),
                Some(entry(c, i)),
                "child {c} entry {i}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
