use stencil::prelude::*;

stencil! {
    pub fn ramp(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = u[i, j] + c * k;
    }
}

fn main() {}
