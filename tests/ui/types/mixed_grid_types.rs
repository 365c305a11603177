use stencil::prelude::*;

stencil! {
    pub fn smooth(u: &Grid3<f64>, out: &mut Grid3<f32>, c: f64) {
        out[i, j, k] = c * u[i, j, k];
    }
}

fn main() {
    let u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    let mut out = Grid3::<f32>::new([4, 4, 4]).unwrap();
    let _launch = smooth(&u, &mut out, 0.5);
}
