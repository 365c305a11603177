//! The verifier: the one definition of a valid kernel.
//!
//! [`verify`] collects every problem it finds (it does not stop at the first), each with a
//! [`Location`] in the IR, so the `stencil!` macro can point at the offending token and a
//! run-time builder user gets the whole list at once.

use std::collections::HashSet;
use std::fmt;

use crate::element::ElemType;
use crate::ir::{
    Expr, ExprId, FieldId, Kernel, LetId, MAX_DIMS, MAX_RADIUS, ParamId, ReductionId, Role, Stmt,
};

mod location;
mod text;

pub use location::Location;

/// What is wrong.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum VerifyErrorKind {
    /// `n_dims` is 0 or above [`MAX_DIMS`].
    BadDimensionCount(usize),
    /// `index_names` does not have `n_dims` entries.
    BadIndexNames,
    /// The kernel has no statements.
    EmptyKernel,
    /// The kernel declares no output field and no reduction.
    NoOutput,
    /// The kernel declares no field (so nothing gives it a shape).
    NoGrid,
    /// A reduction is given a value more than once.
    ReductionTwice(String),
    /// A reduction is never given a value.
    ReductionNeverGiven(String),
    /// Two fields or parameters share a name.
    DuplicateName(String),
    /// A field or parameter's element type differs from the first field's.
    MixedElementTypes {
        /// The kernel's element type (of its first field).
        expected: ElemType,
        /// The declaration's element type.
        found: ElemType,
    },
    /// An id (field, parameter, let or expression) is out of range.
    DanglingId,
    /// An expression refers to an expression with an id not smaller than its own.
    NotTopological,
    /// A read names an output field at a non-zero offset (an output may be read at its own
    /// point only: an in-place update such as `y = a * x + y`).
    ReadOfOutput(String),
    /// An output is read (in place) by a statement after the one that writes it: the read
    /// would give the value before the sweep, not the one written above.
    ReadAfterWrite(String),
    /// A store names an input field.
    WriteToInput(String),
    /// An output is stored more than once.
    OutputWrittenTwice(String),
    /// An output is never stored.
    OutputNeverWritten(String),
    /// An offset entry exceeds [`MAX_RADIUS`] in absolute value.
    RadiusTooLarge {
        /// Dimension of the entry.
        dim: usize,
        /// The entry.
        offset: i32,
    },
    /// An offset has a non-zero entry at or beyond `n_dims`.
    OffsetBeyondDimensions,
    /// An index value ([`Expr::Index`]) names dimension `.0`, at or
    /// beyond `n_dims`.
    IndexBeyondDimensions(usize),
    /// A `let` is used before (or without) the statement that defines it.
    LetUsedBeforeDefinition(String),
    /// A `let` temporary is defined by more than one statement.
    LetDefinedTwice(String),
    /// A boolean was given where a real is needed.
    ExpectedReal,
    /// A real was given where a boolean is needed.
    ExpectedBoolean,
    /// A fused multiply-add node in a kernel without [`Kernel::fma`](crate::Kernel::fma)
    /// (fused nodes come only from the contraction of a kernel that asks for them).
    FmaWithoutFlag,
}

/// One problem in a kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VerifyError {
    /// What is wrong.
    pub kind: VerifyErrorKind,
    /// Where.
    pub location: Location,
    /// Where, as kernel-language text: the offending expression or statement printed as
    /// source (`u[i-9, j] + c`), or the field, parameter or kernel by name.
    pub source: String,
}

/// Every problem found in a kernel (never empty).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VerifyErrors {
    /// Name of the kernel.
    pub kernel: String,
    /// The problems, in the order found.
    pub errors: Vec<VerifyError>,
}

