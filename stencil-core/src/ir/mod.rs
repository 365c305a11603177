//! The stencil IR: the one representation every part of the workspace reads.
//!
//! A [`Kernel`] is a pure function from input fields and scalar parameters to output fields,
//! evaluated independently at every interior point of an `n_dims`-dimensional index space.
//! Inputs are read at constant offsets from the current point; outputs are written at offset
//! zero, exactly once each, and may be read at offset zero only (an in-place update such as
//! `y = a * x + y`: the read gives the value before this point's write). Nodes are plain values (`Clone + PartialEq + Debug`) held in arenas
//! and refer to each other by typed indices ([`FieldId`], [`ParamId`], [`LetId`], [`ExprId`]),
//! never by name.
//!
//! Invariants of a *verified* kernel (see [`verify()`](crate::verify::verify)):
//! - every id is in range; an expression refers only to expressions with smaller ids (the arena
//!   is in topological order, so a forward walk evaluates it);
//! - a `let` is referenced only by statements after the one that defines it;
//! - reads name inputs (or outputs at offset zero), stores name outputs, each output is stored
//!   exactly once, each reduction given a value exactly once;
//! - offsets are zero beyond `n_dims` and within [`MAX_RADIUS`];
//! - all fields and parameters share one element type.
//!
//! Kernels are built with [`KernelBuilder`], by the `stencil!` macro at expansion time and by
//! users at run time alike.

mod builder;

pub use builder::KernelBuilder;

use crate::element::ElemType;

/// Largest number of dimensions a kernel may have.
pub const MAX_DIMS: usize = 4;

/// Largest absolute offset a kernel may read at, in any dimension.
pub const MAX_RADIUS: u32 = 8;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            /// The id of the `index`-th element of its arena.
            ///
            /// # Panics
            /// If `index` does not fit in `u32` (an arena that large is a bug).
            pub fn new(index: usize) -> Self {
                $name(u32::try_from(index).expect(concat!(stringify!($name), " overflow")))
            }

            /// Position in its arena.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index of a field in [`Kernel::fields`].
    FieldId
);
id_type!(
    /// Index of a scalar parameter in [`Kernel::params`].
    ParamId
);
id_type!(
    /// Index of a `let` temporary in [`Kernel::lets`].
    LetId
);
id_type!(
    /// Index of an expression in [`Kernel::exprs`].
    ExprId
);
id_type!(
    /// Index of a reduction in [`Kernel::reductions`].
    ReductionId
);

/// Whether a field is read or written by the kernel.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Role {
    /// Read at constant offsets; never written.
    Input,
    /// Written at offset zero, exactly once per point; read, if at all, only at offset zero
    /// (the value before the point's write: an in-place update).
    Output,
}

/// A grid argument of the kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Field {
    /// Name as written by the user (for messages and the printer only).
    pub name: String,
    /// Read or written.
    pub role: Role,
    /// Element type.
    pub elem: ElemType,
}

/// A scalar argument of the kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Param {
    /// Name as written by the user.
    pub name: String,
    /// Element type.
    pub elem: ElemType,
}

/// How a reduction combines the values of its points.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReduceOp {
    /// The sum (a norm is the sum of squares); NaN if any value is NaN.
    Sum,
    /// The smallest value; NaN values are ignored (as the language's `min`), so the result
    /// is NaN only when every value is.
    Min,
    /// The largest value; NaN values are ignored (as the language's `max`).
    Max,
}

impl ReduceOp {
    /// Every reduction operation, in a fixed order.
    pub const ALL: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

    /// The type name in the kernel language and the facade (`"Sum"`, `"Min"`, `"Max"`).
    pub const fn type_name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "Sum",
            ReduceOp::Min => "Min",
            ReduceOp::Max => "Max",
        }
    }

    /// The operation whose type is called `name`, if any.
    pub fn from_type_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|op| op.type_name() == name)
    }
}

/// A scalar result of the kernel: the values of an expression at every interior point,
/// combined by `op` in the fixed order of [`crate::reduce`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Reduction {
    /// Name as written by the user.
    pub name: String,
    /// How values combine.
    pub op: ReduceOp,
    /// Element type.
    pub elem: ElemType,
}

/// A `let` temporary (its value is given by the [`Stmt::Let`] that defines it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LetVar {
    /// Name as written by the user (shadowing is allowed: two lets may share a name).
    pub name: String,
}

/// A constant displacement from the current point, one entry per dimension.
///
/// Entries at and beyond the kernel's `n_dims` are zero. Dimension 0 is the outermost; the last
/// dimension is the unit-stride one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct Offset(pub [i32; MAX_DIMS]);

