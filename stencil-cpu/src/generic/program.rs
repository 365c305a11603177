//! Lowering a verified [`Kernel`] to a [`Program`]: a flat list of whole-row operations.
//!
//! Only expressions that some store reaches are kept (through operands and through `let`s,
//! which become aliases of their values). They are ordered by a depth-first post-order walk
//! from the stores, so every operation's operands are computed before it, whatever the arena
//! order of `let` nodes. Each real-valued result gets its own *real slot*, each boolean one a
//! *bool slot*, numbered in evaluation order: an operand's slot is always below its user's.
//! Reads need no slot (the evaluator borrows the input row), nor do constants and parameters
//! need an operation per row (their slots are filled once per worker).

use stencil_core::{BinaryOp, CmpOp, Expr, ExprId, Kernel, LogicOp, MAX_DIMS, Role, Stmt, UnaryOp};

/// Where a real operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A real slot of the scratch space.
    Slot(usize),
    /// Read number `n` of [`Program::reads`], borrowed from the input row.
    Read(usize),
}

/// A row-invariant value that fills a real slot once per worker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FillValue {
    /// A constant (rounded to the element type when filled).
    Const(f64),
    /// Parameter number `n` (declaration order).
    Param(usize),
    /// The step number (`Expr::Step`), converted to the element type as the interpreter does.
    Step,
}

/// One input read: input number `input` (among inputs) at `offset` from the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) input: usize,
    pub(crate) offset: [isize; MAX_DIMS],
}

/// One whole-row operation; `dst`, and operands named by a plain `usize`, are slots (real or
/// bool as the operation says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `dst = op(arg)`, real.
    Unary {
        op: UnaryOp,
        dst: usize,
        arg: Source,
    },
    /// `dst = op(lhs, rhs)`, real.
    Binary {
        op: BinaryOp,
        dst: usize,
        lhs: Source,
        rhs: Source,
    },
    /// Bool slot `dst = lhs op rhs`.
    Compare {
        op: CmpOp,
        dst: usize,
        lhs: Source,
        rhs: Source,
    },
    /// Bool slot `dst = lhs op rhs` of bool slots.
    Logic {
        op: LogicOp,
        dst: usize,
        lhs: usize,
        rhs: usize,
    },
    /// Bool slot `dst = !arg`.
    Not { dst: usize, arg: usize },
    /// Real `dst` = each point's index along dimension `dim` (`Expr::Index`), converted to
    /// the element type as the interpreter does.
    Index { dim: usize, dst: usize },
    /// Real `dst = a * b + c`, rounded once.
    Fma {
        dst: usize,
        a: Source,
        b: Source,
        c: Source,
    },
    /// Real `dst = if cond { then } else { otherwise }` (both evaluated).
    Select {
        dst: usize,
        cond: usize,
        then: Source,
        otherwise: Source,
    },
}

/// A kernel lowered for the generic row evaluator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    /// Real slots to fill once per worker, with their values.
    pub(crate) fills: Vec<(usize, FillValue)>,
    /// Distinct input reads.
    pub(crate) reads: Vec<Read>,
    /// Operations, in evaluation order.
    pub(crate) ops: Vec<Op>,
    /// The value of each output, in the outputs' declaration order.
    pub(crate) stores: Vec<Source>,
    /// The value of each reduction, in declaration order.
    pub(crate) reductions: Vec<Source>,
    /// Outputs read in place, as (output number, real slot): the evaluator copies each such
    /// output's current values into its slot before a chunk's operations, which all run
    /// before its stores.
    pub(crate) in_place: Vec<(usize, usize)>,
    /// Number of real slots.
    pub(crate) n_real: usize,
    /// Number of bool slots.
    pub(crate) n_bool: usize,
}

/// What a compiled expression is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Real(Source),
    Bool(usize),
}

/// Walk state of one expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Unvisited,
    /// On the current walk path (its operands are being compiled).
    Open,
    Done(Value),
}

