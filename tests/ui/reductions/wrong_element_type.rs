use stencil::prelude::*;

stencil! {
    pub fn total(u: &Grid1<f64>, s: &mut Sum<f32>) {
        s += u[i];
    }
}

fn main() {}
