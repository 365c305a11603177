use stencil::prelude::*;

stencil! {
    #[rotate(un -> u, vn -> u)]
    fn pair(u: &Grid2<f64>, v: &Grid2<f64>, un: &mut Grid2<f64>, vn: &mut Grid2<f64>) {
        un[i, j] = v[i, j - 1];
        vn[i, j] = u[i + 1, j];
    }
}

fn main() {}
