use stencil::prelude::*;

stencil! {
    pub fn smooth(u: &Grid3<f64>, out: &mut Grid3<f64>, c: f64) {
        u[i, j, k] = c;
        out[i, j, k] = c * u[i, j, k];
    }
}

fn main() {
    let u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    let mut out = u.like();
    smooth(&u, &mut out, 0.5).run().unwrap();
    let _ = smooth::stencil();
}