impl Program {
    /// Lowers `kernel`, which must be verified.
    ///
    /// # Panics
    /// On a kernel the verifier rejects (a dangling id, a `let` with no definition, a cycle
    /// through `let`s, or a type error): that is a bug of the caller.
    pub(crate) fn compile(kernel: &Kernel) -> Program {
        Compiler::new(kernel).run()
    }
}

struct Compiler<'k> {
    kernel: &'k Kernel,
    /// Position among inputs (or outputs) of each field.
    role_index: Vec<usize>,
    /// Value expression of each `let`.
    let_values: Vec<Option<ExprId>>,
    marks: Vec<Mark>,
    program: Program,
}

impl<'k> Compiler<'k> {
    fn new(kernel: &'k Kernel) -> Self {
        let mut role_index = vec![0; kernel.fields.len()];
        for (i, f) in kernel.inputs().enumerate() {
            role_index[f.index()] = i;
        }
        for (i, f) in kernel.outputs().enumerate() {
            role_index[f.index()] = i;
        }
        let mut let_values = vec![None; kernel.lets.len()];
        for stmt in &kernel.body {
            if let Stmt::Let { var, value } = *stmt {
                let_values[var.index()] = Some(value);
            }
        }
        Compiler {
            kernel,
            role_index,
            let_values,
            marks: vec![Mark::Unvisited; kernel.exprs.len()],
            program: Program {
                fills: Vec::new(),
                reads: Vec::new(),
                ops: Vec::new(),
                stores: Vec::new(),
                reductions: Vec::new(),
                in_place: Vec::new(),
                n_real: 0,
                n_bool: 0,
            },
        }
    }

    fn run(mut self) -> Program {
        let n_outputs = self.kernel.outputs().count();
        let mut stores = vec![None; n_outputs];
        let mut reductions = vec![None; self.kernel.reductions.len()];
        for stmt in &self.kernel.body {
            match *stmt {
                Stmt::Store { field, value } => {
                    let source = match self.compile(value) {
                        Value::Real(s) => s,
                        Value::Bool(_) => bug("a store of a boolean"),
                    };
                    stores[self.role_index[field.index()]] = Some(source);
                }
                Stmt::Reduce { reduction, value } => {
                    let source = match self.compile(value) {
                        Value::Real(s) => s,
                        Value::Bool(_) => bug("a reduction of a boolean"),
                    };
                    reductions[reduction.index()] = Some(source);
                }
                Stmt::Let { .. } => {}
            }
        }
        self.program.reductions = reductions
            .into_iter()
            .map(|s| s.unwrap_or_else(|| bug("a reduction that is never given a value")))
            .collect();
        self.program.stores = stores
            .into_iter()
            .map(|s| s.unwrap_or_else(|| bug("an output that is never stored")))
            .collect();
        self.program
    }

    /// Compiles `root` and everything it depends on (iterative post-order walk).
    fn compile(&mut self, root: ExprId) -> Value {
        let mut stack = vec![(root, false)];
        while let Some((id, operands_done)) = stack.pop() {
            match self.marks[id.index()] {
                Mark::Done(_) => continue,
                Mark::Open if !operands_done => bug("a cycle through `let`s"),
                _ => {}
            }
            if operands_done {
                let value = self.lower(id);
                self.marks[id.index()] = Mark::Done(value);
            } else {
                self.marks[id.index()] = Mark::Open;
                stack.push((id, true));
                // Reversed, so the first operand is compiled (and numbered) first.
                for dep in self.dependencies(id).into_iter().rev() {
                    if !matches!(self.marks[dep.index()], Mark::Done(_)) {
                        stack.push((dep, false));
                    }
                }
            }
        }
        self.value(root)
    }

    /// What `id` needs computed first: its operands, or a `let`'s value.
    fn dependencies(&self, id: ExprId) -> Vec<ExprId> {
        match *self.kernel.expr(id) {
            Expr::Let(var) => vec![self.let_value(var.index())],
            ref e => e.operands().collect(),
        }
    }

