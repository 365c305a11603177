//! `stencil!` inside a function body: the kernel's function, its module (`stencil()`,
//! `Params`, `with`, `steps`, `steps_with`) and a reduction resolve in the body's scope, and
//! compute what the reference interpreter computes.

#![deny(
    warnings,
    missing_docs,
    rust_2018_idioms,
    unused_qualifications,
    unused_results
)]

use stencil::prelude::*;

/// Random values in `[-1, 1)` from a small generator (deterministic).
fn random_grid(shape: [usize; 2], seed: u64) -> Result<Grid2<f64>, Error> {
    let mut state = seed;
    Grid2::from_fn(shape, 2, |_| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    })
}

fn sweep_and_reduce() -> Result<(), Error> {
    stencil! {
        fn lap(w) { w[i - 1, j] + w[i + 1, j] + w[i, j - 1] + w[i, j + 1] - 4.0 * w[i, j] }

        fn smooth(u: &Grid2<f64>, out: &mut Grid2<f64>, total: &mut Sum<f64>, c: f64) {
            let v = u[i, j] + c * lap(u);
            out[i, j] = v;
            total += v;
        }
    }
    let report = stencil::verify(smooth::stencil()).map_err(|e| {
        Error::new(stencil::ErrorKind::VerificationFailed, format!("smooth: {e}"))
    })?;
    assert!(report.cases > 0);

    let u = random_grid([9, 7], 1)?;
    let (mut by_position, mut by_name) = (u.like(), u.like());
    by_position.fill_with(|_| f64::NAN);
    by_name.fill_with(|_| f64::NAN);
    let (mut s1, mut s2) = (Sum::new(), Sum::new());
    smooth(&u, &mut by_position, &mut s1, 0.2).run()?;
    smooth::with(&u, &mut by_name, &mut s2, smooth::Params { c: 0.2 }).run()?;
    let mut reference = u.like();
    reference.fill_with(|[i, j]| {
        let at = |di: isize, dj: isize| {
            u.get([i as isize + di, j as isize + dj])
                .expect("inside the halo")
        };
        at(0, 0) + 0.2 * (at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) - 4.0 * at(0, 0))
    });
    for ([i, j], value) in reference.interior_iter() {
        let point = [i as isize, j as isize];
        let found = by_position.get(point).expect("interior");
        // (The generated loop may factor the sum: within rounding of the hand-written one.)
        assert!((found - value).abs() <= 1e-12, "at {point:?}: {found} for {value}");
        assert_eq!(by_name.get(point).map(f64::to_bits), Some(found.to_bits()));
    }
    assert_eq!(s1.value(), s2.value());
    assert!(s1.value().is_finite());
    Ok(())
}

fn time_loop() -> Result<(), Error> {
    stencil! {
        #[rotate(out -> u)]
        fn relax(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
            out[i, j] = u[i, j] + c * (u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j]);
        }
    }
    let start = random_grid([6, 5], 2)?;
    let (mut u1, mut out1) = (start.clone(), start.like());
    let (mut u2, mut out2) = (start.clone(), start.like());
    let _ = relax::steps(&mut u1, &mut out1, 0.1).run(3)?;
    let _ = relax::steps_with(
        relax::Grids { u: &mut u2, out: &mut out2 },
        relax::Params { c: 0.1 },
    ).run(3)?;
    // By hand: a sweep and a swap per step.
    let (mut u3, mut out3) = (start.clone(), start.like());
    for _ in 0..3 {
        relax(&u3, &mut out3, 0.1).run()?;
        std::mem::swap(&mut u3, &mut out3);
    }
    assert_eq!(u1.as_slice(), u3.as_slice());
    assert_eq!(u2.as_slice(), u3.as_slice());
    Ok(())
}

fn main() -> Result<(), Error> {
    sweep_and_reduce()?;
    time_loop()
}
