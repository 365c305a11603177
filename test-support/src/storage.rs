//! Test grids as bare storage laid out by core's [`Geometry`] (no `Grid` type): every element,
//! halo and padding included, random or poisoned, and views of them for `Job`s and the
//! interpreter.

use stencil_core::{Element, FieldView, FieldViewMut, Geometry};

use crate::Rng;

/// A grid's layout and storage.
#[derive(Clone, Debug)]
pub struct TestGrid<T> {
    /// Where each point lives in `data`.
    pub geom: Geometry,
    /// Every element: interior, halo and padding.
    pub data: Vec<T>,
}

impl<T: Element> TestGrid<T> {
    /// Every element of a `shape` grid with `halo` set to `value`.
    pub fn filled(shape: &[usize], halo: usize, value: T) -> Self {
        let geom = Geometry::new(shape, halo, std::mem::size_of::<T>()).expect("a valid shape");
        TestGrid {
            geom,
            data: vec![value; geom.len],
        }
    }

    /// Every element (halo and padding included) drawn by `value`, in storage order.
    pub fn from_rng(
        shape: &[usize],
        halo: usize,
        rng: &mut Rng,
        mut value: impl FnMut(&mut Rng) -> T,
    ) -> Self {
        let mut grid = Self::filled(shape, halo, T::ZERO);
        for v in &mut grid.data {
            *v = value(rng);
        }
        grid
    }

    /// Every element (halo and padding included) uniform in `range`, then rounded to `T`.
    pub fn random(shape: &[usize], halo: usize, rng: &mut Rng, (low, high): (f64, f64)) -> Self {
        Self::from_rng(shape, halo, rng, |rng| T::from_f64(rng.uniform(low, high)))
    }

    /// Every element NaN: an output no run has written yet.
    pub fn poisoned(shape: &[usize], halo: usize) -> Self {
        Self::filled(shape, halo, T::NAN)
    }

    /// A read-only view, as a `Job` input or the interpreter's.
    pub fn view(&self) -> FieldView<'_, T> {
        FieldView {
            geom: self.geom,
            data: &self.data,
        }
    }

    /// A writable view, as a `Job` output or the interpreter's.
    pub fn view_mut(&mut self) -> FieldViewMut<'_, T> {
        FieldViewMut {
            geom: self.geom,
            data: &mut self.data,
        }
    }

    /// The value at `point` (interior or halo).
    pub fn get(&self, point: &[isize]) -> T {
        self.view().get(point)
    }

    /// The interior's values in C order.
    pub fn interior_values(&self) -> Vec<T> {
        let mut values = Vec::new();
        for_each_point(self.geom.interior(), |p| values.push(self.get(p)));
        values
    }
}

/// Calls `f` at every point of the interior `shape`, in C order.
pub fn for_each_point(shape: &[usize], mut f: impl FnMut(&[isize])) {
    if shape.contains(&0) {
        return;
    }
    let mut point = vec![0isize; shape.len()];
    loop {
        f(&point);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            point[d] += 1;
            if (point[d] as usize) < shape[d] {
                break;
            }
            point[d] = 0;
        }
    }
}
