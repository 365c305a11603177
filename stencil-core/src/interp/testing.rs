//! Test fixtures shared by the tests of the analyses, the interpreter and the passes: sample
//! kernels built by hand, and grids built directly from [`Geometry`] plus a `Vec` (no
//! dependency on the `Grid` type).

use crate::analysis::radius;
use crate::element::{ElemType, Element};
use crate::interp;
use crate::ir::{ExprId, Kernel, KernelBuilder};
use crate::rng::Rng;
use crate::view::{FieldView, FieldViewMut, Geometry};

/// A grid's storage with its layout.
pub(crate) struct TestGrid<T> {
    pub(crate) geom: Geometry,
    pub(crate) data: Vec<T>,
}

impl<T: Element> TestGrid<T> {
    /// Every element (interior, halo, padding) set to `value`.
    pub(crate) fn filled(shape: &[usize], halo: usize, value: T) -> Self {
        let geom = Geometry::new(shape, halo, T::ELEM.size_bytes()).unwrap();
        TestGrid {
            geom,
            data: vec![value; geom.len],
        }
    }

    /// Every element uniform in `[-1, 1)`, then rounded to `T`.
    pub(crate) fn random(shape: &[usize], halo: usize, rng: &mut Rng) -> Self {
        let mut g = Self::filled(shape, halo, T::ZERO);
        for v in &mut g.data {
            *v = T::from_f64(rng.uniform(-1.0, 1.0));
        }
        g
    }

    pub(crate) fn view(&self) -> FieldView<'_, T> {
        FieldView {
            geom: self.geom,
            data: &self.data,
        }
    }

    pub(crate) fn view_mut(&mut self) -> FieldViewMut<'_, T> {
        FieldViewMut {
            geom: self.geom,
            data: &mut self.data,
        }
    }

    pub(crate) fn get(&self, point: &[isize]) -> T {
        self.view().get(point)
    }

    /// Interior values in C order.
    pub(crate) fn interior_values(&self) -> Vec<T> {
        interior_points(self.geom.interior())
            .iter()
            .map(|p| self.get(p))
            .collect()
    }
}

