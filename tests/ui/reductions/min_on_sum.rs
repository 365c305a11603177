use stencil::prelude::*;

stencil! {
    pub fn total(u: &Grid2<f64>, s: &mut Sum<f64>) {
        s = min(s, u[i, j]);
    }
}

fn main() {}
