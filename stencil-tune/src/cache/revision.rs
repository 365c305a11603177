//! The code revision of a build: a hash of the sources that decide what a schedule does
//! (the IR and its passes, the code generators, the backends, the macro). Shared by
//! `build.rs` (which computes it once per build) and the crate's tests; std only.

use std::path::{Path, PathBuf};

/// 64-bit FNV-1a over `bytes`, continuing from `hash`: stable across platforms and compiler
/// versions, which the standard library's hasher does not promise.
pub(crate) fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a's starting value.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Every `.rs` file under `dir` (recursively), sorted; none if `dir` does not exist.
pub(crate) fn rust_sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The hash of the `.rs` files under each of `dirs` (named relative to their directory, so
/// the checkout's location does not matter) and of `extra` (the compiler's version).
pub(crate) fn source_hash(dirs: &[PathBuf], extra: &str) -> u64 {
    let mut hash = fnv1a(FNV_OFFSET, extra.as_bytes());
    for dir in dirs {
        for file in rust_sources(dir) {
            let name = file.strip_prefix(dir).unwrap_or(&file);
            hash = fnv1a(hash, name.to_string_lossy().as_bytes());
            hash = fnv1a(hash, &[0]);
            if let Ok(text) = std::fs::read(&file) {
                hash = fnv1a(hash, &text);
            }
            hash = fnv1a(hash, &[0xff]);
        }
    }
    hash
}

/// The target features of a build that change generated loops (vector widths and fused
/// multiply-adds), from cargo's comma-separated `CARGO_CFG_TARGET_FEATURE`.
pub(crate) fn vector_features(all: &str) -> String {
    let mut kept: Vec<&str> = all
        .split(',')
        .filter(|f| {
            ["avx", "fma", "sse4", "neon", "sve"]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .collect();
    kept.sort_unstable();
    kept.join(",")
}
