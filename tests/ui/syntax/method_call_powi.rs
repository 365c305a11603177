use stencil::prelude::*;

stencil! {
    pub fn energy(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = 0.5 * u[i, j].powi(2);
    }
}

fn main() {}
