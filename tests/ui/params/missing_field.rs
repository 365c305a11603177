use stencil::prelude::*;

stencil! {
    pub fn relax(u: &Grid1<f64>, out: &mut Grid1<f64>, omega: f64, h: f64) {
        out[i] = u[i] + omega * diff2(u, i, h);
    }
}

fn main() {
    let u = Grid1::<f64>::new([8]).unwrap();
    let mut out = u.like();
    relax::with(&u, &mut out, relax::Params { omega: 0.5 }).run().unwrap();
}
