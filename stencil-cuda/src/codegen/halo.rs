//! Halo filling on the device: a [`HaloPlan`] lists, for one grid geometry and its boundary
//! conditions, which halo element is a copy of which interior element and which holds a
//! constant; a generated gather kernel applies it in one launch.
//!
//! The plan is derived from core's own [`fill_halo`] (the one definition of the boundary
//! semantics, edges and corners included), run once on the host over storage *indices*
//! instead of values: every interior element holds its own index, so after `fill_halo` each
//! halo element holds the index of the interior element it copies (copies of copies resolve
//! to interior elements, so the gather reads only the interior and is free of races); a
//! Dirichlet face writes a marker, and a second pass over values gives the constants. Faces
//! left `UserManaged` keep a "never written" marker and are not in the plan.

use stencil_core::grid::{Boundary, fill_halo};
use stencil_core::{ElemType, Element, Error, ErrorKind, FieldViewMut, Geometry, Result};

use crate::ptx::{
    Address, Axis, Cmp, EntryBuilder, Guard, Inst, IntOp, Module, Operand, Param, RegClass, Space,
    Special, Type,
};

const UNWRITTEN: f64 = -1.0;
const CONSTANT: f64 = -2.0;

/// Which halo elements copy which interior elements, and which hold constants (storage
/// indices of one grid).
#[derive(Clone, PartialEq, Debug)]
pub struct HaloPlan<T> {
    /// Halo elements that copy an interior element...
    pub copy_dst: Vec<u32>,
    /// ...and the interior element each copies.
    pub copy_src: Vec<u32>,
    /// Halo elements holding a constant...
    pub const_dst: Vec<u32>,
    /// ...and the constant.
    pub const_val: Vec<T>,
}

impl<T: Element> HaloPlan<T> {
    /// The plan of an unpadded grid of interior `shape`, halo width `halo` and face
    /// conditions `faces` (the layout of [`Geometry::new`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] for an invalid shape or storage of 2^32 elements or more.
    pub fn new<const D: usize>(
        shape: [usize; D],
        halo: usize,
        faces: &[[Boundary<T>; 2]; D],
    ) -> Result<Self> {
        Self::from_geometry(Geometry::new(&shape, halo, T::ELEM.size_bytes())?, faces)
    }

    /// The plan of a grid laid out by `geom` (padded or not) with face conditions `faces`
    /// (one pair per dimension): storage indices of that very layout.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] for storage of 2^32 elements or more, or faces of another
    /// dimension count.
    pub fn from_geometry(geom: Geometry, faces: &[[Boundary<T>; 2]]) -> Result<Self> {
        let shape = geom.interior().to_vec();
        let dims = shape.len();
        if faces.len() != dims {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("a {dims}-D grid with {} pairs of faces", faces.len()),
            ));
        }
        if geom.len >= u32::MAX as usize {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("grid {shape:?}: device halo plans index storage with 32 bits"),
            ));
        }
        let mut index = vec![UNWRITTEN; geom.len];
        let mut point = vec![0isize; dims];
        'points: loop {
            let i = geom.index(&point);
            index[i] = i as f64;
            for d in (0..dims).rev() {
                point[d] += 1;
                if (point[d] as usize) < shape[d] {
                    continue 'points;
                }
                point[d] = 0;
            }
            break;
        }
        let index_faces: Vec<[Boundary<f64>; 2]> = faces
            .iter()
            .map(|pair| {
                pair.map(|b| match b {
                    Boundary::Dirichlet(_) => Boundary::Dirichlet(CONSTANT),
                    Boundary::Periodic => Boundary::Periodic,
                    Boundary::ZeroGradient => Boundary::ZeroGradient,
                    Boundary::Reflect => Boundary::Reflect,
                    Boundary::UserManaged => Boundary::UserManaged,
                })
            })
            .collect();
        fill_halo(
            &mut FieldViewMut {
                geom,
                data: &mut index,
            },
            &index_faces,
        );
        let mut values = vec![T::ZERO; geom.len];
        fill_halo(
            &mut FieldViewMut {
                geom,
                data: &mut values,
            },
            faces,
        );
        let mut plan = HaloPlan {
            copy_dst: Vec::new(),
            copy_src: Vec::new(),
            const_dst: Vec::new(),
            const_val: Vec::new(),
        };
        for (i, &v) in index.iter().enumerate() {
            if v == CONSTANT {
                plan.const_dst.push(i as u32);
                plan.const_val.push(values[i]);
            } else if v >= 0.0 && v as usize != i {
                plan.copy_dst.push(i as u32);
                plan.copy_src.push(v as u32);
            }
        }
        Ok(plan)
    }
}

/// Name of the gather entry for `elem`.
pub fn gather_entry_name(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F32 => "stencil_halo_gather_f32",
        ElemType::F64 => "stencil_halo_gather_f64",
    }
}

