//! Computes the build's identity for the tuning cache's keys: the target architecture, the
//! vector features the build may use, and a hash of the sources that generate and run the
//! code (`STENCIL_BUILD_ID`), so that a cached schedule is not reused by a build that would
//! run different code.

use std::path::PathBuf;

#[path = "src/cache/revision.rs"]
mod revision;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // In the workspace the neighbouring crates' sources are hashed too; a packaged crate
    // has only its own, and its version stands for the rest.
    let dirs: Vec<PathBuf> = [
        "src",
        "../stencil-core/src",
        "../stencil-cpu/src",
        "../stencil-cuda/src",
        "../stencil-lang/src",
        "../stencil-macros/src",
    ]
    .iter()
    .map(|d| here.join(d))
    .collect();
    for d in &dirs {
        if d.exists() {
            println!("cargo:rerun-if-changed={}", d.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiler = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let hash = revision::source_hash(&dirs, &compiler);
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features =
        revision::vector_features(&std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default());
    println!("cargo:rustc-env=STENCIL_BUILD_ID={arch} [{features}] code {hash:016x}");
}
