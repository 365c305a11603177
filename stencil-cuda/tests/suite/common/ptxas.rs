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

/// Modules assembled per `ptxas` run (entries renamed apart, one header): one process per
/// module would spend most of its time starting `ptxas`.
const BATCH: usize = 250;

/// Assembles `modules` (tag, PTX text) for `sm_<arch>` in batches of [`BATCH`] modules at
/// `-O0`: what `ptxas` accepts does not depend on the optimisation level, and `-O3` takes five
/// times as long (spills are checked at `-O3` by [`assemble`], on the schedules that matter).
/// Each module's entries are renamed apart (`NAME` becomes `NAME_<i>`, its parameters with it).
/// A batch `ptxas` rejects is assembled module by module, so the failure names the module and
/// shows its PTX. Returns the number of modules assembled.
pub(crate) fn assemble_batched(ptxas: &PathBuf, modules: &[(String, String)], arch: u32) -> usize {
    static BATCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("stencil-ptxas-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for batch in modules.chunks(BATCH) {
        let b = BATCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut text = String::new();
        for (i, (_, ptx)) in batch.iter().enumerate() {
            let header_end = ptx.find(".address_size 64").expect("PTX header") + 16;
            if i == 0 {
                text.push_str(&ptx[..header_end]);
            }
            let mut body = ptx[header_end..].to_string();
            for entry in entry_names(ptx) {
                body = body.replace(&entry, &format!("{entry}_{i}"));
            }
            text.push_str(&body);
        }
        let file = dir.join(format!("batch_{b}_{arch}.ptx"));
        std::fs::write(&file, &text).expect("write PTX");
        let out = Command::new(ptxas)
            .arg(format!("-arch=sm_{arch}"))
            .arg("-O0")
            .arg("-o")
            .arg(dir.join(format!("batch_{b}_{arch}.cubin")))
            .arg(&file)
            .output()
            .expect("run ptxas");
        if !out.status.success() {
            for (tag, ptx) in batch {
                assemble(ptxas, ptx, arch, tag);
            }
            panic!(
                "ptxas -arch=sm_{arch} rejected batch {b} but each of its modules alone: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(dir.join(format!("batch_{b}_{arch}.cubin")));
    }
    modules.len()
}

/// The names of the `.entry` functions of a PTX module.
fn entry_names(ptx: &str) -> Vec<String> {
    ptx.split(".entry ")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                .collect()
        })
        .collect()
}
