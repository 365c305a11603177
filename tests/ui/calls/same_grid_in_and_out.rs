// Passing the same grid as input and output is rejected at compile time: the generated
// function has the kernel's own signature, so the borrow checker sees `&u` and `&mut u`.
use stencil::prelude::*;

stencil! {
    fn smooth(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] = 0.5 * (u[i-1] + u[i+1]);
    }
}

fn main() {
    let mut u = Grid1::<f64>::new([8]).unwrap();
    smooth(&u, &mut u).run().unwrap();
}
