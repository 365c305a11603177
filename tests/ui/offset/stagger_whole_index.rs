use stencil::prelude::*;

stencil! {
    pub fn velocity(p: &Grid2<f64>, #[stagger(i)] vx: &Grid2<f64>,
                    #[stagger(i)] vx_next: &mut Grid2<f64>, s: f64) {
        vx_next[i + 1/2, j] = vx[i, j] - s * (p[i + 1, j] - p[i, j]);
    }
}

fn main() {}
