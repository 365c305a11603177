use stencil::prelude::*;

stencil! {
    pub fn split(u: &Grid3<f64>, low: &mut Grid3<f64>, high: &mut Grid3<f64>) {
        low[i, j, k] = min(u[i, j, k], 0);
    }
}

fn main() {}
