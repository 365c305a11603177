use stencil::prelude::*;

stencil! {
    fn far_east(w) { w[i + 4, j] }
    pub fn shift(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = far_east(u[i + 5, j]);
    }
}

fn main() {}
