use stencil::prelude::*;

stencil! {
    pub fn smooth(u: &Grid3<f64>, out: &mut Grid3<f64>, c: f64) {
        out[i, j, k] = c * (u[i, j, k] + out[i, j, k - 1]);
    }
}

fn main() {}