/// Every interior point of `shape` in C order.
pub(crate) fn interior_points(shape: &[usize]) -> Vec<Vec<isize>> {
    let mut points = vec![vec![]];
    for &n in shape {
        points = points
            .into_iter()
            .flat_map(|p| {
                (0..n as isize).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    points
}

/// Random inputs (halo `halo`, at least the kernel's radius) and parameters from `seed`,
/// outputs poisoned with NaN; runs the interpreter and returns each output's interior values.
pub(crate) fn run_random<T: Element>(
    kernel: &Kernel,
    shape: &[usize],
    halo: usize,
    seed: u64,
) -> Vec<Vec<T>> {
    assert!(halo >= radius(kernel).max() as usize);
    let mut rng = Rng::new(seed);
    let inputs: Vec<TestGrid<T>> = kernel
        .inputs()
        .map(|_| TestGrid::random(shape, halo, &mut rng))
        .collect();
    let params: Vec<T> = kernel
        .params
        .iter()
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let mut outputs: Vec<TestGrid<T>> = kernel
        .outputs()
        .map(|_| TestGrid::filled(shape, halo, T::NAN))
        .collect();
    let in_views: Vec<_> = inputs.iter().map(TestGrid::view).collect();
    let mut out_views: Vec<_> = outputs.iter_mut().map(TestGrid::view_mut).collect();
    interp::run(kernel, &in_views, &mut out_views, &params);
    drop(out_views);
    outputs.iter().map(TestGrid::interior_values).collect()
}

/// Whether two results are the same bit for bit (any NaN equals any NaN).
pub(crate) fn same_bits<T: Element>(a: &[Vec<T>], b: &[Vec<T>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter().zip(y).all(|(p, q)| {
                    (p.is_nan() && q.is_nan()) || p.to_f64().to_bits() == q.to_f64().to_bits()
                })
        })
}

/// The 3-D 7-point heat stencil of README.md's first example:
/// `out = c0 * u[0] + c1 * (u[i-1] + u[i+1] + u[j-1] + u[j+1] + u[k-1] + u[k+1])`.
pub(crate) fn seven_point(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("heat", 3, elem);
    let u = b.input("u");
    let out = b.output("out");
    let c0 = b.param("c0");
    let c1 = b.param("c1");
    let c0 = b.param_ref(c0);
    let centre = b.read(u, &[0, 0, 0]);
    let centre_term = b.mul(c0, centre);
    let mut sum: Option<ExprId> = None;
    for offset in [
        [-1, 0, 0],
        [1, 0, 0],
        [0, -1, 0],
        [0, 1, 0],
        [0, 0, -1],
        [0, 0, 1],
    ] {
        let r = b.read(u, &offset);
        sum = Some(match sum {
            None => r,
            Some(s) => b.add(s, r),
        });
    }
    let c1 = b.param_ref(c1);
    let neighbours = b.mul(c1, sum.unwrap());
    let value = b.add(centre_term, neighbours);
    b.store(out, value);
    b.finish().unwrap()
}

/// Left-folded sum of reads of input 0 at `offsets` (fresh read nodes every time).
fn sum_of_reads(b: &mut KernelBuilder, offsets: &[[i32; 3]]) -> ExprId {
    let u = crate::ir::FieldId::new(0);
    let mut sum = b.read(u, &offsets[0]);
    for o in &offsets[1..] {
        let r = b.read(u, o);
        sum = b.add(sum, r);
    }
    sum
}

/// The 27 offsets of the 3x3x3 box, in C order.
pub(crate) fn box_offsets() -> Vec<[i32; 3]> {
    let mut v = Vec::new();
    for a in -1..=1 {
        for b in -1..=1 {
            for c in -1..=1 {
                v.push([a, b, c]);
            }
        }
    }
    v
}

/// The 3-D 27-point box: `out = c * (sum of the 27 box points)`.
pub(crate) fn twenty_seven_point(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("box27", 3, elem);
    b.input("u");
    let out = b.output("out");
    let c = b.param("c");
    let sum = sum_of_reads(&mut b, &box_offsets());
    let c = b.param_ref(c);
    let value = b.mul(c, sum);
    b.store(out, value);
    b.finish().unwrap()
}

/// The 27-point box written with repeated subexpressions, as a careless generator would:
/// `out = c * S + c * S'` where `S` and `S'` are two separately built copies of the box sum,
/// `S'` with the operands of its first addition swapped.
///
/// Node count: 2 x (27 reads + 26 adds) + 2 param refs + 2 muls + 1 add = 111. After CSE:
/// 27 reads + 26 adds + 1 param + 1 mul + 1 add = 56.
pub(crate) fn twenty_seven_point_repeated(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("box27_repeated", 3, elem);
    b.input("u");
    let out = b.output("out");
    let c = b.param("c");
    let first = sum_of_reads(&mut b, &box_offsets());
    let mut swapped = box_offsets();
    swapped.swap(0, 1);
    let second = sum_of_reads(&mut b, &swapped);
    let c1 = b.param_ref(c);
    let t1 = b.mul(c1, first);
    let c2 = b.param_ref(c);
    let t2 = b.mul(c2, second);
    let value = b.add(t1, t2);
    b.store(out, value);
    b.finish().unwrap()
}

/// The 3-D star of radius `radius`: `out = w0 * u[0] + sum_r w_r * (sum of the 6 points at
/// distance r along the axes)`, with constant weights `w_r = 1 / (r + 1)`.
///
/// Flops: 1 (centre mul) + per ring 5 adds + 1 mul + 1 add into the total = 1 + 7 * radius.
pub(crate) fn star(radius: i32, elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("star", 3, elem);
    let u = b.input("u");
    let out = b.output("out");
    let w0 = b.constant(1.0);
    let centre = b.read(u, &[0, 0, 0]);
    let mut total = b.mul(w0, centre);
    for r in 1..=radius {
        let ring = sum_of_reads(
            &mut b,
            &[
                [-r, 0, 0],
                [r, 0, 0],
                [0, -r, 0],
                [0, r, 0],
                [0, 0, -r],
                [0, 0, r],
            ],
        );
        let w = b.constant(1.0 / f64::from(r + 1));
        let term = b.mul(w, ring);
        total = b.add(total, term);
    }
    b.store(out, total);
    b.finish().unwrap()
}
