use stencil::prelude::*;

stencil! {
    pub fn highest(u: &Grid2<f64>, hi: &mut Max<f64>) {
        hi = min(hi, u[i, j]);
    }
}

fn main() {}
