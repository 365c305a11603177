//! [`KernelBuilder`]: the one way kernels are constructed, by the macro and at run time.
//!
//! The builder records what it is told without judging it; [`KernelBuilder::finish`] runs the
//! verifier, so a kernel that comes out of a builder is valid and the reasons a kernel is not
//! are written once, in [`verify()`](crate::verify::verify).

use super::{
    BinaryOp, CmpOp, ElemType, Expr, ExprId, Field, FieldId, Kernel, LetId, LetVar, LogicOp,
    Offset, Param, ParamId, ReduceOp, Reduction, ReductionId, Role, Stmt, UnaryOp,
};
use crate::verify::{VerifyErrors, verify};

/// Incremental construction of a [`Kernel`].
///
/// ```
/// use stencil_core::{ElemType, KernelBuilder};
/// let mut b = KernelBuilder::new("avg", 1, ElemType::F64);
/// let u = b.input("u");
/// let out = b.output("out");
/// let left = b.read(u, &[-1]);
/// let right = b.read(u, &[1]);
/// let sum = b.add(left, right);
/// let half = b.constant(0.5);
/// let value = b.mul(half, sum);
/// b.store(out, value);
/// let kernel = b.finish().unwrap();
/// assert_eq!(kernel.n_dims, 1);
/// ```
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    kernel: Kernel,
    elem: ElemType,
}

impl KernelBuilder {
    /// Starts a kernel over an `n_dims`-dimensional index space whose fields and parameters
    /// have element type `elem`. Index variables are named `i`, `j`, `k`, `l` until
    /// [`index_names`](Self::index_names) says otherwise.
    pub fn new(name: &str, n_dims: usize, elem: ElemType) -> Self {
        const DEFAULT_NAMES: [&str; 4] = ["i", "j", "k", "l"];
        let index_names = (0..n_dims)
            .map(|d| {
                DEFAULT_NAMES
                    .get(d)
                    .map_or_else(|| format!("x{d}"), |s| (*s).to_string())
            })
            .collect();
        KernelBuilder {
            kernel: Kernel {
                name: name.to_string(),
                n_dims,
                index_names,
                fields: Vec::new(),
                params: Vec::new(),
                reductions: Vec::new(),
                lets: Vec::new(),
                exprs: Vec::new(),
                body: Vec::new(),
                fma: false,
            },
            elem,
        }
    }

    /// Names the index variables (for the printer and messages only).
    pub fn index_names(&mut self, names: &[&str]) -> &mut Self {
        self.kernel.index_names = names.iter().map(|s| (*s).to_string()).collect();
        self
    }

    /// Declares an input field of the builder's element type.
    pub fn input(&mut self, name: &str) -> FieldId {
        self.field(name, Role::Input, self.elem)
    }

    /// Declares an output field of the builder's element type.
    pub fn output(&mut self, name: &str) -> FieldId {
        self.field(name, Role::Output, self.elem)
    }

    /// Declares a field with an explicit role and element type (the verifier rejects element
    /// types that differ from the rest of the kernel).
    pub fn field(&mut self, name: &str, role: Role, elem: ElemType) -> FieldId {
        self.kernel.fields.push(Field {
            name: name.to_string(),
            role,
            elem,
        });
        FieldId::new(self.kernel.fields.len() - 1)
    }

    /// Declares a scalar parameter of the builder's element type.
    pub fn param(&mut self, name: &str) -> ParamId {
        self.param_typed(name, self.elem)
    }

    /// Declares a scalar parameter with an explicit element type.
    pub fn param_typed(&mut self, name: &str, elem: ElemType) -> ParamId {
        self.kernel.params.push(Param {
            name: name.to_string(),
            elem,
        });
        ParamId::new(self.kernel.params.len() - 1)
    }

    /// Declares a reduction (a scalar result) of the builder's element type, combining its
    /// points' values by `op`; give it its value with [`reduce`](Self::reduce).
    pub fn reduction(&mut self, name: &str, op: ReduceOp) -> ReductionId {
        self.kernel.reductions.push(Reduction {
            name: name.to_string(),
            op,
            elem: self.elem,
        });
        ReductionId::new(self.kernel.reductions.len() - 1)
    }

    /// Adds an arbitrary expression node and returns its id.
    pub fn expr(&mut self, expr: Expr) -> ExprId {
        self.kernel.exprs.push(expr);
        ExprId::new(self.kernel.exprs.len() - 1)
    }

    /// A constant.
    pub fn constant(&mut self, value: f64) -> ExprId {
        self.expr(Expr::Const(value))
    }

    /// The value of a parameter.
    pub fn param_ref(&mut self, param: ParamId) -> ExprId {
        self.expr(Expr::Param(param))
    }

