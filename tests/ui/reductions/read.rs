use stencil::prelude::*;

stencil! {
    pub fn norm(u: &Grid1<f64>, out: &mut Grid1<f64>, s: &mut Sum<f64>) {
        out[i] = u[i] / s;
        s += u[i] * u[i];
    }
}

fn main() {}
