use stencil::prelude::*;

stencil! {
    pub fn root(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] = sqr(u[i]);
    }
}

fn main() {}
