//! The kernels of the guide's "Reductions, in-place updates and Krylov solvers" chapter
//! (docs/guide.md, whose blocks `cargo test --doc` runs too), run as tests with checks of their
//! own.

use stencil::prelude::*;

stencil! {
    /// The residual of the 7-point operator and its squared norm, in one sweep.
    pub fn residual(u: &Grid3<f64>, b: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>) {
        let res = b[i, j, k] - (6.0 * u[i, j, k] - u[i-1, j, k] - u[i+1, j, k]
            - u[i, j-1, k] - u[i, j+1, k] - u[i, j, k-1] - u[i, j, k+1]);
        r[i, j, k] = res;
        rr += res * res;
    }

    /// `y = a x + y`, in place.
    pub fn axpy(x: &Grid1<f64>, y: &mut Grid1<f64>, a: f64) {
        y[i] = a * x[i] + y[i];
    }
}

#[test]
fn readme_example_runs() -> Result<(), stencil::Error> {
    let (u, b) = (Grid3::<f64>::new([64; 3])?, Grid3::<f64>::new([64; 3])?);
    let mut r = u.like();
    let mut rr = Sum::new();
    residual(&u, &b, &mut r, &mut rr).run()?;
    println!("|r| = {}", rr.value().sqrt());
    // Zero grids have a zero residual, written everywhere.
    assert_eq!(rr.value(), 0.0);
    assert!(r.interior_iter().all(|(_, v)| v == 0.0));
    Ok(())
}

#[test]
fn readme_axpy_updates_in_place() -> Result<(), stencil::Error> {
    let mut x = Grid1::<f64>::new([1000])?;
    x.fill_with(|[i]| i as f64);
    let mut y = x.like();
    y.fill(1.0);
    axpy(&x, &mut y, 2.0).run()?;
    assert!(y.interior_iter().all(|([i], v)| v == 2.0 * i as f64 + 1.0));
    Ok(())
}
