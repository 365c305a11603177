//! Tests of the tuning cache: round trips, corruption, schema and version changes, export and
//! import, bandwidth and cache-capacity entries, and threads writing at once through separate
//! handles.

use super::*;
use stencil_core::schedule::SearchSpace;

/// A fresh, empty directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil-tune-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

fn key(n: usize) -> CacheKey {
    let space = SearchSpace::new().with_ints("tile", [4, 8, 16]);
    CacheKey {
        kernel_hash: format!("{:032x}", 0xabcd_u128 + n as u128),
        shape: vec![64, 32 + n],
        elem: "f64".into(),
        backend: "cpu".into(),
        device: "test cpu x2".into(),
        threads: 2,
        space_checksum: format!("{:016x}", space.checksum()),
        library_version: LIBRARY_VERSION.into(),
        build: BUILD_ID.into(),
    }
}

fn entry(n: usize) -> TunedEntry {
    TunedEntry {
        point: vec![n % 3],
        schedule: format!("tile={}", [4, 8, 16][n % 3]),
        seconds: 0.001 * (n + 1) as f64,
        bytes_per_second: 1.0e9 / (n + 1) as f64,
        roofline_fraction: 0.5 + 0.01 * n as f64,
        trials: 10 + n,
        tuning_seconds: 0.2,
        spread: 0.03,
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn store_then_lookup_round_trips_and_replaces() {
    let dir = temp_dir("round-trip");
    let cache = TuningCache::at(dir.join("sub").join("tuning.json"));
    assert_eq!(
        cache.lookup(&key(1)),
        None,
        "a missing file is an empty cache"
    );
    cache.store(key(1), entry(1)).expect("store");
    cache.store(key(2), entry(2)).expect("store");
    assert_eq!(cache.lookup(&key(1)), Some(entry(1)));
    assert_eq!(cache.lookup(&key(2)), Some(entry(2)));
    assert_eq!(cache.lookup(&key(3)), None);
    cache.store(key(1), entry(7)).expect("replace");
    assert_eq!(cache.lookup(&key(1)), Some(entry(7)));
    assert_eq!(cache.entries().len(), 2);
    // No temporary files are left behind.
    let names = files_in(&dir.join("sub"));
    assert_eq!(names, vec!["tuning.json", "tuning.json.lock"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn every_key_field_matters() {
    let dir = temp_dir("key-fields");
    let cache = TuningCache::at(dir.join("tuning.json"));
    cache.store(key(0), entry(0)).expect("store");
    let variants: Vec<CacheKey> = vec![
        CacheKey {
            kernel_hash: "ff".into(),
            ..key(0)
        },
        CacheKey {
            shape: vec![64, 33],
            ..key(0)
        },
        CacheKey {
            elem: "f32".into(),
            ..key(0)
        },
        CacheKey {
            backend: "cuda".into(),
            ..key(0)
        },
        CacheKey {
            device: "other x2".into(),
            ..key(0)
        },
        CacheKey {
            threads: 4,
            ..key(0)
        },
        CacheKey {
            space_checksum: "0".into(),
            ..key(0)
        },
        CacheKey {
            library_version: "0.0.0-old".into(),
            ..key(0)
        },
        // Another instruction set, or another revision of the code generators.
        CacheKey {
            build: BUILD_ID.replace("code ", "code 0"),
            ..key(0)
        },
        CacheKey {
            build: String::new(),
            ..key(0)
        },
    ];
    for k in variants {
        assert_eq!(cache.lookup(&k), None, "{k:?}");
    }
    assert!(cache.lookup(&key(0)).is_some());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_file_is_set_aside_and_never_crashes() {
    let dir = temp_dir("corrupt");
    let path = dir.join("tuning.json");
    fs::write(&path, "{ this is not json").expect("write garbage");
    let cache = TuningCache::at(&path);
    assert_eq!(cache.lookup(&key(1)), None);
    assert!(cache.entries().is_empty());
    let names = files_in(&dir);
    assert!(
        names.iter().any(|n| n.starts_with("tuning.json.corrupt-")),
        "{names:?}"
    );
    assert!(!path.exists(), "the bad file was moved away");
    // The cache works again.
    cache
        .store(key(1), entry(1))
        .expect("store after corruption");
    assert_eq!(cache.lookup(&key(1)), Some(entry(1)));
    // Valid JSON of the wrong shape is corrupt too; found by a write this time.
    fs::write(&path, "{\"schema\": 1, \"tuned\": 5}").expect("write");
    cache
        .store(key(2), entry(2))
        .expect("store over a bad file");
    assert_eq!(cache.entries().len(), 1);
    assert_eq!(
        files_in(&dir)
            .iter()
            .filter(|n| n.contains(".corrupt-"))
            .count(),
        2
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn another_schema_is_ignored_and_replaced() {
    let dir = temp_dir("schema");
    let path = dir.join("tuning.json");
    let cache = TuningCache::at(&path);
    cache.store(key(1), entry(1)).expect("store");
    let text = fs::read_to_string(&path).expect("read");
    let bumped = text.replacen(
        &format!("\"schema\": {SCHEMA_VERSION}"),
        &format!("\"schema\": {}", SCHEMA_VERSION + 1),
        1,
    );
    assert_ne!(text, bumped, "the schema field is written as expected");
    fs::write(&path, bumped).expect("write");
    assert_eq!(
        cache.lookup(&key(1)),
        None,
        "entries of another schema do not match"
    );
    cache.store(key(2), entry(2)).expect("store");
    assert_eq!(
        cache.entries().len(),
        1,
        "the old schema's entries are dropped"
    );
    assert!(files_in(&dir).iter().all(|n| !n.contains("corrupt")));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn export_and_import_merge() {
    let dir = temp_dir("export");
    let a = TuningCache::at(dir.join("a.json"));
    let b = TuningCache::at(dir.join("b.json"));
    a.store(key(1), entry(1)).expect("store");
    a.store(key(2), entry(2)).expect("store");
    a.store_bandwidth("test cpu x2", 2, 2.5e10)
        .expect("bandwidth");
    a.store_caches("test cpu x2", &probe(24 << 20))
        .expect("caches");
    b.store(key(2), entry(9)).expect("store");
    b.store(key(3), entry(3)).expect("store");
    let shipped = dir.join("shipped.json");
    assert_eq!(a.export_to(&shipped).expect("export"), 2);
    assert_eq!(b.import_from(&shipped).expect("import"), 2);
    assert_eq!(b.lookup(&key(1)), Some(entry(1)));
    assert_eq!(
        b.lookup(&key(2)),
        Some(entry(2)),
        "imported entries replace"
    );
    assert_eq!(b.lookup(&key(3)), Some(entry(3)), "existing entries stay");
    assert_eq!(b.bandwidth("test cpu x2", 2), Some(2.5e10));
    let caches = b.caches("test cpu x2").expect("imported caches");
    assert_eq!(caches.effective, probe(24 << 20).effective);
    // Importing something that is not a cache is an error and leaves the file alone.
    let junk = dir.join("junk.json");
    fs::write(&junk, "[1, 2").expect("write");
    let err = b.import_from(&junk).unwrap_err();
    assert_eq!(err.kind(), CacheErrorKind::Unreadable);
    assert!(junk.exists());
    assert_eq!(
        b.import_from(&dir.join("missing.json")).unwrap_err().kind(),
        CacheErrorKind::Io
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bandwidth_entries_are_their_own_kind() {
    let dir = temp_dir("bandwidth");
    let cache = TuningCache::at(dir.join("tuning.json"));
    assert_eq!(cache.bandwidth("cpu a x4", 4), None);
    cache.store_bandwidth("cpu a x4", 4, 1.5e10).expect("store");
    cache.store_bandwidth("cpu a x4", 2, 1.0e10).expect("store");
    cache
        .store_bandwidth("cpu a x4", 4, 1.6e10)
        .expect("replace");
    assert_eq!(cache.bandwidth("cpu a x4", 4), Some(1.6e10));
    assert_eq!(cache.bandwidth("cpu a x4", 2), Some(1.0e10));
    assert_eq!(cache.bandwidth("cpu b x4", 4), None);
    assert_eq!(
        cache.bandwidths(),
        vec![
            ("cpu a x4".to_string(), 4, 1.6e10),
            ("cpu a x4".to_string(), 2, 1.0e10)
        ]
    );
    assert!(cache.entries().is_empty(), "bandwidth is not a tuned entry");
    // Measured once: the second call finds the cached value.
    let mut measured = 0;
    let first = cache.bandwidth_or_measure("cpu c x2", 2, || {
        measured += 1;
        3.0e10
    });
    let second = cache.bandwidth_or_measure("cpu c x2", 2, || {
        measured += 1;
        9.9e10
    });
    assert_eq!((first, second, measured), (3.0e10, 3.0e10, 1));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bandwidth_older_than_its_age_limit_or_of_unknown_age_is_measured_again() {
    let dir = temp_dir("bandwidth-age");
    let path = dir.join("tuning.json");
    let now = unix_now();
    let stored = |measured_unix: u64| {
        let doc = Document {
            bandwidth: vec![BandwidthEntry {
                device: "cpu d x2".into(),
                threads: 2,
                bytes_per_second: 1.0e9,
                measured_unix,
            }],
            ..Document::empty()
        };
        fs::write(&path, serde_json::to_string(&doc).expect("json")).expect("write");
    };
    let cache = TuningCache::at(&path);
    for (age, fresh) in [
        (0, true),
        (BANDWIDTH_MAX_AGE_SECONDS - 60, true),
        (BANDWIDTH_MAX_AGE_SECONDS + 60, false),
    ] {
        stored(now - age);
        assert_eq!(
            cache.bandwidth("cpu d x2", 2).is_some(),
            fresh,
            "age {age} s"
        );
    }
    // A file written before measurements were dated: the entry has no time.
    let undated = r#"{"schema":SCHEMA,"tuned":[],"bandwidth":[{"device":"cpu d x2","threads":2,"bytes_per_second":1e9}]}"#
        .replace("SCHEMA", &SCHEMA_VERSION.to_string());
    fs::write(&path, undated).expect("write");
    assert_eq!(cache.bandwidth("cpu d x2", 2), None);
    // An expired measurement is taken again and stored, dated now.
    stored(now - 2 * BANDWIDTH_MAX_AGE_SECONDS);
    let mut measured = 0;
    let bw = cache.bandwidth_or_measure("cpu d x2", 2, || {
        measured += 1;
        4.0e10
    });
    assert_eq!((bw, measured), (4.0e10, 1));
    assert_eq!(cache.bandwidth("cpu d x2", 2), Some(4.0e10));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn keys_carry_the_builds_instruction_set_and_code_revision() {
    let space = SearchSpace::new().with_ints("tile", [4, 8]);
    let kernel = {
        use stencil_core::ir::KernelBuilder;
        let mut b = KernelBuilder::new("copy", 1, stencil_core::ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let r = b.read(u, &[0]);
        b.store(out, r);
        b.finish().expect("kernel")
    };
    let k = CacheKey::new(&kernel, &[64], "cpu", "d", 1, &space);
    assert_eq!(k.build, BUILD_ID);
    assert!(BUILD_ID.starts_with(std::env::consts::ARCH), "{BUILD_ID}");
    if cfg!(target_feature = "avx2") {
        assert!(BUILD_ID.contains("avx2"), "{BUILD_ID}");
    } else {
        assert!(!BUILD_ID.contains("avx2"), "{BUILD_ID}");
    }
    let hash = BUILD_ID.rsplit("code ").next().expect("a code hash");
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{BUILD_ID}"
    );
}

#[test]
fn the_code_revision_changes_with_any_source_byte_and_not_with_the_checkout_location() {
    let dir = temp_dir("revision");
    let write = |root: &Path, text: &str| {
        fs::create_dir_all(root.join("sub")).expect("dirs");
        fs::write(root.join("a.rs"), "fn a() {}").expect("write");
        fs::write(root.join("sub/b.rs"), text).expect("write");
        fs::write(root.join("notes.txt"), text).expect("write");
    };
    let (one, two) = (dir.join("one"), dir.join("two"));
    write(&one, "fn b() { 1 }");
    write(&two, "fn b() { 1 }");
    let hash = |root: &Path| revision::source_hash(&[root.to_path_buf()], "rustc 1");
    assert_eq!(hash(&one), hash(&two), "same sources elsewhere");
    fs::write(two.join("notes.txt"), "other").expect("write");
    assert_eq!(hash(&one), hash(&two), "only .rs files count");
    fs::write(two.join("sub/b.rs"), "fn b() { 2 }").expect("write");
    assert_ne!(hash(&one), hash(&two), "one byte of a source");
    assert_ne!(
        hash(&one),
        revision::source_hash(std::slice::from_ref(&one), "rustc 2"),
        "another compiler"
    );
    fs::rename(one.join("sub/b.rs"), one.join("sub/c.rs")).expect("rename");
    write(&two, "fn b() { 1 }");
    assert_ne!(hash(&one), hash(&two), "a renamed file");
    assert_eq!(
        revision::vector_features("sse2,avx512f,fma,avx2,cmpxchg16b"),
        "avx2,avx512f,fma"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn threads_with_separate_handles_lose_no_entry() {
    let dir = temp_dir("threads");
    let path = dir.join("tuning.json");
    std::thread::scope(|scope| {
        for t in 0..8 {
            let path = path.clone();
            scope.spawn(move || {
                let cache = TuningCache::at(path);
                for i in 0..10 {
                    cache.store(key(t * 100 + i), entry(i)).expect("store");
                }
            });
        }
    });
    let cache = TuningCache::at(&path);
    assert_eq!(cache.entries().len(), 80);
    for t in 0..8 {
        for i in 0..10 {
            assert_eq!(cache.lookup(&key(t * 100 + i)), Some(entry(i)));
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn default_path_prefers_the_override() {
    // Only reads the environment; the variables are not changed (tests run in parallel).
    if let Some(p) = std::env::var_os(CACHE_ENV_VAR).filter(|v| !v.is_empty()) {
        assert_eq!(default_path(), Some(PathBuf::from(p)));
    } else if let Some(p) = default_path() {
        assert!(p.ends_with("stencil/tuning.json"), "{}", p.display());
    }
}

/// A probe's result: `llc` bytes of last level measured where 480 MiB were reported.
fn probe(llc: usize) -> CacheProbe {
    use stencil_core::CacheSizes;
    CacheProbe {
        effective: CacheSizes {
            l1_bytes: 48 << 10,
            l2_bytes: 2 << 20,
            llc_bytes: llc,
        },
        reported: CacheSizes {
            l1_bytes: 48 << 10,
            l2_bytes: 2 << 20,
            llc_bytes: 480 << 20,
        },
        curve: vec![(16 << 10, 3.0e11), (32 << 10, 2.9e11)],
        seconds: 0.03,
    }
}

#[test]
fn measured_caches_are_kept_per_device_and_measured_again_when_old() {
    let dir = temp_dir("caches");
    let path = dir.join("tuning.json");
    let cache = TuningCache::at(&path);
    assert_eq!(cache.caches("cpu e x2"), None);
    cache
        .store_caches("cpu e x2", &probe(32 << 20))
        .expect("store");
    cache
        .store_caches("cpu f x2", &probe(16 << 20))
        .expect("store");
    cache
        .store_caches("cpu e x2", &probe(24 << 20))
        .expect("replace");
    let e = cache.caches("cpu e x2").expect("stored");
    assert_eq!(e.device, "cpu e x2");
    assert_eq!(e.effective, probe(24 << 20).effective);
    assert_eq!(e.reported.llc_bytes, 480 << 20);
    assert!(e.is_fresh(unix_now()));
    assert_eq!(
        cache.caches("cpu f x2").map(|c| c.effective.llc_bytes),
        Some(16 << 20)
    );
    assert!(cache.entries().is_empty(), "caches are not tuned entries");
    assert!(cache.bandwidths().is_empty(), "nor bandwidths");
    // Trusted as long as bandwidths are, then measured again.
    let now = unix_now();
    for (age, fresh) in [
        (BANDWIDTH_MAX_AGE_SECONDS - 60, true),
        (BANDWIDTH_MAX_AGE_SECONDS + 60, false),
    ] {
        let doc = Document {
            caches: vec![CachesEntry {
                measured_unix: now - age,
                ..e.clone()
            }],
            ..Document::empty()
        };
        fs::write(&path, serde_json::to_string(&doc).expect("json")).expect("write");
        assert_eq!(cache.caches("cpu e x2").is_some(), fresh, "age {age} s");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_file_written_before_caches_were_kept_still_loads() {
    let dir = temp_dir("caches-old-file");
    let path = dir.join("tuning.json");
    let now = unix_now();
    let old = r#"{"schema":SCHEMA,"tuned":[],"bandwidth":[{"device":"cpu g x2","threads":2,"bytes_per_second":1e9,"measured_unix":NOW}]}"#
        .replace("SCHEMA", &SCHEMA_VERSION.to_string())
        .replace("NOW", &now.to_string());
    fs::write(&path, old).expect("write");
    let cache = TuningCache::at(&path);
    assert_eq!(cache.bandwidth("cpu g x2", 2), Some(1e9));
    assert_eq!(cache.caches("cpu g x2"), None);
    cache
        .store_caches("cpu g x2", &probe(8 << 20))
        .expect("store");
    assert_eq!(cache.bandwidth("cpu g x2", 2), Some(1e9), "kept");
    assert!(cache.caches("cpu g x2").is_some());
    assert!(files_in(&dir).iter().all(|n| !n.contains("corrupt")));
    let _ = fs::remove_dir_all(&dir);
}
