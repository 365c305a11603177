use stencil::prelude::*;

stencil! {
    pub fn total(u: &Grid1<f64>, s: &mut Sum<f64>) {
        s += u[i];
        total += u[i];
    }
}

fn main() {}
