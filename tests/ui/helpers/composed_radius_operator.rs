use stencil::prelude::*;

stencil! {
    pub fn shifted_laplace(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
        out[i, j] = laplace(u[i, j - 6], h, 6);
    }
}

fn main() {}
