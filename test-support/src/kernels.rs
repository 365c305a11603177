//! Kernels built as IR for suites that test below the facade (where `stencil::kernels` is not
//! at hand): the 7-point heat kernel of README.md's first example.

use stencil_core::{ElemType, Kernel, KernelBuilder};

/// The 3-D 7-point heat kernel `heat`, as `stencil::kernels::jacobi7` computes it:
/// `out = c0 * u[i, j, k] + c1 * (u[i-1] + u[i+1] + u[j-1] + u[j+1] + u[k-1] + u[k+1])`, the
/// neighbours summed left to right in that order.
pub fn heat7(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("heat", 3, elem);
    let u = b.input("u");
    let out = b.output("out");
    let c0 = b.param("c0");
    let c1 = b.param("c1");
    let center = b.read(u, &[0, 0, 0]);
    let mut sum = b.read(u, &[-1, 0, 0]);
    for offset in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = b.read(u, &offset);
        sum = b.add(sum, r);
    }
    let c0 = b.param_ref(c0);
    let c1 = b.param_ref(c1);
    let a = b.mul(c0, center);
    let s = b.mul(c1, sum);
    let value = b.add(a, s);
    b.store(out, value);
    b.finish().expect("the heat kernel verifies")
}
