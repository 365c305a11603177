use stencil::prelude::*;

stencil! {
    pub fn smooth(u: &Grid3<f64>, out: &mut Grid3<f64>, c: f64) {
        let average = (u[i - 1, j, k] + u[i + 1, j, k]) / 2;
        out[i, j, k] = c * averag;
    }
}

fn main() {}
