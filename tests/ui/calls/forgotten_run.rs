// A forgotten `.run()` is one diagnostic (here made an error), not one per `#[must_use]`.
#![deny(unused_must_use)]

use stencil::prelude::*;

stencil! {
    #[rotate(out -> u)]
    pub fn smooth(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) {
        out[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    }
}

fn main() {
    let mut u = Grid1::<f64>::new([8]).unwrap();
    let mut out = u.like();
    smooth(&u, &mut out, 0.25);
    smooth::steps(&mut u, &mut out, 0.25);
}
