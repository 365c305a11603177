use stencil::prelude::*;

stencil! {
    pub fn lowest(u: &Grid2<f32>, lo: &mut Min<f32>) {
        lo += u[i, j];
    }
}

fn main() {}