impl fmt::Display for VerifyErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use VerifyErrorKind::*;
        match self {
            BadDimensionCount(n) => {
                write!(f, "a kernel has 1 to {MAX_DIMS} dimensions, not {n}")
            }
            BadIndexNames => f.write_str("one index variable name per dimension is needed"),
            EmptyKernel => f.write_str("the kernel has no statements"),
            NoOutput => f.write_str("the kernel declares no output field and no reduction"),
            NoGrid => f.write_str("the kernel declares no grid"),
            ReductionTwice(n) => write!(f, "reduction `{n}` is given a value more than once"),
            ReductionNeverGiven(n) => write!(f, "reduction `{n}` is never given a value"),
            DuplicateName(n) => write!(f, "the name `{n}` is declared twice"),
            MixedElementTypes { expected, found } => write!(
                f,
                "all fields and parameters of a kernel share one element type: expected `{expected}`, found `{found}`"
            ),
            DanglingId => {
                f.write_str("reference to an undeclared field, parameter, let or expression")
            }
            NotTopological => f.write_str("an expression refers to a later expression"),
            ReadOfOutput(n) => write!(
                f,
                "`{n}` is an output: it can be read only at its own point (offset zero), for an \
                 in-place update"
            ),
            ReadAfterWrite(n) => write!(
                f,
                "`{n}` is read after this kernel writes it, where a read gives the value from \
                 before the sweep: keep the value in a `let` and use that"
            ),
            WriteToInput(n) => write!(f, "`{n}` is an input and cannot be written"),
            OutputWrittenTwice(n) => write!(f, "output `{n}` is written more than once"),
            OutputNeverWritten(n) => write!(f, "output `{n}` is never written"),
            RadiusTooLarge { dim, offset } => write!(
                f,
                "offset {offset} in dimension {dim} exceeds the largest supported radius {MAX_RADIUS}"
            ),
            OffsetBeyondDimensions => {
                f.write_str("offset has a non-zero entry beyond the kernel's dimensions")
            }
            IndexBeyondDimensions(dim) => write!(
                f,
                "the index of dimension {dim} is read, beyond the kernel's dimensions"
            ),
            LetUsedBeforeDefinition(n) => write!(f, "`{n}` is used before it is defined"),
            LetDefinedTwice(n) => write!(f, "temporary `{n}` is defined twice"),
            ExpectedReal => f.write_str("expected a number, found a condition"),
            ExpectedBoolean => f.write_str("expected a condition, found a number"),
            FmaWithoutFlag => f.write_str(
                "a fused multiply-add node in a kernel without fused multiply-add (`#[fma]`)",
            ),
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.kind, self.source)
    }
}

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid kernel `{}`:", self.kernel)?;
        for e in &self.errors {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyErrors {}

/// Checks every invariant of [`Kernel`]; returns all violations.
pub fn verify(kernel: &Kernel) -> Result<(), VerifyErrors> {
    let mut v = Verifier {
        kernel,
        errors: Vec::new(),
    };
    v.check_header();
    v.check_declarations();
    v.check_exprs();
    v.check_body();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifyErrors {
            kernel: kernel.name.clone(),
            errors: v.errors,
        })
    }
}

struct Verifier<'k> {
    kernel: &'k Kernel,
    errors: Vec<VerifyError>,
}

