//! Helpers and the finite-difference operators of the kernel language, run: kernels written
//! with helpers against the same kernels written out by hand, on random grids with poisoned
//! outputs; `diff`, `diff2` and `laplace` against exact derivatives of random polynomials of
//! degree up to their order (which central differences of that order reproduce exactly), and
//! against the standard weight tables written out here; every kernel verified on every backend
//! against the reference interpreter. Also the named-parameter forms `k::with(.., k::Params {
//! .. })` and `k::steps_with(..)` against the positional ones.

use stencil::prelude::*;
use stencil::verify;
use stencil_test_support::{Rng, grid};

stencil! {
    /// The 5-point Laplacian without the spacing.
    fn lap(u) { u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j] }
    /// The reaction term of Gray-Scott, with a `let`.
    fn react(a, b) { let ab = a * b; ab * b }
    /// The point to the east of a (possibly shifted) grid.
    fn east(w) { w[i + 1, j] }
    /// A helper calling helpers, shifting its grid.
    fn smoothed_east(w, c) { c * east(w[i, j - 1]) + lap(w) }

    /// Kernel written with helpers.
    pub fn with_helpers(u: &Grid2<f64>, v: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = c * lap(u) - react(u[i, j], v[i, j] + 1.0) + east(u[i, j + 1])
            + smoothed_east(v[i - 2, j], 2.0 * c);
    }

    /// The same kernel written out.
    pub fn by_hand(u: &Grid2<f64>, v: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        let b = v[i, j] + 1.0;
        let c2 = 2.0 * c;
        out[i, j] = c * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j])
            - u[i, j] * b * b + u[i + 1, j + 1]
            + (c2 * v[i - 1, j - 1]
               + (v[i-3, j] + v[i-1, j] + v[i-2, j-1] + v[i-2, j+1] - 4.0 * v[i-2, j]));
    }

    /// Every operator at order 2 (the default).
    pub fn fd2(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, lapl: &mut Grid2<f64>, h: f64) {
        dx[i, j] = diff(u, i, h);
        dyy[i, j] = diff2(u, j, h);
        lapl[i, j] = laplace(u, h);
    }

    /// Every operator at order 4.
    pub fn fd4(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, lapl: &mut Grid2<f64>, h: f64) {
        dx[i, j] = diff(u, i, h, 4);
        dyy[i, j] = diff2(u, j, h, 4);
        lapl[i, j] = laplace(u, h, 4);
    }

    /// Every operator at order 6.
    pub fn fd6(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, lapl: &mut Grid2<f64>, h: f64) {
        dx[i, j] = diff(u, i, h, 6);
        dyy[i, j] = diff2(u, j, h, 6);
        lapl[i, j] = laplace(u, h, 6);
    }

    /// Every operator at order 8.
    pub fn fd8(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, lapl: &mut Grid2<f64>, h: f64) {
        dx[i, j] = diff(u, i, h, 8);
        dyy[i, j] = diff2(u, j, h, 8);
        lapl[i, j] = laplace(u, h, 8);
    }

    /// Order-8 first and order-6 second derivatives from the textbook tables (Fornberg 1988).
    pub fn tables(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, h: f64) {
        dx[i, j] = ((4.0 / 5.0) * (u[i+1, j] - u[i-1, j]) - (1.0 / 5.0) * (u[i+2, j] - u[i-2, j])
            + (4.0 / 105.0) * (u[i+3, j] - u[i-3, j]) - (1.0 / 280.0) * (u[i+4, j] - u[i-4, j])) / h;
        dyy[i, j] = (-(49.0 / 18.0) * u[i, j] + (3.0 / 2.0) * (u[i, j+1] + u[i, j-1])
            - (3.0 / 20.0) * (u[i, j+2] + u[i, j-2]) + (1.0 / 90.0) * (u[i, j+3] + u[i, j-3]))
            / (h * h);
    }

    /// Diffusion with its spacing and time step, for the named-parameter forms.
    #[rotate(out -> u)]
    pub fn diffuse(u: &Grid2<f64>, out: &mut Grid2<f64>, alpha: f64, dt: f64, h: f64) {
        out[i, j] = u[i, j] + dt * alpha * laplace(u, h, 4);
    }

    /// The same two from the operators.
    pub fn from_operators(u: &Grid2<f64>, dx: &mut Grid2<f64>, dyy: &mut Grid2<f64>, h: f64) {
        dx[i, j] = diff(u, i, h, 8);
        dyy[i, j] = diff2(u, j, h, 6);
    }
}

