//! Filling a grid's halo from its interior and its per-face [`Boundary`] conditions.
//!
//! [`fill_halo`] works on a dimension-erased [`FieldViewMut`], so it serves every dimension
//! count and any storage laid out by [`Geometry`]. It walks the halo row by row (runs along
//! the unit-stride dimension), never the whole storage: its cost is proportional to the
//! number of halo points.
//!
//! The fill order that makes edges and corners consistent is documented on [`fill_halo`].

use crate::element::Element;
use crate::ir::MAX_DIMS;
use crate::view::{FieldViewMut, Geometry};

use super::boundary::{Boundary, HaloSource, Side};

/// Fills the halo of `view` per `faces[d][side.index()]`, the condition of each face of each
/// dimension. Padding elements are never written; interior elements are only read.
///
/// # Fill order (edges and corners)
///
/// Dimensions are filled one after the other, dimension 0 first. The pass of dimension `d`
/// writes the halo slabs of `d` over the halo-*included* extent of every dimension before `d`
/// and the interior extent of every dimension after `d`, reading (for copying conditions)
/// the slab of interior coordinates of `d` over the same extents. Every halo point is thus
/// written exactly once, by the pass of the *last* dimension in which it lies outside the
/// interior, after the points it reads have been written. The resulting rule, for a halo
/// point `p`, with `e` the last dimension in which `p` is outside the interior and `s` that
/// side:
///
/// - if face `(e, s)` is `Dirichlet(v)`, the value is `v`;
/// - if it is `UserManaged`, the point is left untouched;
/// - otherwise the value is that of the point `p'` equal to `p` with coordinate `e` mapped
///   into the interior by the face's condition; `p'` is an interior point or a halo point
///   whose last outside dimension is before `e`, resolved by the same rule.
///
/// Consequences: conditions that copy (periodic, zero-gradient, reflect) compose dimension
/// by dimension, so a corner of a fully periodic grid holds the wrapped interior corner and a
/// zero-gradient corner holds the nearest interior corner; where a Dirichlet face meets any
/// other face, the condition of the later dimension decides the edge (a Dirichlet face of the
/// later dimension writes its value there; a copying face of the later dimension copies from
/// the earlier dimension's halo, which holds the Dirichlet value).
///
/// # Panics
/// If `faces.len()` differs from the view's dimension count or the view's data is shorter
/// than its geometry's storage length.
pub fn fill_halo<T: Element>(view: &mut FieldViewMut<'_, T>, faces: &[[Boundary<T>; 2]]) {
    let geom = &view.geom;
    assert_eq!(
        faces.len(),
        geom.n_dims,
        "fill_halo: one pair of faces per dimension"
    );
    assert!(
        view.data.len() >= geom.len,
        "fill_halo: storage shorter than its geometry"
    );
    if geom.halo == 0 {
        return;
    }
    let h = geom.halo as isize;
    fill_halo_planes(view, faces, -h..geom.shape[0] as isize + h);
}

/// The part of [`fill_halo`] that writes halo points whose coordinate along dimension 0 (the
/// outermost) lies in `planes` (halo coordinates included): the same values, in the same
/// order, as a whole fill writes them there, provided every point they are copied from is
/// final. Those are points whose dimension-0 coordinate is in `planes` (written by this call
/// first where they are halo points) and, for halo planes of dimension 0, the interior
/// planes their face condition maps them to: for a halo plane `c`, the plane
/// `faces[0][side].source(c, n)`, which must hold its final values and its own halo. So a
/// time loop that computes an outermost-dimension slab of the interior at a time can fill
/// the slab's halo right away, and each halo plane of dimension 0 once its source plane is
/// done, and end with the halo a whole fill gives. In one dimension, `planes` are points.
///
/// # Panics
/// As [`fill_halo`].
pub fn fill_halo_planes<T: Element>(
    view: &mut FieldViewMut<'_, T>,
    faces: &[[Boundary<T>; 2]],
    planes: std::ops::Range<isize>,
) {
    let geom = &view.geom;
    assert_eq!(
        faces.len(),
        geom.n_dims,
        "fill_halo: one pair of faces per dimension"
    );
    assert!(
        view.data.len() >= geom.len,
        "fill_halo: storage shorter than its geometry"
    );
    if geom.halo == 0 {
        return;
    }
    let h = geom.halo as isize;
    let planes = planes.start.max(-h)..planes.end.min(geom.shape[0] as isize + h);
    if planes.is_empty() {
        return;
    }
    let last = geom.n_dims - 1;
    for (d, pair) in faces[..last].iter().enumerate() {
        fill_outer_dimension(geom, view.data, d, pair, &planes);
    }
    fill_unit_stride_dimension(geom, view.data, &faces[last], &planes);
}

