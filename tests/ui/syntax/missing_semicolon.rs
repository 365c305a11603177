use stencil::prelude::*;

stencil! {
    pub fn copy(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] = u[i]
    }
}

fn main() {}
