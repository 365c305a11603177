use stencil::prelude::*;

stencil! {
    #[rotate(out -> u)]
    fn diffuse(u: &Grid2<f64>, kappa: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = u[i, j] + kappa[i, j] * (u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j]);
    }
}

fn main() {
    let mut u = Grid2::<f64>::new([8, 8]).unwrap();
    let mut out = u.like();
    let kappa = u.like();
    // `u` rotates, so `steps` borrows it mutably: a shared borrow does not compile.
    let _ = diffuse::steps(&u, &kappa, &mut out).run(3);
}
