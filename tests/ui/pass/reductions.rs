//! Kernels with reductions expand, compile, and compute what the reference interpreter
//! computes (through `stencil::verify`); the typed call and `with` fill their targets.

#![deny(
    warnings,
    missing_docs,
    rust_2018_idioms,
    unused_qualifications,
    unused_results
)]

use stencil::prelude::*;

stencil! {
    /// Residual and its squared norm in one sweep.
    pub fn residual(x: &Grid3<f64>, b: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>, h2: f64) {
        let res = b[i,j,k] - (6.0*x[i,j,k] - x[i-1,j,k] - x[i+1,j,k] - x[i,j-1,k] - x[i,j+1,k] - x[i,j,k-1] - x[i,j,k+1]) / h2;
        r[i,j,k] = res;
        rr += res * res;
    }

    /// A dot product: reductions only, no output grid.
    pub fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) { s += x[i] * y[i]; }

    /// The extremes of a field, either argument order.
    pub fn extremes(u: &Grid2<f32>, lo: &mut Min<f32>, hi: &mut stencil::Max<f32>) {
        lo = min(lo, u[i, j]);
        hi = max(u[i, j], hi);
    }

    /// Index variables named by the first read of a kernel without stores.
    fn shifted(u: &Grid2<f64>, s: &mut Sum<f64>, c: f64) { s += c * (u[x + 1, y] - u[x, y - 1]); }
}

fn check<T: stencil::Element>(stencil: &stencil::Stencil<T>, name: &str) {
    assert_eq!(stencil.kernel().name, name);
    assert!(stencil.kernel().has_reductions(), "{name} has reductions");
    let report = stencil::verify(stencil).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(report.cases > 0, "{name}: nothing verified");
}

fn main() -> Result<(), Error> {
    check(residual::stencil(), "residual");
    check(dot::stencil(), "dot");
    check(extremes::stencil(), "extremes");
    check(shifted::stencil(), "shifted");

    let mut x = Grid1::<f64>::new([100])?;
    x.fill_with(|[i]| i as f64);
    let mut y = x.like();
    y.fill_with(|_| 2.0);
    let mut s = Sum::new();
    dot(&x, &y, &mut s).run()?;
    assert_eq!(s.value(), 9900.0);

    let mut u = Grid2::<f32>::new([7, 9])?;
    u.fill_with(|[i, j]| (i as f32 - 3.0) * (j as f32 + 1.0));
    let (mut lo, mut hi) = (Min::new(), Max::new());
    extremes(&u, &mut lo, &mut hi).run()?;
    assert_eq!((lo.value(), hi.value()), (-27.0, 27.0));

    // The typed call and the call with named parameters agree.
    let mut x = Grid3::<f64>::new([5, 6, 7])?;
    x.fill_with(|[i, j, k]| (i + 2 * j + 3 * k) as f64);
    let b = x.like();
    let mut r = x.like();
    let mut rr = Sum::new();
    residual(&x, &b, &mut r, &mut rr, 1.0).run()?;
    let mut by_name = Sum::new();
    let mut r2 = x.like();
    residual::with(&x, &b, &mut r2, &mut by_name, residual::Params { h2: 1.0 }).run()?;
    assert_eq!(rr.value(), by_name.value());
    assert_eq!(r.as_slice(), r2.as_slice());
    Ok(())
}