    /// The current point's index along dimension `dim`, as a value ([`Expr::Index`]; the
    /// verifier rejects `dim >= n_dims`).
    pub fn index(&mut self, dim: usize) -> ExprId {
        self.expr(Expr::Index(dim))
    }

    /// The number of the step being computed, as a value ([`Expr::Step`]).
    pub fn step(&mut self) -> ExprId {
        self.expr(Expr::Step)
    }

    /// A read of `field` at `offset` (one entry per dimension; missing entries are zero).
    ///
    /// # Panics
    /// If `offset` has more than [`MAX_DIMS`](super::MAX_DIMS) entries.
    pub fn read(&mut self, field: FieldId, offset: &[i32]) -> ExprId {
        self.expr(Expr::Read {
            field,
            offset: Offset::from_slice(offset),
        })
    }

    /// The value of a `let` temporary.
    pub fn let_ref(&mut self, var: LetId) -> ExprId {
        self.expr(Expr::Let(var))
    }

    /// A unary operation.
    pub fn unary(&mut self, op: UnaryOp, arg: ExprId) -> ExprId {
        self.expr(Expr::Unary { op, arg })
    }

    /// A binary operation.
    pub fn binary(&mut self, op: BinaryOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.expr(Expr::Binary { op, lhs, rhs })
    }

    /// `lhs + rhs`
    pub fn add(&mut self, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `lhs - rhs`
    pub fn sub(&mut self, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.binary(BinaryOp::Sub, lhs, rhs)
    }

    /// `lhs * rhs`
    pub fn mul(&mut self, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.binary(BinaryOp::Mul, lhs, rhs)
    }

    /// `lhs / rhs`
    pub fn div(&mut self, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.binary(BinaryOp::Div, lhs, rhs)
    }

    /// `-arg`
    pub fn neg(&mut self, arg: ExprId) -> ExprId {
        self.unary(UnaryOp::Neg, arg)
    }

    /// A comparison.
    pub fn compare(&mut self, op: CmpOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.expr(Expr::Compare { op, lhs, rhs })
    }

    /// A boolean connective.
    pub fn logic(&mut self, op: LogicOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        self.expr(Expr::Logic { op, lhs, rhs })
    }

    /// Boolean negation.
    pub fn not(&mut self, arg: ExprId) -> ExprId {
        self.expr(Expr::Not(arg))
    }

    /// `if cond { then } else { otherwise }`.
    pub fn select(&mut self, cond: ExprId, then: ExprId, otherwise: ExprId) -> ExprId {
        self.expr(Expr::Select {
            cond,
            then,
            otherwise,
        })
    }

    /// Defines a temporary `name = value` (a statement) and returns it.
    pub fn let_(&mut self, name: &str, value: ExprId) -> LetId {
        self.kernel.lets.push(LetVar {
            name: name.to_string(),
        });
        let var = LetId::new(self.kernel.lets.len() - 1);
        self.kernel.body.push(Stmt::Let { var, value });
        var
    }

    /// Writes `value` to output `field` at offset zero (a statement).
    pub fn store(&mut self, field: FieldId, value: ExprId) {
        self.kernel.body.push(Stmt::Store { field, value });
    }

    /// Contributes `value` at every point to `reduction` (a statement; once per reduction).
    pub fn reduce(&mut self, reduction: ReductionId, value: ExprId) {
        self.kernel.body.push(Stmt::Reduce { reduction, value });
    }

    /// Asks for fused multiply-add (`#[fma]` in the kernel language): when the kernel is
    /// finished, every addition of a product is contracted into an [`Expr::Fma`] node by
    /// [`passes::contract`](mod@crate::passes::contract) (one rounding instead of two; see there
    /// for the rule). Off by default.
    pub fn fma(&mut self, on: bool) -> &mut Self {
        self.kernel.fma = on;
        self
    }

    /// `a * b + c` rounded once; valid only in a kernel with [`fma`](Self::fma) on (the
    /// verifier rejects it elsewhere).
    pub fn fma_node(&mut self, a: ExprId, b: ExprId, c: ExprId) -> ExprId {
        self.expr(Expr::Fma { a, b, c })
    }

    /// The kernel as built so far, unverified (for tools that want to show a broken kernel).
    pub fn peek(&self) -> &Kernel {
        &self.kernel
    }

    /// Verifies and returns the kernel, or every reason it is invalid; a kernel with
    /// [`fma`](Self::fma) on is contracted ([`passes::contract`](mod@crate::passes::contract))
    /// once it verifies.
    pub fn finish(self) -> Result<Kernel, VerifyErrors> {
        verify(&self.kernel)?;
        if self.kernel.fma {
            let contracted = crate::passes::contract(&self.kernel);
            verify(&contracted)?;
            return Ok(contracted);
        }
        Ok(self.kernel)
    }
}
