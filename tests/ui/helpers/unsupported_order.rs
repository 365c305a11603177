use stencil::prelude::*;

stencil! {
    pub fn wave(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
        out[i, j] = laplace(u, h, 10);
    }
}

fn main() {}