impl Offset {
    /// The zero offset.
    pub const ZERO: Offset = Offset([0; MAX_DIMS]);

    /// Builds an offset from up to [`MAX_DIMS`] entries; missing entries are zero.
    ///
    /// # Panics
    /// If more than [`MAX_DIMS`] entries are given.
    pub fn from_slice(entries: &[i32]) -> Offset {
        assert!(
            entries.len() <= MAX_DIMS,
            "offset with more than MAX_DIMS entries"
        );
        let mut d = [0; MAX_DIMS];
        d[..entries.len()].copy_from_slice(entries);
        Offset(d)
    }

    /// Entry of dimension `dim`.
    pub fn get(&self, dim: usize) -> i32 {
        self.0[dim]
    }

    /// The first `n_dims` entries.
    pub fn as_slice(&self, n_dims: usize) -> &[i32] {
        &self.0[..n_dims]
    }

    /// Whether every entry is zero.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; MAX_DIMS]
    }

    /// Manhattan length (sum of absolute entries).
    pub fn manhattan(&self) -> u32 {
        self.0.iter().map(|v| v.unsigned_abs()).sum()
    }

    /// Chebyshev length (largest absolute entry).
    pub fn chebyshev(&self) -> u32 {
        self.0.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0)
    }
}

/// Real-valued operations of one argument.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `abs(x)`
    Abs,
    /// `sqrt(x)`
    Sqrt,
    /// `exp(x)`
    Exp,
    /// `ln(x)` (natural logarithm)
    Ln,
    /// `sin(x)`
    Sin,
    /// `cos(x)`
    Cos,
    /// `tan(x)`
    Tan,
    /// `tanh(x)`
    Tanh,
    /// `floor(x)`
    Floor,
    /// `ceil(x)`
    Ceil,
}

impl UnaryOp {
    /// Every unary operation, in a fixed order.
    pub const ALL: [UnaryOp; 11] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Tanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
    ];

    /// The function name in the kernel language (`"neg"` for unary minus).
    pub const fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Exp => "exp",
            UnaryOp::Ln => "ln",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
        }
    }

    /// The operation called `name` in the kernel language, if any (`neg` is not callable).
    pub fn from_function_name(name: &str) -> Option<UnaryOp> {
        UnaryOp::ALL
            .into_iter()
            .find(|op| *op != UnaryOp::Neg && op.name() == name)
    }
}

/// Real-valued operations of two arguments.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `pow(a, b)`
    Pow,
}

impl BinaryOp {
    /// Every binary operation, in a fixed order.
    pub const ALL: [BinaryOp; 7] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Pow,
    ];

    /// The name used by the printer (`"add"`, ..., `"pow"`).
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Pow => "pow",
        }
    }

    /// The callable function with this name (`min`, `max`, `pow`), if any.
    pub fn from_function_name(name: &str) -> Option<BinaryOp> {
        match name {
            "min" => Some(BinaryOp::Min),
            "max" => Some(BinaryOp::Max),
            "pow" => Some(BinaryOp::Pow),
            _ => None,
        }
    }
}

/// Comparisons of two reals, giving a boolean.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// The operator's symbol.
    pub const fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// Boolean connectives of two booleans.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LogicOp {
    /// `a && b` (both sides are always evaluated: expressions have no side effects)
    And,
    /// `a || b`
    Or,
}

