use stencil::prelude::*;

stencil! {
    #[rotate(out -> v)]
    fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>) {
        out[i, j, k] = 0.5 * (u[i-1, j, k] + u[i+1, j, k]);
    }
}

fn main() {}
