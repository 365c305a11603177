//! Search spaces: the candidate schedules a backend offers the tuner, as plain data.
//!
//! A [`SearchSpace`] is a list of named discrete [`Dimension`]s, each a list of candidate
//! [`DimValue`]s: numbers (a block extent, a chunk size) or categories (streaming stores on or
//! off, a GPU variant). A *point* of the space is one index per dimension (`&[usize]`), so the
//! tuner's strategies work on indices and never interpret values; the backend maps a point back
//! to its schedule. Including the discrete optimisation choices as dimensions lets the search
//! explore combinations of optimisations rather than the numbers of one fixed combination
//! (GSTuner, 003_..., section 4.5).
//!
//! Legality is the backend's business (Kamil's strategy engine, 000_..., section VI): it answers
//! through [`Searchable::is_legal`], and the tuner never proposes a point it was told is illegal.
//!
//! [`SearchSpace::checksum`] is a stable FNV-1a (64-bit) hash over a canonical encoding of the
//! names and values (integers little-endian, fixed width, a tag byte per value kind, strings by
//! length then UTF-8 bytes); it is part of the tuning-cache key, so a cached answer is only
//! reused for the same candidate space.

use std::fmt;

/// One candidate value of a dimension.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum DimValue {
    /// A number (an extent, a count, a factor).
    Int(i64),
    /// An on/off choice (streaming stores, a prefetch switch).
    Flag(bool),
    /// A named category (a GPU variant, a store kind).
    Name(String),
}

impl DimValue {
    /// The number, if this is an [`Int`](DimValue::Int).
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            DimValue::Int(v) => Some(v),
            _ => None,
        }
    }

    /// `true` for values that are not numbers (flags and names): the dimension is a choice
    /// between optimisations rather than a tuning number.
    pub fn is_categorical(&self) -> bool {
        !matches!(self, DimValue::Int(_))
    }
}

impl fmt::Display for DimValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DimValue::Int(v) => write!(f, "{v}"),
            DimValue::Flag(v) => write!(f, "{}", if *v { "on" } else { "off" }),
            DimValue::Name(v) => f.write_str(v),
        }
    }
}

/// A named dimension of a search space and its candidate values, in the order neighbourhood
/// moves walk them (numbers should be sorted so that index neighbours are value neighbours).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Dimension {
    /// Name shown in reports and schedule descriptions (`tile_y`, `stores`).
    pub name: String,
    /// The candidates; never empty in a space built through [`SearchSpace::with`].
    pub values: Vec<DimValue>,
}

impl Dimension {
    /// `true` when any value is a flag or a name (see [`DimValue::is_categorical`]).
    pub fn is_categorical(&self) -> bool {
        self.values.iter().any(DimValue::is_categorical)
    }
}

/// A search space: named discrete dimensions. A point is one index per dimension.
///
/// ```
/// use stencil_core::schedule::{DimValue, SearchSpace};
/// let space = SearchSpace::new()
///     .with_ints("tile_y", [4, 8, 16])
///     .with("stores", vec![DimValue::Flag(false), DimValue::Flag(true)]);
/// assert_eq!(space.n_points(), 6);
/// assert_eq!(space.point_at(5), vec![2, 1]);
/// assert_eq!(space.describe(&[2, 1]), "tile_y=16 stores=on");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct SearchSpace {
    dims: Vec<Dimension>,
}

/// What a backend answers about points of its space: is this point a legal schedule?
///
/// The cost of a legal point is measured by the tuner (through its own measurement sources);
/// this trait only carries the constraint knowledge (parameter interactions, hardware limits).
pub trait Searchable {
    /// The candidate space.
    fn space(&self) -> &SearchSpace;
    /// Whether `point` (one index per dimension of [`space`](Searchable::space)) is a legal
    /// schedule on this backend and device.
    fn is_legal(&self, point: &[usize]) -> bool;
}

impl SearchSpace {
    /// An empty space (one point: the empty point).
    pub fn new() -> SearchSpace {
        SearchSpace::default()
    }

