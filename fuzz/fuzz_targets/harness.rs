//! The body of the `parse` fuzz target, shared with the replay of the committed corpus in
//! `tests/parse.rs` (which includes this file): any bytes, as kernel text, through
//! `stencil::parse`; a kernel it accepts runs on a tiny random grid on the CPU backend and must
//! match the reference interpreter (`stencil::verify::verify_with`). A panic, an abort, a hang
//! or a disagreement is a bug; an `Err` from `parse` must be `InvalidKernel` with every line
//! `line L, column C: message`.

use stencil::verify::{VerifyConfig, verify_with};
use stencil::{Backend, CpuBackend, Element, ErrorKind, Stencil};

/// Parses `data` as kernel text and runs what it accepts (see the module docs).
pub(crate) fn parse_and_run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let seed = fnv1a(data);
    match stencil::parse::<f64>(text) {
        Ok(stencil) => run(&stencil, seed),
        Err(error) if error.kind() == ErrorKind::ElementTypeMismatch => {
            match stencil::parse::<f32>(text) {
                Ok(stencil) => run(&stencil, seed),
                Err(error) => panic!("neither f64 nor f32 (then: {error})"),
            }
        }
        Err(error) => {
            assert_eq!(error.kind(), ErrorKind::InvalidKernel, "{error}");
            for line in error.to_string().lines() {
                assert!(
                    line.starts_with("line ") && line.contains(", column ") && line.contains(": "),
                    "an error without its position: {line:?}"
                );
            }
        }
    }
}

/// Runs `stencil` on one small shape drawn from `seed` and compares it with the interpreter.
fn run<T: Element>(stencil: &Stencil<T>, seed: u64) {
    let n_dims = stencil.kernel().n_dims;
    let largest = match n_dims {
        1 => 40,
        2 => 9,
        3 => 5,
        _ => 3,
    };
    let shape: Vec<usize> = (0..n_dims)
        .map(|d| 1 + (seed >> (8 * d)) as usize % largest)
        .collect();
    // Special values (zeros, infinities, NaNs, subnormals) in the grids: a kernel that
    // computes a NaN must verify (the poison is a number no arithmetic leads to).
    let config = VerifyConfig {
        seed,
        shapes: Some(vec![shape.clone()]),
        special_values: true,
        ..VerifyConfig::default()
    };
    let cpu: &dyn Backend<T> = CpuBackend::global();
    if let Err(error) = verify_with(stencil, &[cpu], &config) {
        panic!(
            "`{}` on {shape:?} does not match the interpreter: {error}",
            stencil.kernel().name
        );
    }
}

/// FNV-1a of `data`: the input's own seed, so a replay runs the same case.
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