/// The pass of dimension `d`, which is not the unit-stride one: whole interior rows are
/// written (filled with a value or copied from an interior row of `d`).
fn fill_outer_dimension<T: Element>(
    geom: &Geometry,
    data: &mut [T],
    d: usize,
    faces: &[Boundary<T>; 2],
    planes: &std::ops::Range<isize>,
) {
    let last = geom.n_dims - 1;
    let h = geom.halo as isize;
    let row_len = geom.shape[last];
    let n_d = geom.shape[d];
    let stride_d = geom.strides[d] as isize;
    let mut lo = [0isize; MAX_DIMS];
    let mut hi = [0isize; MAX_DIMS];
    for k in 0..last {
        let n = geom.shape[k] as isize;
        (lo[k], hi[k]) = if k < d { (-h, n + h) } else { (0, n) };
    }
    for side in Side::BOTH {
        let boundary = faces[side.index()];
        if boundary == Boundary::UserManaged {
            continue;
        }
        (lo[d], hi[d]) = match side {
            Side::Low => (-h, 0),
            Side::High => (n_d as isize, n_d as isize + h),
        };
        let (mut lo, mut hi) = (lo, hi);
        (lo[0], hi[0]) = (lo[0].max(planes.start), hi[0].min(planes.end));
        for_each_point(&lo[..last], &hi[..last], |p| {
            let dst = row_start(geom, p);
            match boundary.source(p[d], n_d) {
                HaloSource::Value(v) => data[dst..dst + row_len].fill(v),
                HaloSource::Interior(q) => {
                    let src = (dst as isize + (q as isize - p[d]) * stride_d) as usize;
                    data.copy_within(src..src + row_len, dst);
                }
                HaloSource::Untouched => {}
            }
        });
    }
}

/// The pass of the unit-stride dimension: the halo ends of every row, halo rows included.
fn fill_unit_stride_dimension<T: Element>(
    geom: &Geometry,
    data: &mut [T],
    faces: &[Boundary<T>; 2],
    planes: &std::ops::Range<isize>,
) {
    let last = geom.n_dims - 1;
    let h = geom.halo as isize;
    let n = geom.shape[last];
    let n_signed = n as isize;
    // Positions within the halo-included row (`0` is halo coordinate `-h`): the halo points
    // that get a value, and those that copy an interior point (destination, source).
    let mut values: Vec<(usize, T)> = Vec::new();
    let mut copies: Vec<(usize, usize)> = Vec::new();
    for (side, range) in [(Side::Low, -h..0), (Side::High, n_signed..n_signed + h)] {
        let boundary = faces[side.index()];
        for c in range {
            // In one dimension the unit-stride dimension is dimension 0: only its points in
            // `planes` are written.
            if last == 0 && !planes.contains(&c) {
                continue;
            }
            let at = (c + h) as usize;
            match boundary.source(c, n) {
                HaloSource::Value(v) => values.push((at, v)),
                HaloSource::Interior(q) => copies.push((at, q + geom.halo)),
                HaloSource::Untouched => {}
            }
        }
    }
    if values.is_empty() && copies.is_empty() {
        return;
    }
    let full_row = n + 2 * geom.halo;
    let mut lo = [0isize; MAX_DIMS];
    let mut hi = [0isize; MAX_DIMS];
    for k in 0..last {
        (lo[k], hi[k]) = (-h, geom.shape[k] as isize + h);
    }
    if last > 0 {
        (lo[0], hi[0]) = (planes.start, planes.end);
    }
    for_each_point(&lo[..last], &hi[..last], |p| {
        let first = row_start(geom, p) - geom.halo;
        let row = &mut data[first..first + full_row];
        for &(at, v) in &values {
            row[at] = v;
        }
        for &(at, from) in &copies {
            row[at] = row[from];
        }
    });
}

/// Storage index of interior coordinate 0 of the unit-stride dimension in the row at
/// `outer` (coordinates of the dimensions before the last).
#[inline]
fn row_start(geom: &Geometry, outer: &[isize]) -> usize {
    let mut idx = geom.origin as isize;
    for (p, s) in outer.iter().zip(geom.strides) {
        idx += p * s as isize;
    }
    idx as usize
}

/// Calls `f` with every point of the box `lo[k]..hi[k]` in C order (once with the empty
/// point when the box has no dimensions; never when some range is empty).
fn for_each_point(lo: &[isize], hi: &[isize], mut f: impl FnMut(&[isize])) {
    if lo.iter().zip(hi).any(|(l, h)| l >= h) {
        return;
    }
    let n = lo.len();
    let mut p = [0isize; MAX_DIMS];
    p[..n].copy_from_slice(lo);
    loop {
        f(&p[..n]);
        let mut k = n;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            p[k] += 1;
            if p[k] < hi[k] {
                break;
            }
            p[k] = lo[k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_walk_is_c_order_and_handles_empty_cases() {
        let mut seen = Vec::new();
        for_each_point(&[-1, 2], &[1, 4], |p| seen.push((p[0], p[1])));
        assert_eq!(seen, [(-1, 2), (-1, 3), (0, 2), (0, 3)]);
        let mut count = 0;
        for_each_point(&[], &[], |p| {
            assert!(p.is_empty());
            count += 1;
        });
        assert_eq!(count, 1);
        for_each_point(&[0, 3], &[5, 3], |_| panic!("empty box visited"));
    }
}
