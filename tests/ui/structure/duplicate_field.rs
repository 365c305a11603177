use stencil::prelude::*;

stencil! {
    pub fn smooth(u: &Grid3<f64>, u: &Grid3<f64>, out: &mut Grid3<f64>) {
        out[i, j, k] = u[i, j, k];
    }
}

fn main() {
    let u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    let mut out = u.like();
    smooth(&u, &u, &mut out).run().unwrap();
}