impl Verifier<'_> {
    fn push(&mut self, kind: VerifyErrorKind, location: Location) {
        let source = text::describe(self.kernel, &location);
        self.errors.push(VerifyError {
            kind,
            location,
            source,
        });
    }

    fn check_header(&mut self) {
        let k = self.kernel;
        if k.n_dims == 0 || k.n_dims > MAX_DIMS {
            self.push(
                VerifyErrorKind::BadDimensionCount(k.n_dims),
                Location::Kernel,
            );
        }
        if k.index_names.len() != k.n_dims {
            self.push(VerifyErrorKind::BadIndexNames, Location::Kernel);
        }
        if k.body.is_empty() {
            self.push(VerifyErrorKind::EmptyKernel, Location::Kernel);
        }
        if !k.fields.iter().any(|f| f.role == Role::Output) && k.reductions.is_empty() {
            self.push(VerifyErrorKind::NoOutput, Location::Kernel);
        } else if k.fields.is_empty() {
            self.push(VerifyErrorKind::NoGrid, Location::Kernel);
        }
    }

    fn check_declarations(&mut self) {
        let k = self.kernel;
        let expected = k.elem();
        let mut seen = HashSet::new();
        for (i, f) in k.fields.iter().enumerate() {
            let at = Location::Field(FieldId::new(i));
            if !seen.insert(f.name.as_str()) {
                self.push(VerifyErrorKind::DuplicateName(f.name.clone()), at);
            }
            if f.elem != expected {
                self.push(
                    VerifyErrorKind::MixedElementTypes {
                        expected,
                        found: f.elem,
                    },
                    at,
                );
            }
        }
        for (i, r) in k.reductions.iter().enumerate() {
            let at = Location::Reduction(ReductionId::new(i));
            if !seen.insert(r.name.as_str()) {
                self.push(VerifyErrorKind::DuplicateName(r.name.clone()), at);
            }
            if r.elem != expected {
                self.push(
                    VerifyErrorKind::MixedElementTypes {
                        expected,
                        found: r.elem,
                    },
                    at,
                );
            }
        }
        for (i, p) in k.params.iter().enumerate() {
            let at = Location::Param(ParamId::new(i));
            if !seen.insert(p.name.as_str()) {
                self.push(VerifyErrorKind::DuplicateName(p.name.clone()), at);
            }
            if p.elem != expected {
                self.push(
                    VerifyErrorKind::MixedElementTypes {
                        expected,
                        found: p.elem,
                    },
                    at,
                );
            }
        }
    }

    /// Whether expression `id` is boolean-valued (false for dangling ids).
    fn is_boolean(&self, id: ExprId) -> bool {
        self.kernel
            .exprs
            .get(id.index())
            .is_some_and(Expr::is_boolean)
    }

    fn check_exprs(&mut self) {
        let k = self.kernel;
        for (i, e) in k.exprs.iter().enumerate() {
            let at = Location::Expr(ExprId::new(i));
            for operand in e.operands() {
                if operand.index() >= k.exprs.len() {
                    self.push(VerifyErrorKind::DanglingId, at);
                } else if operand.index() >= i {
                    self.push(VerifyErrorKind::NotTopological, at);
                }
            }
            match *e {
                Expr::Const(_) => {}
                Expr::Param(p) => {
                    if p.index() >= k.params.len() {
                        self.push(VerifyErrorKind::DanglingId, at);
                    }
                }
                Expr::Read { field, offset } => {
                    match k.fields.get(field.index()) {
                        None => self.push(VerifyErrorKind::DanglingId, at),
                        Some(f) if f.role == Role::Output && !offset.is_zero() => {
                            self.push(VerifyErrorKind::ReadOfOutput(f.name.clone()), at)
                        }
                        Some(_) => {}
                    }
                    for dim in 0..MAX_DIMS {
                        let o = offset.get(dim);
                        if dim >= k.n_dims {
                            if o != 0 {
                                self.push(VerifyErrorKind::OffsetBeyondDimensions, at);
                                break;
                            }
                        } else if o.unsigned_abs() > MAX_RADIUS {
                            self.push(VerifyErrorKind::RadiusTooLarge { dim, offset: o }, at);
                        }
                    }
                }
                Expr::Let(var) => {
                    if var.index() >= k.lets.len() {
                        self.push(VerifyErrorKind::DanglingId, at);
                    }
                }
                Expr::Index(dim) => {
                    if dim >= k.n_dims {
                        self.push(VerifyErrorKind::IndexBeyondDimensions(dim), at);
                    }
                }
                Expr::Step => {}
                Expr::Unary { arg, .. } => self.expect_real(arg, at),
                Expr::Binary { lhs, rhs, .. } | Expr::Compare { lhs, rhs, .. } => {
                    self.expect_real(lhs, at);
                    self.expect_real(rhs, at);
                }
                Expr::Logic { lhs, rhs, .. } => {
                    self.expect_boolean(lhs, at);
                    self.expect_boolean(rhs, at);
                }
                Expr::Not(arg) => self.expect_boolean(arg, at),
                Expr::Fma { a, b, c } => {
                    if !k.fma {
                        self.push(VerifyErrorKind::FmaWithoutFlag, at);
                    }
                    self.expect_real(a, at);
                    self.expect_real(b, at);
                    self.expect_real(c, at);
                }
                Expr::Select {
                    cond,
                    then,
                    otherwise,
                } => {
                    self.expect_boolean(cond, at);
                    self.expect_real(then, at);
                    self.expect_real(otherwise, at);
                }
            }
        }
    }

    fn expect_real(&mut self, id: ExprId, at: Location) {
        if id.index() < self.kernel.exprs.len() && self.is_boolean(id) {
            self.push(VerifyErrorKind::ExpectedReal, at);
        }
    }

    fn expect_boolean(&mut self, id: ExprId, at: Location) {
        if id.index() < self.kernel.exprs.len() && !self.is_boolean(id) {
            self.push(VerifyErrorKind::ExpectedBoolean, at);
        }
    }

    /// Lets referenced (transitively through the arena) by expression `root`.
    fn lets_used_by(&self, root: ExprId, out: &mut Vec<LetId>) {
        self.walk(root, &mut |e, _| {
            if let Expr::Let(var) = *e {
                out.push(var);
            }
        });
    }

    /// Calls `visit` on every node `root` reaches through operands (not through `let`s).
    fn walk(&self, root: ExprId, visit: &mut dyn FnMut(&Expr, ExprId)) {
        let k = self.kernel;
        let mut stack = vec![root];
        let mut visited = HashSet::new();
        while let Some(id) = stack.pop() {
            if id.index() >= k.exprs.len() || !visited.insert(id) {
                continue;
            }
            let e = &k.exprs[id.index()];
            visit(e, id);
            // Only follow operands that point backwards; the arena check reports the rest.
            stack.extend(e.operands().filter(|o| o.index() < id.index()));
        }
    }

    fn check_body(&mut self) {
        let k = self.kernel;
        let mut defined = vec![false; k.lets.len()];
        let mut written = vec![0usize; k.fields.len()];
        let mut reduced = vec![0usize; k.reductions.len()];
        for (s, stmt) in k.body.iter().enumerate() {
            let at = Location::Stmt(s);
            let value = stmt.value();
            if value.index() >= k.exprs.len() {
                self.push(VerifyErrorKind::DanglingId, at);
            } else {
                // Outputs read in place must be read before they are written.
                let mut late = Vec::new();
                self.walk(value, &mut |e, id| {
                    if let Expr::Read { field, .. } = *e
                        && written.get(field.index()).is_some_and(|&w| w > 0)
                    {
                        late.push((k.fields[field.index()].name.clone(), id));
                    }
                });
                for (name, id) in late {
                    self.push(VerifyErrorKind::ReadAfterWrite(name), Location::Expr(id));
                }
                self.expect_real(value, at);
                let mut used = Vec::new();
                self.lets_used_by(value, &mut used);
                for var in used {
                    if var.index() < k.lets.len() && !defined[var.index()] {
                        let name = k.lets[var.index()].name.clone();
                        self.push(VerifyErrorKind::LetUsedBeforeDefinition(name), at);
                    }
                }
            }
            match *stmt {
                Stmt::Let { var, .. } => match defined.get_mut(var.index()) {
                    None => self.push(VerifyErrorKind::DanglingId, at),
                    Some(true) => {
                        let name = k.lets[var.index()].name.clone();
                        self.push(VerifyErrorKind::LetDefinedTwice(name), at);
                    }
                    Some(d) => *d = true,
                },
                Stmt::Store { field, .. } => match k.fields.get(field.index()) {
                    None => self.push(VerifyErrorKind::DanglingId, at),
                    Some(f) if f.role == Role::Input => {
                        self.push(VerifyErrorKind::WriteToInput(f.name.clone()), at)
                    }
                    Some(f) => {
                        written[field.index()] += 1;
                        if written[field.index()] == 2 {
                            self.push(VerifyErrorKind::OutputWrittenTwice(f.name.clone()), at);
                        }
                    }
                },
                Stmt::Reduce { reduction, .. } => match k.reductions.get(reduction.index()) {
                    None => self.push(VerifyErrorKind::DanglingId, at),
                    Some(r) => {
                        reduced[reduction.index()] += 1;
                        if reduced[reduction.index()] == 2 {
                            self.push(VerifyErrorKind::ReductionTwice(r.name.clone()), at);
                        }
                    }
                },
            }
        }
        for (i, r) in k.reductions.iter().enumerate() {
            if reduced[i] == 0 && !k.body.is_empty() {
                self.push(
                    VerifyErrorKind::ReductionNeverGiven(r.name.clone()),
                    Location::Reduction(ReductionId::new(i)),
                );
            }
        }
        for (i, f) in k.fields.iter().enumerate() {
            if f.role == Role::Output && written[i] == 0 && !k.body.is_empty() {
                self.push(
                    VerifyErrorKind::OutputNeverWritten(f.name.clone()),
                    Location::Field(FieldId::new(i)),
                );
            }
        }
    }
}
