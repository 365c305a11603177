use stencil::prelude::*;

stencil! {
    #[fma]
    #[fma]
    fn heat(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) {
        out[i] = c * u[i - 1] + u[i + 1];
    }
}

fn main() {}