    /// Adds a dimension named `name` with candidates `values`.
    ///
    /// # Panics
    /// If `values` is empty or `name` is already used (both are bugs of the backend building
    /// the space).
    pub fn with(mut self, name: &str, values: Vec<DimValue>) -> SearchSpace {
        assert!(
            !values.is_empty(),
            "SearchSpace: dimension `{name}` has no values"
        );
        assert!(
            self.dims.iter().all(|d| d.name != name),
            "SearchSpace: dimension `{name}` defined twice"
        );
        self.dims.push(Dimension {
            name: name.to_string(),
            values,
        });
        self
    }

    /// Adds a numeric dimension (see [`with`](SearchSpace::with)).
    pub fn with_ints(self, name: &str, values: impl IntoIterator<Item = i64>) -> SearchSpace {
        let values = values.into_iter().map(DimValue::Int).collect();
        self.with(name, values)
    }

    /// The dimensions, in order.
    pub fn dims(&self) -> &[Dimension] {
        &self.dims
    }

    /// Number of dimensions (the length of a point).
    pub fn n_dims(&self) -> usize {
        self.dims.len()
    }

    /// The index of the dimension named `name`.
    pub fn dim_index(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d.name == name)
    }

    /// Number of points (the product of the dimension sizes), saturating at `u64::MAX`.
    pub fn n_points(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |n, d| n.saturating_mul(d.values.len() as u64))
    }

    /// Whether `point` has one in-range index per dimension.
    pub fn contains(&self, point: &[usize]) -> bool {
        point.len() == self.dims.len()
            && point
                .iter()
                .zip(&self.dims)
                .all(|(&i, d)| i < d.values.len())
    }

    /// The point with linear index `index` (the last dimension varies fastest).
    ///
    /// # Panics
    /// If `index >= n_points()`.
    pub fn point_at(&self, index: u64) -> Vec<usize> {
        assert!(
            index < self.n_points(),
            "SearchSpace::point_at({index}) out of {}",
            self.n_points()
        );
        let mut rest = index;
        let mut point = vec![0; self.dims.len()];
        for (slot, dim) in point.iter_mut().zip(&self.dims).rev() {
            let n = dim.values.len() as u64;
            *slot = (rest % n) as usize;
            rest /= n;
        }
        point
    }

    /// The value of dimension `dim` at `point`.
    ///
    /// # Panics
    /// If `point` is not [`contained`](SearchSpace::contains) in the space.
    pub fn value(&self, point: &[usize], dim: usize) -> &DimValue {
        assert!(
            self.contains(point),
            "SearchSpace::value: point {point:?} out of the space"
        );
        &self.dims[dim].values[point[dim]]
    }

    /// The value of the dimension named `name` at `point`, if there is such a dimension.
    pub fn value_of(&self, point: &[usize], name: &str) -> Option<&DimValue> {
        self.dim_index(name).map(|d| self.value(point, d))
    }

    /// `name=value` pairs separated by spaces (for reports and the cache's schedule text).
    pub fn describe(&self, point: &[usize]) -> String {
        let parts: Vec<String> = (0..self.dims.len())
            .map(|d| format!("{}={}", self.dims[d].name, self.value(point, d)))
            .collect();
        parts.join(" ")
    }

    /// Stable 64-bit checksum of names and values (see the module documentation).
    pub fn checksum(&self) -> u64 {
        let mut h = Fnv1a64::new();
        h.bytes(b"stencil-space");
        h.u64(1); // encoding version
        h.u64(self.dims.len() as u64);
        for dim in &self.dims {
            h.str(&dim.name);
            h.u64(dim.values.len() as u64);
            for value in &dim.values {
                match value {
                    DimValue::Int(v) => {
                        h.bytes(&[0]);
                        h.u64(*v as u64);
                    }
                    DimValue::Flag(v) => h.bytes(&[1, u8::from(*v)]),
                    DimValue::Name(v) => {
                        h.bytes(&[2]);
                        h.str(v);
                    }
                }
            }
        }
        h.0
    }
}