/// One expression node. Real-valued unless noted.
#[derive(Clone, PartialEq, Debug)]
pub enum Expr {
    /// A constant, stored as `f64` and rounded to the kernel's element type where it is used.
    Const(f64),
    /// A scalar parameter.
    Param(ParamId),
    /// An input field at a constant offset from the current point.
    Read {
        /// The field (an input).
        field: FieldId,
        /// Displacement from the current point.
        offset: Offset,
    },
    /// The value of a `let` temporary.
    Let(LetId),
    /// The current point's index along dimension `.0` (below `n_dims`), converted to the
    /// element type: the interior index, counted from 0 at the first interior point as
    /// [`Grid::get`](crate::Grid::get) counts it, converted to `f64` and then rounded to the
    /// element type (exact below 2^53 for `f64`, below 2^24 for `f32`). Reads no grid.
    Index(usize),
    /// The number of the step being computed, converted to the element type as
    /// [`Expr::Index`] is: in a time loop the step's number (counting from 0, or from the
    /// loop's first step), in a single sweep the number set on its [`Job`](crate::Job)
    /// (0 unless set). Reads no grid.
    Step,
    /// A unary operation.
    Unary {
        /// The operation.
        op: UnaryOp,
        /// Its argument.
        arg: ExprId,
    },
    /// A binary operation.
    Binary {
        /// The operation.
        op: BinaryOp,
        /// Left operand.
        lhs: ExprId,
        /// Right operand.
        rhs: ExprId,
    },
    /// A comparison (boolean-valued).
    Compare {
        /// The comparison.
        op: CmpOp,
        /// Left operand (real).
        lhs: ExprId,
        /// Right operand (real).
        rhs: ExprId,
    },
    /// A boolean connective (boolean-valued).
    Logic {
        /// The connective.
        op: LogicOp,
        /// Left operand (boolean).
        lhs: ExprId,
        /// Right operand (boolean).
        rhs: ExprId,
    },
    /// Boolean negation (boolean-valued).
    Not(ExprId),
    /// `a * b + c` rounded once (IEEE 754 `fusedMultiplyAdd`): the node the contraction pass
    /// ([`passes::contract`](mod@crate::passes::contract)) makes of an addition of a product in a
    /// kernel with [`Kernel::fma`] set, and only there (the verifier rejects it elsewhere).
    Fma {
        /// The product's left factor.
        a: ExprId,
        /// The product's right factor.
        b: ExprId,
        /// The addend.
        c: ExprId,
    },
    /// `if cond { then } else { otherwise }`: both branches are evaluated (no side effects).
    Select {
        /// The condition (boolean).
        cond: ExprId,
        /// Value when the condition holds (real).
        then: ExprId,
        /// Value otherwise (real).
        otherwise: ExprId,
    },
}

impl Expr {
    /// The expressions this node refers to, in operand order.
    pub fn operands(&self) -> impl Iterator<Item = ExprId> + '_ {
        let (a, b, c) = match *self {
            Expr::Const(_)
            | Expr::Param(_)
            | Expr::Read { .. }
            | Expr::Let(_)
            | Expr::Index(_)
            | Expr::Step => (None, None, None),
            Expr::Unary { arg, .. } | Expr::Not(arg) => (Some(arg), None, None),
            Expr::Binary { lhs, rhs, .. }
            | Expr::Compare { lhs, rhs, .. }
            | Expr::Logic { lhs, rhs, .. } => (Some(lhs), Some(rhs), None),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => (Some(cond), Some(then), Some(otherwise)),
            Expr::Fma { a, b, c } => (Some(a), Some(b), Some(c)),
        };
        a.into_iter().chain(b).chain(c)
    }

    /// The same node with each operand replaced by `map(operand)` (a renumbering by a pass
    /// that rebuilds the arena); leaves are returned as they are.
    pub fn map_operands(&self, map: impl Fn(ExprId) -> ExprId) -> Expr {
        match *self {
            Expr::Const(_)
            | Expr::Param(_)
            | Expr::Read { .. }
            | Expr::Let(_)
            | Expr::Index(_)
            | Expr::Step => self.clone(),
            Expr::Unary { op, arg } => Expr::Unary { op, arg: map(arg) },
            Expr::Binary { op, lhs, rhs } => Expr::Binary {
                op,
                lhs: map(lhs),
                rhs: map(rhs),
            },
            Expr::Compare { op, lhs, rhs } => Expr::Compare {
                op,
                lhs: map(lhs),
                rhs: map(rhs),
            },
            Expr::Logic { op, lhs, rhs } => Expr::Logic {
                op,
                lhs: map(lhs),
                rhs: map(rhs),
            },
            Expr::Not(arg) => Expr::Not(map(arg)),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => Expr::Select {
                cond: map(cond),
                then: map(then),
                otherwise: map(otherwise),
            },
            Expr::Fma { a, b, c } => Expr::Fma {
                a: map(a),
                b: map(b),
                c: map(c),
            },
        }
    }

    /// Whether the node is boolean-valued (a comparison, connective or negation).
    pub fn is_boolean(&self) -> bool {
        matches!(
            self,
            Expr::Compare { .. } | Expr::Logic { .. } | Expr::Not(_)
        )
    }
}

/// One statement of the kernel body, executed in order at every point.
#[derive(Clone, PartialEq, Debug)]
pub enum Stmt {
    /// Defines a temporary.
    Let {
        /// The temporary.
        var: LetId,
        /// Its value (real).
        value: ExprId,
    },
    /// Writes an output at offset zero.
    Store {
        /// The field (an output).
        field: FieldId,
        /// The value (real).
        value: ExprId,
    },
    /// Contributes this point's value to a reduction (each reduction exactly once).
    Reduce {
        /// The reduction.
        reduction: ReductionId,
        /// The value (real).
        value: ExprId,
    },
}

