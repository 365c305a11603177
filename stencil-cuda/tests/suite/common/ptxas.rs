//! Finding NVIDIA's `ptxas` and assembling PTX with it, for the tests that check generated code
//! assembles. `ptxas` is found through `STENCIL_PTXAS`, then `PATH`; without it a test prints
//! `SKIP: ptxas not found` and passes, unless `STENCIL_REQUIRE_PTXAS` is set (as `.ci/run` sets
//! it), when a missing `ptxas` fails the test.

use std::path::PathBuf;
use std::process::Command;

/// `ptxas`, or `None` after printing why the test is skipped.
///
/// # Panics
/// When `STENCIL_REQUIRE_PTXAS` is set and no `ptxas` is found.
pub(crate) fn ptxas() -> Option<PathBuf> {
    let found = find_ptxas();
    if found.is_none() {
        assert!(
            std::env::var_os("STENCIL_REQUIRE_PTXAS").is_none(),
            "STENCIL_REQUIRE_PTXAS is set but no ptxas was found (STENCIL_PTXAS, PATH)"
        );
        eprintln!("SKIP: ptxas not found");
    }
    found
}

pub(crate) fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STENCIL_PTXAS") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

/// Spill stores and loads reported by `ptxas -v`, summed over entries.
pub(crate) fn assemble(ptxas: &PathBuf, ptx: &str, arch: u32, tag: &str) -> (u64, u64) {
    let dir = std::env::temp_dir().join(format!("stencil-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{tag}.ptx"));
    std::fs::write(&file, ptx).expect("write ptx");
    let out = Command::new(ptxas)
        .arg(format!("-arch=sm_{arch}"))
        .arg("-v")
        .arg("-o")
        .arg(dir.join(format!("{tag}.cubin")))
        .arg(&file)
        .output()
        .expect("run ptxas");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ptxas -arch=sm_{arch} rejected {tag}:\n{text}\n--- PTX ---\n{ptx}"
    );
    let mut spills = (0, 0);
    for line in text.lines() {
        if let Some(pos) = line.find("bytes spill stores") {
            let n: u64 = line[..pos]
                .trim()
                .rsplit(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            spills.0 += n;
            let rest = &line[pos..];
            let loads = rest.split(',').nth(1).unwrap().trim();
            spills.1 += loads.split(' ').next().unwrap().parse::<u64>().unwrap();
        }
    }
    assert!(
        text.contains("Used"),
        "ptxas -v printed no resource usage:\n{text}"
    );
    let _ = std::fs::remove_file(&file);
    spills
}
