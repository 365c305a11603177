//! Every feature of the kernel language expands, compiles, and computes what the reference
//! interpreter computes (through `stencil::verify`, which also runs the generated point loop).

#![deny(
    warnings,
    missing_docs,
    rust_2018_idioms,
    unused_qualifications,
    unused_results
)]

use stencil::prelude::*;

stencil! {
    /// One Jacobi sweep of the 3-D heat equation.
    pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }

    fn features(a: &Grid2<f32>, b: &stencil::Grid2<f32>, out: &mut Grid<f32, 2>, s: f32, unused: f32) {
        let d = -(a[i, j + 2] - 1.5) / s;
        let never_read = b[i - 3, j];
        let m = if d < 0 && !(d >= s) || d == 2 { sqrt(abs(d)) } else { max(d, pow(s, 3)) };
        out[i, j] = select(m != d, exp(min(m, 1)), floor(d) + ceil(b[i, j]) * ln(1 + abs(m)));
    }

    pub(crate) fn two_outputs(x: &Grid1<f64>, y: &Grid1<f64>, p: &mut Grid1<f64>, q: &mut Grid1<f64>) {
        let t = sin(x[i - 4]) + cos(y[i + 4]) - tan(x[i]) * tanh(y[i]);
        q[i] = t;
        p[i] = if t <= 0.25 || t > 0.75 { t } else { -t };
    }

    /// No input grid.
    fn constant(out: &mut Grid2<f64>, c: f64) {
        out[i, j] = c;
    }

    fn copy(u: &Grid1<f32>, out: &mut Grid1<f32>) {
        out[i] = u[i];
    }

    /// A helper (documented, as helpers may be): a scaled second difference along `i`.
    fn bend(w, c) { let two = 2.0; c * (w[i - 1, j] - two * w[i, j] + w[i + 1, j]) }

    fn operators(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
        out[i, j] = laplace(u, h, 8) + diff(u[i, j + 1], i, h, 6) - diff2(u, j, h, 4)
            + bend(u[i + 1, j], h) + diff(u, j, 0.5);
    }

    fn four(u: &Grid4<f64>, out: &mut Grid4<f64>) {
        out[w, x, y, z] = u[w, x, y, z - 1] + u[w + 1, x, y, z] - 0.1 * u[w, x - 2, y + 1, z];
    }
}

fn check<T: stencil::Element>(stencil: &stencil::Stencil<T>, name: &str) {
    assert_eq!(stencil.kernel().name, name);
    assert!(
        stencil.cpu_loop().is_some(),
        "{name} has a generated point loop"
    );
    let report = stencil::verify(stencil).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(report.cases > 0, "{name}: nothing verified");
}

fn main() -> Result<(), Error> {
    check(heat::stencil(), "heat");
    check(features::stencil(), "features");
    check(two_outputs::stencil(), "two_outputs");
    check(four::stencil(), "four");
    check(constant::stencil(), "constant");
    check(copy::stencil(), "copy");
    check(operators::stencil(), "operators");
    assert_eq!(four::stencil().kernel().index_names, ["w", "x", "y", "z"]);

    // The typed call: a point source spreads to its six neighbours.
    let mut u = Grid3::<f64>::new([4, 5, 6])?;
    u.fill_with(|[i, j, k]| if [i, j, k] == [1, 2, 3] { 1.0 } else { 0.0 });
    let mut v = u.like();
    heat(&u, &mut v, 0.5, 0.25).run()?;
    let mut by_name = u.like();
    heat::with(&u, &mut by_name, heat::Params { c1: 0.25, c0: 0.5 }).run()?;
    assert_eq!(by_name.as_slice(), v.as_slice());
    // (Points whose neighbours are all interior, so the boundary condition does not matter.)
    assert_eq!(v.get([1, 2, 3]), Some(0.5));
    assert_eq!(v.get([1, 2, 2]), Some(0.25));
    assert_eq!(v.get([2, 2, 3]), Some(0.25));
    assert_eq!(v.get([2, 3, 1]), Some(0.0));
    Ok(())
}