/// FNV-1a, 64-bit.
struct Fnv1a64(u64);

impl Fnv1a64 {
    fn new() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SearchSpace {
        SearchSpace::new()
            .with_ints("tile_z", [1, 2, 4])
            .with_ints("tile_y", [8, 16])
            .with(
                "variant",
                vec![
                    DimValue::Name("plain".into()),
                    DimValue::Name("streaming".into()),
                ],
            )
    }

    #[test]
    fn fnv1a_64_matches_published_test_vectors() {
        let mut h = Fnv1a64::new();
        h.bytes(b"");
        assert_eq!(h.0, 0xcbf2_9ce4_8422_2325);
        let mut h = Fnv1a64::new();
        h.bytes(b"a");
        assert_eq!(h.0, 0xaf63_dc4c_8601_ec8c);
        let mut h = Fnv1a64::new();
        h.bytes(b"foobar");
        assert_eq!(h.0, 0x8594_4171_f739_67e8);
    }

    #[test]
    fn point_at_enumerates_every_point_once_last_dimension_fastest() {
        let space = sample();
        assert_eq!(space.n_points(), 12);
        let points: Vec<Vec<usize>> = (0..12).map(|i| space.point_at(i)).collect();
        assert_eq!(points[0], vec![0, 0, 0]);
        assert_eq!(points[1], vec![0, 0, 1]);
        assert_eq!(points[2], vec![0, 1, 0]);
        assert_eq!(points[11], vec![2, 1, 1]);
        let mut sorted = points.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 12);
        assert!(points.iter().all(|p| space.contains(p)));
    }

    #[test]
    fn values_and_descriptions() {
        let space = sample();
        assert_eq!(space.value(&[2, 0, 1], 0).as_int(), Some(4));
        assert_eq!(
            space.value_of(&[2, 0, 1], "variant"),
            Some(&DimValue::Name("streaming".into()))
        );
        assert_eq!(space.value_of(&[2, 0, 1], "nope"), None);
        assert_eq!(
            space.describe(&[1, 1, 0]),
            "tile_z=2 tile_y=16 variant=plain"
        );
        assert!(!space.contains(&[3, 0, 0]));
        assert!(!space.contains(&[0, 0]));
        assert!(space.dims()[2].is_categorical());
        assert!(!space.dims()[0].is_categorical());
    }

    #[test]
    fn checksum_is_stable_and_sensitive() {
        let a = sample().checksum();
        assert_eq!(a, sample().checksum());
        let renamed = SearchSpace::new()
            .with_ints("tile_x", [1, 2, 4])
            .with_ints("tile_y", [8, 16])
            .with(
                "variant",
                vec![
                    DimValue::Name("plain".into()),
                    DimValue::Name("streaming".into()),
                ],
            );
        assert_ne!(a, renamed.checksum());
        let other_value = SearchSpace::new()
            .with_ints("tile_z", [1, 2, 8])
            .with_ints("tile_y", [8, 16])
            .with(
                "variant",
                vec![
                    DimValue::Name("plain".into()),
                    DimValue::Name("streaming".into()),
                ],
            );
        assert_ne!(a, other_value.checksum());
        let flag = SearchSpace::new().with("s", vec![DimValue::Flag(true)]);
        let int = SearchSpace::new().with("s", vec![DimValue::Int(1)]);
        assert_ne!(flag.checksum(), int.checksum());
        // Moving a value across a dimension boundary changes the encoding.
        let split_a = SearchSpace::new()
            .with_ints("a", [1, 2])
            .with_ints("b", [3]);
        let split_b = SearchSpace::new()
            .with_ints("a", [1])
            .with_ints("b", [2, 3]);
        assert_ne!(split_a.checksum(), split_b.checksum());
    }

    #[test]
    fn empty_space_has_one_empty_point() {
        let space = SearchSpace::new();
        assert_eq!(space.n_points(), 1);
        assert_eq!(space.point_at(0), Vec::<usize>::new());
        assert_eq!(space.describe(&[]), "");
    }
}
