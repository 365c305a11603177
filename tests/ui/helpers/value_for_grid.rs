use stencil::prelude::*;

stencil! {
    fn lap(u) { u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j] }
    pub fn smooth(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = u[i, j] + c * lap(u[i, j] * 2.0);
    }
}

fn main() {}