    fn let_value(&self, var: usize) -> ExprId {
        self.let_values[var].unwrap_or_else(|| bug("a `let` with no definition"))
    }

    fn value(&self, id: ExprId) -> Value {
        match self.marks[id.index()] {
            Mark::Done(v) => v,
            _ => bug("an operand used before it is computed"),
        }
    }

    fn real(&self, id: ExprId) -> Source {
        match self.value(id) {
            Value::Real(s) => s,
            Value::Bool(_) => bug("a boolean where a real is expected"),
        }
    }

    fn boolean(&self, id: ExprId) -> usize {
        match self.value(id) {
            Value::Bool(s) => s,
            Value::Real(_) => bug("a real where a boolean is expected"),
        }
    }

    fn new_real(&mut self) -> usize {
        self.program.n_real += 1;
        self.program.n_real - 1
    }

    fn new_bool(&mut self) -> usize {
        self.program.n_bool += 1;
        self.program.n_bool - 1
    }

    /// Emits the code of `id`, whose dependencies are compiled.
    fn lower(&mut self, id: ExprId) -> Value {
        match *self.kernel.expr(id) {
            Expr::Const(c) => self.fill(FillValue::Const(c)),
            Expr::Param(p) => self.fill(FillValue::Param(p.index())),
            Expr::Read { field, .. } if self.kernel.field(field).role == Role::Output => {
                // An output read in place (at offset zero: the verifier allows no other).
                let output = self.role_index[field.index()];
                let slot = self.new_real();
                self.program.in_place.push((output, slot));
                Value::Real(Source::Slot(slot))
            }
            Expr::Read { field, offset } => {
                let read = Read {
                    input: self.role_index[field.index()],
                    offset: offset.0.map(|o| o as isize),
                };
                let reads = &mut self.program.reads;
                let n = reads.iter().position(|r| *r == read).unwrap_or_else(|| {
                    reads.push(read);
                    reads.len() - 1
                });
                Value::Real(Source::Read(n))
            }
            Expr::Let(var) => self.value(self.let_value(var.index())),
            Expr::Step => self.fill(FillValue::Step),
            Expr::Index(dim) => {
                let dst = self.new_real();
                self.program.ops.push(Op::Index { dim, dst });
                Value::Real(Source::Slot(dst))
            }
            Expr::Unary { op, arg } => {
                let arg = self.real(arg);
                let dst = self.new_real();
                self.program.ops.push(Op::Unary { op, dst, arg });
                Value::Real(Source::Slot(dst))
            }
            Expr::Binary { op, lhs, rhs } => {
                let (lhs, rhs) = (self.real(lhs), self.real(rhs));
                let dst = self.new_real();
                self.program.ops.push(Op::Binary { op, dst, lhs, rhs });
                Value::Real(Source::Slot(dst))
            }
            Expr::Compare { op, lhs, rhs } => {
                let (lhs, rhs) = (self.real(lhs), self.real(rhs));
                let dst = self.new_bool();
                self.program.ops.push(Op::Compare { op, dst, lhs, rhs });
                Value::Bool(dst)
            }
            Expr::Logic { op, lhs, rhs } => {
                let (lhs, rhs) = (self.boolean(lhs), self.boolean(rhs));
                let dst = self.new_bool();
                self.program.ops.push(Op::Logic { op, dst, lhs, rhs });
                Value::Bool(dst)
            }
            Expr::Not(arg) => {
                let arg = self.boolean(arg);
                let dst = self.new_bool();
                self.program.ops.push(Op::Not { dst, arg });
                Value::Bool(dst)
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.boolean(cond);
                let (then, otherwise) = (self.real(then), self.real(otherwise));
                let dst = self.new_real();
                self.program.ops.push(Op::Select {
                    dst,
                    cond,
                    then,
                    otherwise,
                });
                Value::Real(Source::Slot(dst))
            }
            Expr::Fma { a, b, c } => {
                let (a, b, c) = (self.real(a), self.real(b), self.real(c));
                let dst = self.new_real();
                self.program.ops.push(Op::Fma { dst, a, b, c });
                Value::Real(Source::Slot(dst))
            }
        }
    }

