//! Kernels from text (`stencil::parse`): the same language as `stencil!`, the same IR and the
//! same values, and the macro's messages with lines and columns.

use stencil::prelude::*;
use stencil::{ErrorKind, Launch, Stencil, verify};

/// The text of the kernel below, helpers and an operator included.
const DIFFUSE: &str = "
    /// The 5-point Laplacian.
    fn lap(w) { w[i-1, j] + w[i+1, j] + w[i, j-1] + w[i, j+1] - 4.0 * w[i, j] }

    fn diffuse(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64, h: f64) {
        out[i, j] = u[i, j] + c * lap(u) + c * diff(u, j, h, 4);
    }
";

stencil! {
    /// The 5-point Laplacian.
    fn lap(w) { w[i-1, j] + w[i+1, j] + w[i, j-1] + w[i, j+1] - 4.0 * w[i, j] }

    fn diffuse(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64, h: f64) {
        out[i, j] = u[i, j] + c * lap(u) + c * diff(u, j, h, 4);
    }
}

#[test]
fn text_gives_the_macros_kernel_and_values() {
    let parsed: Stencil<f64> = stencil::parse(DIFFUSE).unwrap();
    assert_eq!(parsed.kernel(), diffuse::stencil().kernel());
    assert!(parsed.cpu_loop().is_none(), "text has no generated loop");
    let u =
        Grid2::<f64>::from_fn([13, 17], 4, |[i, j]| ((i * 31 + j * 7) % 11) as f64 - 5.0).unwrap();
    let (mut a, mut b) = (u.like(), u.like());
    a.fill_with(|_| f64::NAN);
    b.fill_with(|_| f64::NAN);
    Launch::new(&parsed)
        .input("u", &u)
        .output("out", &mut a)
        .param("c", 0.1)
        .param("h", 0.5)
        .run()
        .unwrap();
    diffuse(&u, &mut b, 0.1, 0.5).run().unwrap();
    assert_eq!(a.as_slice(), b.as_slice());
    assert!(a.interior_iter().all(|(_, x)| x.is_finite()));
    let report = verify(&parsed).unwrap();
    assert!(report.cases > 0, "{report}");
}

#[test]
fn staggered_grids_lower_to_their_stored_points() {
    // `vx` (staggered along `i`) stores at index `n` the value at `n + 1/2`: `vx[i + 1/2, j]`
    // is its point `i`, `vx[i - 1/2, j]` its point `i - 1`.
    let staggered: Stencil<f64> = stencil::parse(
        "fn acoustic_pressure2(p: &Grid2<f64>, #[stagger(i)] vx: &Grid2<f64>,
                               #[stagger(j)] vy: &Grid2<f64>, kappa: &Grid2<f64>,
                               p_next: &mut Grid2<f64>, s: f64) {
            p_next[i, j] = p[i, j]
                - s * kappa[i, j] * (vx[i+1/2, j] - vx[i-1/2, j] + vy[i, j+1/2] - vy[i, j-1/2]);
        }",
    )
    .unwrap();
    let whole: Stencil<f64> = stencil::parse(
        "fn acoustic_pressure2(p: &Grid2<f64>, vx: &Grid2<f64>, vy: &Grid2<f64>,
                               kappa: &Grid2<f64>, p_next: &mut Grid2<f64>, s: f64) {
            p_next[i, j] = p[i, j]
                - s * kappa[i, j] * (vx[i, j] - vx[i-1, j] + vy[i, j] - vy[i, j-1]);
        }",
    )
    .unwrap();
    assert_eq!(staggered.kernel(), whole.kernel());
    assert_eq!(
        staggered.kernel(),
        stencil::kernels::acoustic_pressure2::stencil().kernel()
    );
    let error = stencil::parse::<f64>(
        "fn k(#[stagger(j)] v: &Grid2<f64>, out: &mut Grid2<f64>) {\n\
         \x20   out[i, j] = v[i, j + 1/2] - v[i, j];\n\
         }",
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidKernel);
    assert_eq!(
        error.to_string(),
        "line 2, column 38: `v` is staggered along `j`: its points sit half a cell off, as in \
         `j + 1/2` or `j - 1/2`"
    );
}

#[test]
fn mistakes_are_errors_with_line_and_column() {
    let text = "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {\n\
                \x20   out[i, j] = laplace(u, h, 3) + w[i, j];\n\
                }";
    let error = stencil::parse::<f64>(text).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidKernel);
    assert_eq!(
        error.to_string(),
        "line 2, column 31: the order of `laplace` is 2, 4, 6 or 8 (radius 1 to 4), found 3\n\
         line 2, column 36: unknown grid `w`"
    );
    let error = stencil::parse::<f32>(DIFFUSE).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ElementTypeMismatch);
}

#[test]
fn a_kernel_read_from_a_file_runs_and_its_mistakes_carry_line_and_column() {
    let dir = std::env::temp_dir().join(format!("stencil-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("diffuse.stencil");
    std::fs::write(&good, DIFFUSE).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let parsed: Stencil<f64> = stencil::parse(&text).unwrap();
    let u = Grid2::<f64>::from_fn([9, 11], 4, |[i, j]| (i as f64) * 0.5 - (j as f64)).unwrap();
    let (mut a, mut b) = (u.like(), u.like());
    Launch::new(&parsed)
        .input("u", &u)
        .output("out", &mut a)
        .param("c", 0.25)
        .param("h", 2.0)
        .run()
        .unwrap();
    diffuse(&u, &mut b, 0.25, 2.0).run().unwrap();
    assert_eq!(a.as_slice(), b.as_slice());

    // The same file with a misspelt grid on its sixth line (the text starts with a newline),
    // in column 39.
    let bad = dir.join("typo.stencil");
    std::fs::write(&bad, DIFFUSE.replace("c * lap(u)", "c * lap(uu)")).unwrap();
    let error = stencil::parse::<f64>(&std::fs::read_to_string(&bad).unwrap()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidKernel);
    assert!(
        error.to_string().starts_with("line 6, column 39:"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fuzz target's body (`fuzz/`), shared so the committed corpus replays here.
#[path = "../../fuzz/fuzz_targets/harness.rs"]
mod harness;

/// Every input of the committed fuzz corpus, the crashes fuzzing found among them, runs
/// through the fuzz target's own body: parsed, and what parses run on the CPU backend against
/// the interpreter, without a panic.
#[test]
fn the_fuzz_corpus_replays_through_the_fuzz_target() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(
        inputs.len() > 10,
        "the corpus is missing: {}",
        dir.display()
    );
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        let outcome = std::panic::catch_unwind(|| harness::parse_and_run(&data));
        assert!(outcome.is_ok(), "{} panicked", input.display());
    }
}
