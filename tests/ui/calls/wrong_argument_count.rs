use stencil::prelude::*;

stencil! {
    fn scale(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = c * u[i, j];
    }
}

fn main() {
    let u = Grid2::<f64>::new([4, 4]).unwrap();
    let mut out = u.like();
    scale(&u, &mut out).run().unwrap();
}
