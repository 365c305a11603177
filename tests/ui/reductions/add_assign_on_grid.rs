use stencil::prelude::*;

stencil! {
    pub fn accumulate(u: &Grid1<f64>, out: &mut Grid1<f64>, s: &mut Sum<f64>) {
        out += u[i];
        s += u[i];
    }
}

fn main() {}
