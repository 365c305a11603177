use stencil::prelude::*;

stencil! {
    fn lap(u) { u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j] }
    pub fn smooth(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
        out[i, j] = lap(u, h);
    }
}

fn main() {}