const N: usize = 24;
const HALO: usize = 4;

fn random_grid(rng: &mut Rng) -> Grid2<f64> {
    grid::random_grid([N, N], HALO, rng, (-1.0, 1.0))
}

fn poisoned() -> Grid2<f64> {
    grid::poisoned_grid([N, N], HALO, f64::NAN)
}

/// Asserts `a` and `b` agree within `tolerance` (relative to the larger magnitude, or to one
/// when smaller) at every interior point at least `margin` points from the edges, and that no
/// point is NaN (every output point was written).
fn assert_close(a: &Grid2<f64>, b: &Grid2<f64>, margin: usize, tolerance: f64, what: &str) {
    let mut compared = 0;
    for ((p, x), (_, y)) in a.interior_iter().zip(b.interior_iter()) {
        assert!(!x.is_nan() && !y.is_nan(), "{what}: NaN at {p:?}");
        if p.iter().any(|&c| c < margin || c >= N - margin) {
            continue;
        }
        let scale = x.abs().max(y.abs()).max(1.0);
        assert!(
            (x - y).abs() <= tolerance * scale,
            "{what} at {p:?}: {x} vs {y}"
        );
        compared += 1;
    }
    assert!(compared > 0, "{what}: nothing compared");
}

#[test]
fn kernels_with_helpers_compute_what_the_written_out_kernels_compute() {
    let mut rng = Rng::new(7);
    let (u, v) = (random_grid(&mut rng), random_grid(&mut rng));
    let (mut a, mut b) = (poisoned(), poisoned());
    with_helpers(&u, &v, &mut a, 0.3).run().unwrap();
    by_hand(&u, &v, &mut b, 0.3).run().unwrap();
    assert_close(&a, &b, 0, 1e-14, "helpers");
    for stencil in [
        with_helpers::stencil(),
        from_operators::stencil(),
        fd8::stencil(),
    ] {
        let report = verify(stencil).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.cases > 0, "{report}");
    }
}

#[test]
fn operators_match_the_weight_tables_written_out() {
    let mut rng = Rng::new(11);
    let u = random_grid(&mut rng);
    let (mut dx, mut dyy) = (poisoned(), poisoned());
    let (mut tx, mut tyy) = (poisoned(), poisoned());
    from_operators(&u, &mut dx, &mut dyy, 0.25).run().unwrap();
    tables(&u, &mut tx, &mut tyy, 0.25).run().unwrap();
    assert_close(&dx, &tx, 0, 1e-13, "diff order 8");
    assert_close(&dyy, &tyy, 0, 1e-13, "diff2 order 6");
}

/// A polynomial `sum c_k x^k` with its first and second derivatives.
struct Polynomial(Vec<f64>);

impl Polynomial {
    fn value(&self, x: f64) -> f64 {
        self.0.iter().rev().fold(0.0, |acc, c| acc * x + c)
    }
    fn first(&self, x: f64) -> f64 {
        let derivative: Vec<f64> = (1..self.0.len()).map(|k| k as f64 * self.0[k]).collect();
        Polynomial(derivative).value(x)
    }
    fn second(&self, x: f64) -> f64 {
        let derivative: Vec<f64> = (2..self.0.len())
            .map(|k| (k * (k - 1)) as f64 * self.0[k])
            .collect();
        Polynomial(derivative).value(x)
    }
}

type Operators = fn(&Grid2<f64>, &mut Grid2<f64>, &mut Grid2<f64>, &mut Grid2<f64>, f64);

