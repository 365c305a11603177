// The generated function is typed: a grid of the wrong dimension or element type, or a
// missing argument, is a type error at the call.
use stencil::prelude::*;

stencil! {
    fn scale(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = c * u[i, j];
    }
}

fn main() {
    let u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    let mut out = Grid2::<f64>::new([4, 4]).unwrap();
    scale(&u, &mut out, 2.0).run().unwrap();
}
