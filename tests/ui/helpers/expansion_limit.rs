use stencil::prelude::*;

stencil! {
    fn f0(u) { u[i] }
    fn f1(u) { f0(u) + f0(u) }
    fn f2(u) { f1(u) + f1(u) }
    fn f3(u) { f2(u) + f2(u) }
    fn f4(u) { f3(u) + f3(u) }
    fn f5(u) { f4(u) + f4(u) }
    fn f6(u) { f5(u) + f5(u) }
    fn f7(u) { f6(u) + f6(u) }
    fn f8(u) { f7(u) + f7(u) }
    fn f9(u) { f8(u) + f8(u) }
    fn f10(u) { f9(u) + f9(u) }
    fn f11(u) { f10(u) + f10(u) }
    fn f12(u) { f11(u) + f11(u) }
    fn f13(u) { f12(u) + f12(u) }
    fn f14(u) { f13(u) + f13(u) }
    fn f15(u) { f14(u) + f14(u) }
    fn f16(u) { f15(u) + f15(u) }
    fn f17(u) { f16(u) + f16(u) }
    fn f18(u) { f17(u) + f17(u) }
    fn f19(u) { f18(u) + f18(u) }
    fn f20(u) { f19(u) + f19(u) }
    pub fn blowup(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] = f20(u);
    }
}

fn main() {}
