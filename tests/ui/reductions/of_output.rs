use stencil::prelude::*;

stencil! {
    pub fn residual(u: &Grid1<f64>, r: &mut Grid1<f64>, rr: &mut Sum<f64>) {
        r[i] = u[i - 1] - 2.0 * u[i] + u[i + 1];
        rr += abs(r[i]);
    }
}

fn main() {}
