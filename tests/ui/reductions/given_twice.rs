use stencil::prelude::*;

stencil! {
    pub fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) {
        s += x[i] * y[i];
        s += x[i];
    }
}

fn main() {}