impl Stmt {
    /// The statement's value.
    pub fn value(&self) -> ExprId {
        match *self {
            Stmt::Let { value, .. } | Stmt::Store { value, .. } | Stmt::Reduce { value, .. } => {
                value
            }
        }
    }
}

/// A stencil kernel: the algorithm, with no schedule.
///
/// Build one with [`KernelBuilder`]; a kernel obtained from the builder has passed
/// [`verify()`](crate::verify::verify). The fields are public for reading by passes; a pass that
/// produces a new kernel re-verifies it.
#[derive(Clone, PartialEq, Debug)]
pub struct Kernel {
    /// Name (for messages, the printer and generated symbol names; not part of the hash).
    pub name: String,
    /// Number of dimensions of the index space, 1 to [`MAX_DIMS`].
    pub n_dims: usize,
    /// Names of the index variables (`i`, `j`, `k`, ...), one per dimension, for printing.
    pub index_names: Vec<String>,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// Scalar parameters in declaration order.
    pub params: Vec<Param>,
    /// Reductions (scalar results) in declaration order.
    pub reductions: Vec<Reduction>,
    /// `let` temporaries, in order of definition.
    pub lets: Vec<LetVar>,
    /// Expression arena, in topological order (operands before users).
    pub exprs: Vec<Expr>,
    /// Statements, in execution order.
    pub body: Vec<Stmt>,
    /// Fused multiply-add on request (`#[fma]` in the kernel language,
    /// [`KernelBuilder::fma`]): additions of a product are contracted into [`Expr::Fma`]
    /// nodes, one rounding instead of two, by the one rule of
    /// [`passes::contract`](mod@crate::passes::contract), which the builder applies when it
    /// finishes. Off by default: then every operation rounds on its own, as written.
    pub fma: bool,
}

impl Kernel {
    /// The expression with id `id`.
    ///
    /// # Panics
    /// If `id` is out of range (a verified kernel has none such).
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id.index()]
    }

    /// The field with id `id`.
    ///
    /// # Panics
    /// If `id` is out of range.
    pub fn field(&self, id: FieldId) -> &Field {
        &self.fields[id.index()]
    }

    /// The common element type of the kernel's fields and parameters (that of the first field;
    /// `F64` for a kernel with no fields, which the verifier rejects anyway).
    pub fn elem(&self) -> ElemType {
        self.fields
            .first()
            .map(|f| f.elem)
            .or_else(|| self.params.first().map(|p| p.elem))
            .unwrap_or(ElemType::F64)
    }

    /// Ids of the input fields, in declaration order.
    pub fn inputs(&self) -> impl Iterator<Item = FieldId> + '_ {
        self.fields_with_role(Role::Input)
    }

    /// Ids of the output fields, in declaration order.
    pub fn outputs(&self) -> impl Iterator<Item = FieldId> + '_ {
        self.fields_with_role(Role::Output)
    }

    /// The field called `name`, if any.
    pub fn field_by_name(&self, name: &str) -> Option<FieldId> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .map(FieldId::new)
    }

    /// The reduction called `name`, if any.
    pub fn reduction_by_name(&self, name: &str) -> Option<ReductionId> {
        self.reductions
            .iter()
            .position(|r| r.name == name)
            .map(ReductionId::new)
    }

    /// Whether the kernel has reductions.
    pub fn has_reductions(&self) -> bool {
        !self.reductions.is_empty()
    }

    /// The parameter called `name`, if any.
    pub fn param_by_name(&self, name: &str) -> Option<ParamId> {
        self.params
            .iter()
            .position(|p| p.name == name)
            .map(ParamId::new)
    }

    /// Whether the kernel reads the point's index along some dimension ([`Expr::Index`]).
    pub fn reads_indices(&self) -> bool {
        self.exprs.iter().any(|e| matches!(e, Expr::Index(_)))
    }

    /// Whether the kernel reads the step number ([`Expr::Step`]).
    pub fn reads_step(&self) -> bool {
        self.exprs.iter().any(|e| matches!(e, Expr::Step))
    }

    fn fields_with_role(&self, role: Role) -> impl Iterator<Item = FieldId> + '_ {
        self.fields
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.role == role)
            .map(|(i, _)| FieldId::new(i))
    }
}
