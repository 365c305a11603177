use stencil::prelude::*;

stencil! {
    pub fn total(u: &Grid1<f64>, s: Sum<f64>) {
        s += u[i];
    }
}

fn main() {}
