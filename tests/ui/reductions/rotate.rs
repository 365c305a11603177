use stencil::prelude::*;

stencil! {
    #[rotate(out -> u)]
    pub fn heat(u: &Grid1<f64>, out: &mut Grid1<f64>, change: &mut Max<f64>) {
        let next = 0.5 * (u[i - 1] + u[i + 1]);
        out[i] = next;
        change = max(change, abs(next - u[i]));
    }
}

fn main() {}
