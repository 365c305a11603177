use stencil::prelude::*;

stencil! {
    pub fn accumulate(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] += u[i];
    }
}

fn main() {}
