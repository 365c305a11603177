use stencil::prelude::*;

stencil! {
    fn square(x) { x * x }
    pub fn smooth(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = square(u);
    }
}

fn main() {}