#[test]
fn operators_are_exact_on_polynomials_up_to_their_order() {
    let h = 0.1;
    let coordinate = |n: usize| (n as f64 - N as f64 / 2.0) * h;
    let runs: [(usize, Operators); 4] = [
        (2, |u, a, b, c, h| fd2(u, a, b, c, h).run().unwrap()),
        (4, |u, a, b, c, h| fd4(u, a, b, c, h).run().unwrap()),
        (6, |u, a, b, c, h| fd6(u, a, b, c, h).run().unwrap()),
        (8, |u, a, b, c, h| fd8(u, a, b, c, h).run().unwrap()),
    ];
    let mut rng = Rng::new(3);
    for (order, run) in runs {
        let p = Polynomial((0..=order).map(|_| rng.uniform(-1.0, 1.0)).collect());
        let q = Polynomial((0..=order).map(|_| rng.uniform(-1.0, 1.0)).collect());
        let u = Grid2::from_fn([N, N], HALO, |[i, j]| {
            p.value(coordinate(i)) + q.value(coordinate(j))
        })
        .unwrap();
        let (mut dx, mut dyy, mut lapl) = (poisoned(), poisoned(), poisoned());
        run(&u, &mut dx, &mut dyy, &mut lapl, h);
        let exact_dx = Grid2::from_fn([N, N], HALO, |[i, _]| p.first(coordinate(i))).unwrap();
        let exact_dyy = Grid2::from_fn([N, N], HALO, |[_, j]| q.second(coordinate(j))).unwrap();
        let exact_lapl = Grid2::from_fn([N, N], HALO, |[i, j]| {
            p.second(coordinate(i)) + q.second(coordinate(j))
        })
        .unwrap();
        // Points whose stencil lies inside the interior, where `u` is the polynomial.
        let margin = order / 2;
        assert_close(&dx, &exact_dx, margin, 1e-9, &format!("diff order {order}"));
        assert_close(
            &dyy,
            &exact_dyy,
            margin,
            1e-8,
            &format!("diff2 order {order}"),
        );
        assert_close(
            &lapl,
            &exact_lapl,
            margin,
            1e-8,
            &format!("laplace order {order}"),
        );
    }
}

#[test]
fn order_two_is_off_by_h_squared_on_a_cubic() {
    // Guards the test above: the comparison sees a truncation error where there is one.
    let h = 0.1;
    let coordinate = |n: usize| (n as f64 - N as f64 / 2.0) * h;
    let mut x_power = vec![0.0; 4];
    x_power[3] = 1.0;
    let cubic = Polynomial(x_power);
    let u = Grid2::from_fn([N, N], HALO, |[i, _]| cubic.value(coordinate(i))).unwrap();
    let (mut dx, mut dyy, mut lapl) = (poisoned(), poisoned(), poisoned());
    fd2(&u, &mut dx, &mut dyy, &mut lapl, h).run().unwrap();
    // Order 2 on x^3: (x+h)^3 - (x-h)^3 over 2h is 3x^2 + h^2, off by h^2 everywhere.
    let centre = [N / 2, N / 2];
    assert!((dx[centre] - (3.0 * coordinate(N / 2).powi(2) + h * h)).abs() < 1e-12);
}

#[test]
fn named_parameters_bind_as_the_positional_ones_do() {
    let mut rng = Rng::new(5);
    let (u, v) = (random_grid(&mut rng), random_grid(&mut rng));
    let (mut a, mut b) = (poisoned(), poisoned());
    with_helpers(&u, &v, &mut a, 0.3).run().unwrap();
    with_helpers::with(&u, &v, &mut b, with_helpers::Params { c: 0.3 })
        .run()
        .unwrap();
    assert_eq!(a.as_slice(), b.as_slice());

    // Parameters out of declaration order, by name; the time loop likewise.
    let params = diffuse::Params {
        h: 0.5,
        dt: 0.01,
        alpha: 2.0,
    };
    let (mut u1, mut out1) = (random_grid(&mut rng), poisoned());
    let (mut u2, mut out2) = (u1.repadded(u1.padding()).unwrap(), poisoned());
    diffuse::steps(&mut u1, &mut out1, 2.0, 0.01, 0.5)
        .run(6)
        .unwrap();
    diffuse::steps_with(
        diffuse::Grids {
            u: &mut u2,
            out: &mut out2,
        },
        params,
    )
    .run(6)
    .unwrap();
    assert_eq!(u1.as_slice(), u2.as_slice());
    let (mut o1, mut o2) = (poisoned(), poisoned());
    diffuse(&u1, &mut o1, 2.0, 0.01, 0.5).run().unwrap();
    diffuse::with(&u1, &mut o2, params).run().unwrap();
    assert_eq!(o1.as_slice(), o2.as_slice());
    assert!(o1.interior_iter().all(|(_, x)| x.is_finite()));
}
