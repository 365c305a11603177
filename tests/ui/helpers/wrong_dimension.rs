use stencil::prelude::*;

stencil! {
    pub fn gradient(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
        out[i, j] = diff(u, k, h);
    }
}

fn main() {}