    fn fill(&mut self, value: FillValue) -> Value {
        let slot = self.new_real();
        self.program.fills.push((slot, value));
        Value::Real(Source::Slot(slot))
    }
}

fn bug(what: &str) -> ! {
    panic!("stencil-cpu generic path: the kernel has {what}; the verifier should have rejected it")
}

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::{ElemType, KernelBuilder};

    #[test]
    fn lets_alias_their_values_and_unused_code_is_dropped() {
        let mut b = KernelBuilder::new("k", 2, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let a = b.read(u, &[0, -1]);
        let again = b.read(u, &[0, -1]);
        let unused = b.read(u, &[1, 0]);
        let _ = b.let_("dead", unused);
        let sum = b.add(a, again);
        let t = b.let_("t", sum);
        let t_ref = b.let_ref(t);
        let two = b.constant(2.0);
        let value = b.mul(t_ref, two);
        b.store(out, value);
        let p = Program::compile(&b.finish().unwrap());
        // The two identical reads are one; the dead read is gone.
        assert_eq!(
            p.reads,
            vec![Read {
                input: 0,
                offset: [0, -1, 0, 0]
            }]
        );
        assert_eq!(p.fills, vec![(1, FillValue::Const(2.0))]);
        assert_eq!(
            p.ops,
            vec![
                Op::Binary {
                    op: BinaryOp::Add,
                    dst: 0,
                    lhs: Source::Read(0),
                    rhs: Source::Read(0)
                },
                Op::Binary {
                    op: BinaryOp::Mul,
                    dst: 2,
                    lhs: Source::Slot(0),
                    rhs: Source::Slot(1)
                },
            ]
        );
        assert_eq!(p.stores, vec![Source::Slot(2)]);
        assert_eq!((p.n_real, p.n_bool), (3, 0));
    }

    #[test]
    fn operands_precede_users_even_when_a_let_node_comes_first_in_the_arena() {
        // Arena: 0 = let-ref(t), 1 = const 3, 2 = read, 3 = t + read. The let's value (1)
        // comes after the node that refers to it (0).
        let mut b = KernelBuilder::new("k", 1, ElemType::F32);
        let u = b.input("u");
        let out = b.output("out");
        let t_ref = b.expr(Expr::Let(stencil_core::LetId::new(0)));
        let three = b.constant(3.0);
        let r = b.read(u, &[1]);
        let t = b.let_("t", three);
        let sum = b.add(t_ref, r);
        b.store(out, sum);
        assert_eq!(t.index(), 0);
        let p = Program::compile(&b.finish().unwrap());
        assert_eq!(p.fills, vec![(0, FillValue::Const(3.0))]);
        assert_eq!(
            p.ops,
            vec![Op::Binary {
                op: BinaryOp::Add,
                dst: 1,
                lhs: Source::Slot(0),
                rhs: Source::Read(0)
            }]
        );
    }

    #[test]
    fn booleans_get_their_own_slots() {
        let mut b = KernelBuilder::new("k", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let x = b.read(u, &[0]);
        let zero = b.constant(0.0);
        let pos = b.compare(CmpOp::Gt, x, zero);
        let neg = b.not(pos);
        let both = b.logic(LogicOp::Or, pos, neg);
        let value = b.select(both, x, zero);
        b.store(out, value);
        let p = Program::compile(&b.finish().unwrap());
        assert_eq!((p.n_real, p.n_bool), (2, 3));
        assert_eq!(
            p.ops.last(),
            Some(&Op::Select {
                dst: 1,
                cond: 2,
                then: Source::Read(0),
                otherwise: Source::Slot(0)
            })
        );
    }
}
