use stencil::prelude::*;

stencil! {
    pub fn forced(u: &Grid1<f64>, out: &mut Grid1<f64>, dt: f64) {
        out[i] = u[i] + sin(dt * step(1.0));
    }
}

fn main() {}