/// The gather kernel: thread `i < n_copy` sets `data[copy_dst[i]] = data[copy_src[i]]`; thread
/// `n_copy + j` with `j < n_const` sets `data[const_dst[j]] = const_val[j]`. Parameters, in
/// order: `data, copy_dst, copy_src, n_copy (u32), const_dst, const_val, n_const (u32)`.
pub fn generate_gather(elem: ElemType, arch: u32) -> Module {
    let name = gather_entry_name(elem);
    let (fty, fclass) = match elem {
        ElemType::F32 => (Type::F32, RegClass::F32),
        ElemType::F64 => (Type::F64, RegClass::F64),
    };
    let esz = elem.size_bytes() as i64;
    let mut b = EntryBuilder::new(name);
    let names = [
        ("data", Type::U64),
        ("copy_dst", Type::U64),
        ("copy_src", Type::U64),
        ("n_copy", Type::U32),
        ("const_dst", Type::U64),
        ("const_val", Type::U64),
        ("n_const", Type::U32),
    ];
    let mut regs = Vec::new();
    for (n, ty) in names {
        let p = b.param(Param {
            name: format!("{name}_{n}"),
            ty,
        });
        let class = if ty == Type::U32 {
            RegClass::B32
        } else {
            RegClass::B64
        };
        let raw = b.reg(class);
        b.push(Inst::LdParam {
            ty,
            dst: raw,
            param: p,
        });
        if ty == Type::U64 {
            let g = b.reg(RegClass::B64);
            b.push(Inst::CvtaGlobal { dst: g, src: raw });
            regs.push(g);
        } else {
            regs.push(raw);
        }
    }
    let [
        data,
        copy_dst,
        copy_src,
        n_copy,
        const_dst,
        const_val,
        n_const,
    ] = regs.try_into().expect("seven parameters");
    let special = |b: &mut EntryBuilder, s: Special| {
        let r = b.reg(RegClass::B32);
        b.push(Inst::Mov {
            ty: Type::U32,
            dst: r,
            src: Operand::Special(s),
        });
        r
    };
    let ctaid = special(&mut b, Special::Ctaid(Axis::X));
    let ntid = special(&mut b, Special::Ntid(Axis::X));
    let tid = special(&mut b, Special::Tid(Axis::X));
    let i = b.reg(RegClass::B32);
    b.push(Inst::MadLo {
        ty: Type::U32,
        dst: i,
        a: ctaid.into(),
        b: ntid.into(),
        c: tid.into(),
    });
    let constants = b.label();
    let end = b.label();
    let is_const = b.reg(RegClass::Pred);
    b.push(Inst::Setp {
        cmp: Cmp::Ge,
        ty: Type::U32,
        dst: is_const,
        a: i.into(),
        b: n_copy.into(),
    });
    b.guarded(
        Guard {
            pred: is_const,
            negated: false,
        },
        Inst::Bra {
            target: constants,
            uniform: false,
        },
    );
    // Element i of a u32 array, as a byte address into data.
    let element_of = |b: &mut EntryBuilder, array, index| {
        let at = b.reg(RegClass::B64);
        b.push(Inst::MadWide {
            ty: Type::U32,
            dst: at,
            a: Operand::Reg(index),
            b: Operand::Int(4),
            c: Operand::Reg(array),
        });
        let idx = b.reg(RegClass::B32);
        b.push(Inst::Ld {
            space: Space::Global,
            ty: Type::U32,
            dst: idx,
            addr: Address {
                base: at,
                offset: 0,
            },
        });
        let addr = b.reg(RegClass::B64);
        b.push(Inst::MadWide {
            ty: Type::U32,
            dst: addr,
            a: Operand::Reg(idx),
            b: Operand::Int(esz),
            c: Operand::Reg(data),
        });
        addr
    };
    let dst = element_of(&mut b, copy_dst, i);
    let src = element_of(&mut b, copy_src, i);
    let v = b.reg(fclass);
    b.push(Inst::Ld {
        space: Space::Global,
        ty: fty,
        dst: v,
        addr: Address {
            base: src,
            offset: 0,
        },
    });
    b.push(Inst::St {
        space: Space::Global,
        ty: fty,
        addr: Address {
            base: dst,
            offset: 0,
        },
        src: v,
    });
    b.push(Inst::Ret);
    b.place(constants);
    let j = b.reg(RegClass::B32);
    b.push(Inst::Int {
        op: IntOp::Sub,
        ty: Type::U32,
        dst: j,
        a: i.into(),
        b: n_copy.into(),
    });
    let past = b.reg(RegClass::Pred);
    b.push(Inst::Setp {
        cmp: Cmp::Ge,
        ty: Type::U32,
        dst: past,
        a: j.into(),
        b: n_const.into(),
    });
    b.guarded(
        Guard {
            pred: past,
            negated: false,
        },
        Inst::Bra {
            target: end,
            uniform: false,
        },
    );
    let dst = element_of(&mut b, const_dst, j);
    let val_at = b.reg(RegClass::B64);
    b.push(Inst::MadWide {
        ty: Type::U32,
        dst: val_at,
        a: j.into(),
        b: Operand::Int(esz),
        c: const_val.into(),
    });
    let c = b.reg(fclass);
    b.push(Inst::Ld {
        space: Space::Global,
        ty: fty,
        dst: c,
        addr: Address {
            base: val_at,
            offset: 0,
        },
    });
    b.push(Inst::St {
        space: Space::Global,
        ty: fty,
        addr: Address {
            base: dst,
            offset: 0,
        },
        src: c,
    });
    b.place(end);
    b.push(Inst::Ret);
    Module {
        version: (8, 0),
        target: arch.clamp(70, 90),
        entries: vec![b.finish()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::{Memory, Module as EmuModule, ParamValue, launch};
    use stencil_core::grid::{Grid, Side};
    use stencil_core::rng::Rng;

    fn u32_array(memory: &mut Memory, values: &[u32]) -> u64 {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = memory.alloc(bytes.len().max(4));
        memory.write(a, &bytes).expect("write");
        a
    }

    /// Fills the halo of `grid` in the emulator from a garbage halo, and compares with the
    /// host's `update_halo` on a copy.
    fn check<const D: usize>(mut grid: Grid<f64, D>, faces: [[Boundary<f64>; 2]; D]) {
        for (d, pair) in faces.iter().enumerate() {
            grid.set_face_boundary(d, Side::Low, pair[0]).unwrap();
            grid.set_face_boundary(d, Side::High, pair[1]).unwrap();
        }
        let mut rng = Rng::new(7);
        for v in grid.as_mut_slice() {
            *v = rng.uniform(-1.0, 1.0);
        }
        let garbage: Vec<f64> = grid.as_slice().to_vec();
        grid.update_halo();
        let expected = grid.as_slice().to_vec();
        // The plan of the grid's own layout, padded rows included.
        let plan = HaloPlan::from_geometry(*grid.geometry(), grid.boundaries()).unwrap();
        assert!(!plan.copy_dst.is_empty());
        let module = EmuModule::parse(&generate_gather(ElemType::F64, 80).to_string()).unwrap();
        let mut memory = Memory::new();
        let data = memory.alloc_f64s(&garbage);
        let params = [
            ParamValue::U64(data),
            ParamValue::U64(u32_array(&mut memory, &plan.copy_dst)),
            ParamValue::U64(u32_array(&mut memory, &plan.copy_src)),
            ParamValue::U32(plan.copy_dst.len() as u32),
            ParamValue::U64(u32_array(&mut memory, &plan.const_dst)),
            ParamValue::U64(memory.alloc_f64s(&plan.const_val)),
            ParamValue::U32(plan.const_dst.len() as u32),
        ];
        let total = (plan.copy_dst.len() + plan.const_dst.len()) as u32;
        launch(
            &module,
            gather_entry_name(ElemType::F64),
            [total.div_ceil(64), 1, 1],
            [64, 1, 1],
            &params,
            &mut memory,
        )
        .unwrap();
        let got = memory.read_f64s(data, garbage.len()).unwrap();
        let halo_changed = expected
            .iter()
            .zip(&garbage)
            .filter(|(a, b)| a != b)
            .count();
        assert!(halo_changed > 0);
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g.to_bits(), e.to_bits(), "storage element {i}");
        }
    }

    #[test]
    fn gather_reproduces_the_host_halo_fill_in_2d() {
        let g = Grid::<f64, 2>::with_halo([5, 7], 2).unwrap();
        check(
            g,
            [
                [Boundary::Periodic, Boundary::Dirichlet(3.5)],
                [Boundary::Reflect, Boundary::ZeroGradient],
            ],
        );
    }

    #[test]
    fn gather_reproduces_the_host_halo_fill_of_padded_grids() {
        // Rows padded by one and by three cache lines: the halo elements of a padded layout
        // are not where the unpadded layout has them.
        let g = Grid::<f64, 3>::with_padding([3, 4, 6], 1, 1).unwrap();
        check(
            g,
            [
                [Boundary::Dirichlet(-1.25), Boundary::Periodic],
                [Boundary::Reflect, Boundary::Periodic],
                [Boundary::ZeroGradient, Boundary::Reflect],
            ],
        );
        let g = Grid::<f64, 2>::with_padding([5, 7], 2, 3).unwrap();
        check(
            g,
            [
                [Boundary::Periodic, Boundary::Dirichlet(3.5)],
                [Boundary::Periodic, Boundary::ZeroGradient],
            ],
        );
    }

    #[test]
    fn gather_reproduces_the_host_halo_fill_in_3d() {
        let g = Grid::<f64, 3>::with_halo([3, 4, 6], 1).unwrap();
        check(
            g,
            [
                [Boundary::Dirichlet(-1.25), Boundary::Periodic],
                [Boundary::Periodic, Boundary::Periodic],
                [Boundary::ZeroGradient, Boundary::Reflect],
            ],
        );
    }
}
