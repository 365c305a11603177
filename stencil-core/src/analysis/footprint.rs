//! Which points of which inputs a kernel reads.
//!
//! Counts live reads only (see [`liveness`](super::liveness)): a read no store depends on does
//! not belong to the stencil's shape. Assumes a verified kernel.

use std::collections::BTreeSet;

use super::live::liveness;
use crate::ir::{Expr, FieldId, Kernel, Offset, Role};

/// The distinct offsets one input is read at.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InputFootprint {
    /// The input field.
    pub field: FieldId,
    /// Distinct offsets, sorted ascending (lexicographically, outermost dimension first).
    pub offsets: Vec<Offset>,
}

/// The read footprint of a kernel: one entry per input field, in declaration order, including
/// inputs that no store reads (their offset list is empty).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Footprint {
    /// Per input, in declaration order.
    pub inputs: Vec<InputFootprint>,
}

impl Footprint {
    /// The offsets `field` is read at (empty for an unknown or unread field).
    pub fn offsets(&self, field: FieldId) -> &[Offset] {
        self.inputs
            .iter()
            .find(|f| f.field == field)
            .map_or(&[], |f| f.offsets.as_slice())
    }

    /// Number of distinct `(input, offset)` pairs read.
    pub fn n_points(&self) -> usize {
        self.inputs.iter().map(|f| f.offsets.len()).sum()
    }

    /// Number of inputs read at least once.
    pub fn n_inputs_read(&self) -> usize {
        self.inputs.iter().filter(|f| !f.offsets.is_empty()).count()
    }

    /// The distinct offsets read from any input, sorted ascending (the stencil's shape).
    pub fn union(&self) -> Vec<Offset> {
        let all: BTreeSet<Offset> = self
            .inputs
            .iter()
            .flat_map(|f| f.offsets.iter().copied())
            .collect();
        all.into_iter().collect()
    }

    /// Every `(input, offset)` pair read, inputs in declaration order, offsets ascending.
    pub fn points(&self) -> impl Iterator<Item = (FieldId, Offset)> + '_ {
        self.inputs
            .iter()
            .flat_map(|f| f.offsets.iter().map(move |&o| (f.field, o)))
    }
}

/// The outputs `kernel` reads (at offset zero: in-place updates), in declaration order, whether
/// or not a statement uses the read.
pub fn in_place_outputs(kernel: &Kernel) -> Vec<FieldId> {
    let mut read = vec![false; kernel.fields.len()];
    for e in &kernel.exprs {
        if let Expr::Read { field, .. } = *e
            && kernel.fields.get(field.index()).map(|f| f.role) == Some(Role::Output)
        {
            read[field.index()] = true;
        }
    }
    (0..kernel.fields.len())
        .filter(|&i| read[i])
        .map(FieldId::new)
        .collect()
}

/// The live read footprint of `kernel`.
pub fn footprint(kernel: &Kernel) -> Footprint {
    let live = liveness(kernel);
    let mut sets: Vec<(FieldId, BTreeSet<Offset>)> = kernel
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.role == Role::Input)
        .map(|(i, _)| (FieldId::new(i), BTreeSet::new()))
        .collect();
    for (expr, _) in kernel.exprs.iter().zip(&live.exprs).filter(|(_, l)| **l) {
        if let Expr::Read { field, offset } = *expr
            && let Some((_, set)) = sets.iter_mut().find(|(f, _)| *f == field)
        {
            set.insert(offset);
        }
    }
    Footprint {
        inputs: sets
            .into_iter()
            .map(|(field, set)| InputFootprint {
                field,
                offsets: set.into_iter().collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ElemType, KernelBuilder};

    #[test]
    fn repeated_and_dead_reads_are_not_counted_and_offsets_are_sorted() {
        let mut b = KernelBuilder::new("k", 2, ElemType::F64);
        let u = b.input("u");
        let unread = b.input("unread");
        let v = b.input("v");
        let out = b.output("out");
        let a = b.read(u, &[0, 1]);
        let a_again = b.read(u, &[0, 1]);
        let c = b.read(u, &[-1, 0]);
        let _dead = b.read(v, &[3, 3]);
        let d = b.read(v, &[0, 0]);
        let s1 = b.add(a, a_again);
        let s2 = b.add(s1, c);
        let s3 = b.mul(s2, d);
        b.store(out, s3);
        let k = b.finish().unwrap();
        let fp = footprint(&k);
        assert_eq!(fp.inputs.len(), 3);
        assert_eq!(
            fp.offsets(u),
            &[Offset::from_slice(&[-1, 0]), Offset::from_slice(&[0, 1])]
        );
        assert!(fp.offsets(unread).is_empty());
        assert_eq!(fp.offsets(v), &[Offset::ZERO]);
        assert_eq!(fp.n_points(), 3);
        assert_eq!(fp.n_inputs_read(), 2);
        assert_eq!(fp.union().len(), 3);
    }
}
