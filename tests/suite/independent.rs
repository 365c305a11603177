//! Kernels written against the public API, as a user would, compared with plain loops written
//! independently of the library (no interpreter, no IR): the seeds' stencils on random shapes,
//! through `Launch::run` with its boundary handling, over several time steps.

use stencil::kernels::jacobi7;
use stencil::prelude::*;
use stencil_test_support::Rng;

stencil! {
    fn gradient(u: &Grid3<f64>, x: &mut Grid3<f64>, y: &mut Grid3<f64>, z: &mut Grid3<f64>, h: f64) {
        x[i, j, k] = h * (u[i+1, j, k] - u[i-1, j, k]);
        y[i, j, k] = h * (u[i, j+1, k] - u[i, j-1, k]);
        z[i, j, k] = h * (u[i, j, k+1] - u[i, j, k-1]);
    }

    fn blur(u: &Grid2<f32>, out: &mut Grid2<f32>) {
        out[i, j] = 0.25 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }
}

/// Plain dense array with an accessor that applies the boundary rule by hand.
struct Dense {
    n: [usize; 3],
    v: Vec<f64>,
}

impl Dense {
    fn at(&self, i: isize, j: isize, k: isize, periodic: bool) -> f64 {
        let n = self.n.map(|x| x as isize);
        let inside = |p: isize, d: usize| (0..n[d]).contains(&p);
        if periodic {
            let (i, j, k) = (i.rem_euclid(n[0]), j.rem_euclid(n[1]), k.rem_euclid(n[2]));
            self.v[((i * n[1] + j) * n[2] + k) as usize]
        } else if inside(i, 0) && inside(j, 1) && inside(k, 2) {
            self.v[((i * n[1] + j) * n[2] + k) as usize]
        } else {
            0.0
        }
    }
}

fn heat_by_hand(u: &Dense, c0: f64, c1: f64, periodic: bool) -> Dense {
    let [n0, n1, n2] = u.n;
    let mut v = Vec::with_capacity(n0 * n1 * n2);
    for i in 0..n0 as isize {
        for j in 0..n1 as isize {
            for k in 0..n2 as isize {
                let a = |di, dj, dk| u.at(i + di, j + dj, k + dk, periodic);
                v.push(
                    c0 * a(0, 0, 0)
                        + c1 * (a(-1, 0, 0)
                            + a(1, 0, 0)
                            + a(0, -1, 0)
                            + a(0, 1, 0)
                            + a(0, 0, -1)
                            + a(0, 0, 1)),
                );
            }
        }
    }
    Dense { n: u.n, v }
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (idx, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{what}: point {idx}: {g} vs {w}"
        );
    }
}

#[test]
fn heat_with_dirichlet_walls_matches_plain_loops_over_ten_steps() {
    let mut rng = Rng::new(7);
    for shape in [[9, 7, 13], [1, 5, 3], [16, 16, 16], [3, 1, 31]] {
        let mut u = Grid3::<f64>::new(shape).unwrap();
        u.set_boundary(Boundary::Dirichlet(0.0));
        let values: Vec<f64> = (0..shape.iter().product())
            .map(|_| rng.uniform(-1.0, 1.0))
            .collect();
        u.fill_with({
            let mut it = values.iter();
            move |_| *it.next().unwrap()
        });
        let mut v = u.like();
        let mut dense = Dense {
            n: shape,
            v: values,
        };
        for _ in 0..10 {
            jacobi7(&u, &mut v, 0.4, 0.1).run().unwrap();
            std::mem::swap(&mut u, &mut v);
            dense = heat_by_hand(&dense, 0.4, 0.1, false);
        }
        assert_close(&u.to_vec(), &dense.v, &format!("dirichlet {shape:?}"));
    }
}

#[test]
fn heat_with_periodic_boundaries_matches_plain_loops() {
    let mut rng = Rng::new(11);
    let shape = [6, 5, 11];
    let values: Vec<f64> = (0..shape.iter().product())
        .map(|_| rng.uniform(-1.0, 1.0))
        .collect();
    let mut u = Grid3::from_slice(shape, 1, &values).unwrap();
    u.set_boundary(Boundary::Periodic);
    let mut v = u.like();
    let mut dense = Dense {
        n: shape,
        v: values,
    };
    for _ in 0..5 {
        jacobi7(&u, &mut v, 0.5, 1.0 / 12.0).run().unwrap();
        std::mem::swap(&mut u, &mut v);
        dense = heat_by_hand(&dense, 0.5, 1.0 / 12.0, true);
    }
    assert_close(&u.to_vec(), &dense.v, "periodic");
}

#[test]
fn gradient_with_three_outputs_matches_plain_loops() {
    let mut rng = Rng::new(3);
    let shape = [5, 8, 7];
    let values: Vec<f64> = (0..shape.iter().product())
        .map(|_| rng.uniform(-1.0, 1.0))
        .collect();
    let u = Grid3::from_slice(shape, 2, &values).unwrap();
    let (mut x, mut y, mut z) = (u.like(), u.like(), u.like());
    gradient(&u, &mut x, &mut y, &mut z, 0.5).run().unwrap();
    let dense = Dense {
        n: shape,
        v: values,
    };
    let mut want = [Vec::new(), Vec::new(), Vec::new()];
    for i in 0..shape[0] as isize {
        for j in 0..shape[1] as isize {
            for k in 0..shape[2] as isize {
                let a = |di, dj, dk| dense.at(i + di, j + dj, k + dk, false);
                want[0].push(0.5 * (a(1, 0, 0) - a(-1, 0, 0)));
                want[1].push(0.5 * (a(0, 1, 0) - a(0, -1, 0)));
                want[2].push(0.5 * (a(0, 0, 1) - a(0, 0, -1)));
            }
        }
    }
    assert_close(&x.to_vec(), &want[0], "x");
    assert_close(&y.to_vec(), &want[1], "y");
    assert_close(&z.to_vec(), &want[2], "z");
}

#[test]
fn f32_blur_with_zero_gradient_boundaries_matches_plain_loops() {
    let mut rng = Rng::new(5);
    let (n0, n1) = (17, 29);
    let values: Vec<f32> = (0..n0 * n1)
        .map(|_| rng.uniform(-1.0, 1.0) as f32)
        .collect();
    let mut u = Grid2::from_slice([n0, n1], 1, &values).unwrap();
    u.set_boundary(Boundary::ZeroGradient);
    let mut out = u.like();
    blur(&u, &mut out).run().unwrap();
    let at = |i: isize, j: isize| {
        let i = i.clamp(0, n0 as isize - 1) as usize;
        let j = j.clamp(0, n1 as isize - 1) as usize;
        values[i * n1 + j]
    };
    for i in 0..n0 as isize {
        for j in 0..n1 as isize {
            let want = 0.25 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1));
            let got = out[[i as usize, j as usize]];
            assert!((got - want).abs() <= 1e-6, "({i}, {j}): {got} vs {want}");
        }
    }
}
