//! The kernel body at one point, as PTX: every statement in order, each expression evaluated
//! once (memoised by id) into a register. Reads are not loaded here: the variant supplies a
//! register for every (input, displacement) the point reads, from global memory, a register
//! queue or a shared tile.

use std::collections::HashMap;

use stencil_core::Result;
use stencil_core::ir::{BinaryOp, CmpOp, Expr, ExprId, LogicOp, Stmt, UnaryOp};

use super::context::Ctx;
use super::math::{self, Function};
use crate::ptx::{Cmp, FloatOp, FloatUnaryOp, Inst, Operand, PredOp, Reg, RegClass, Type};

/// Values of the reads of one point: (input field index, canonical displacement) -> register.
pub(crate) type ReadValues = HashMap<(usize, [i64; 3]), Reg>;

/// Values computed at one point: (output field index or reduction index, register), in
/// statement order.
pub(crate) type PointValues = Vec<(usize, Reg)>;

impl Ctx<'_> {
    /// Evaluates the body at one point; returns (output field index, value) per store, in
    /// statement order.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidSchedule`](stencil_core::ErrorKind::InvalidSchedule) when the
    /// kernel has reductions: only the reduction variant (`reduce.rs`, through
    /// [`eval_point_reducing`](Self::eval_point_reducing)) computes them.
    pub(crate) fn eval_point(&mut self, reads: &ReadValues) -> Result<PointValues> {
        let (stores, reduced) = self.eval_point_reducing(reads)?;
        if !reduced.is_empty() {
            return Err(stencil_core::Error::new(
                stencil_core::ErrorKind::InvalidSchedule,
                format!(
                    "kernel `{}` has reductions, which only the reduction variant computes",
                    self.kernel.name
                ),
            ));
        }
        Ok(stores)
    }

    /// Evaluates the body at one point; returns (output field index, value) per store and
    /// (reduction index, value) per reduction, each in statement order.
    pub(crate) fn eval_point_reducing(
        &mut self,
        reads: &ReadValues,
    ) -> Result<(PointValues, PointValues)> {
        let kernel = self.kernel;
        let mut memo: Vec<Option<Reg>> = vec![None; kernel.exprs.len()];
        let mut lets: Vec<Option<Reg>> = vec![None; kernel.lets.len()];
        let mut stores = Vec::new();
        let mut reduced = Vec::new();
        for stmt in &kernel.body {
            match *stmt {
                Stmt::Let { var, value } => {
                    let r = self.expr(value, reads, &mut memo, &lets)?;
                    lets[var.index()] = Some(r);
                }
                Stmt::Store { field, value } => {
                    let r = self.expr(value, reads, &mut memo, &lets)?;
                    stores.push((field.index(), r));
                }
                Stmt::Reduce { reduction, value } => {
                    let r = self.expr(value, reads, &mut memo, &lets)?;
                    reduced.push((reduction.index(), r));
                }
            }
        }
        Ok((stores, reduced))
    }

    fn expr(
        &mut self,
        id: ExprId,
        reads: &ReadValues,
        memo: &mut Vec<Option<Reg>>,
        lets: &[Option<Reg>],
    ) -> Result<Reg> {
        if let Some(r) = memo[id.index()] {
            return Ok(r);
        }
        let kernel = self.kernel;
        let mut operand = |ctx: &mut Self, e: ExprId| ctx.expr(e, reads, memo, lets);
        let fty = self.fty;
        let r = match *kernel.expr(id) {
            Expr::Const(v) => {
                let imm = match fty {
                    Type::F32 => Operand::F32(v as f32),
                    _ => Operand::F64(v),
                };
                self.mov(fty, imm)
            }
            Expr::Param(p) => self.params[p.index()],
            Expr::Read { field, offset } => {
                let key = (field.index(), self.canon(offset));
                *reads.get(&key).unwrap_or_else(|| {
                    panic!("codegen: no value supplied for read {key:?} (variant bug)")
                })
            }
            Expr::Let(l) => lets[l.index()]
                .unwrap_or_else(|| panic!("codegen: let {} used before its definition", l.index())),
            Expr::Index(dim) => self.index_value(dim)?,
            Expr::Step => self.step_value()?,
            Expr::Unary { op, arg } => {
                let a = operand(self, arg)?;
                let native = match op {
                    UnaryOp::Neg => FloatUnaryOp::Neg,
                    UnaryOp::Abs => FloatUnaryOp::Abs,
                    UnaryOp::Sqrt => FloatUnaryOp::Sqrt,
                    UnaryOp::Floor => FloatUnaryOp::Floor,
                    UnaryOp::Ceil => FloatUnaryOp::Ceil,
                    UnaryOp::Exp => return Ok(self.math(Function::Exp, &[a], id, memo)),
                    UnaryOp::Ln => return Ok(self.math(Function::Ln, &[a], id, memo)),
                    UnaryOp::Sin => return Ok(self.math(Function::Sin, &[a], id, memo)),
                    UnaryOp::Cos => return Ok(self.math(Function::Cos, &[a], id, memo)),
                    UnaryOp::Tan => return Ok(self.math(Function::Tan, &[a], id, memo)),
                    UnaryOp::Tanh => return Ok(self.math(Function::Tanh, &[a], id, memo)),
                };
                let dst = self.b.reg(self.fclass);
                self.b.push(Inst::FloatUnary {
                    op: native,
                    ty: fty,
                    dst,
                    a: a.into(),
                });
                dst
            }
            Expr::Binary { op, lhs, rhs } => {
                let a = operand(self, lhs)?;
                let b = operand(self, rhs)?;
                let op = match op {
                    BinaryOp::Add => FloatOp::Add,
                    BinaryOp::Sub => FloatOp::Sub,
                    BinaryOp::Mul => FloatOp::Mul,
                    BinaryOp::Div => FloatOp::Div,
                    BinaryOp::Min => FloatOp::Min,
                    BinaryOp::Max => FloatOp::Max,
                    BinaryOp::Pow => return Ok(self.math(Function::Pow, &[a, b], id, memo)),
                };
                let dst = self.b.reg(self.fclass);
                self.b.push(Inst::Float {
                    op,
                    ty: fty,
                    dst,
                    a: a.into(),
                    b: b.into(),
                });
                dst
            }
            Expr::Compare { op, lhs, rhs } => {
                let a = operand(self, lhs)?;
                let b = operand(self, rhs)?;
                // IEEE: every comparison with NaN is false except `!=`.
                let cmp = match op {
                    CmpOp::Lt => Cmp::Lt,
                    CmpOp::Le => Cmp::Le,
                    CmpOp::Gt => Cmp::Gt,
                    CmpOp::Ge => Cmp::Ge,
                    CmpOp::Eq => Cmp::Eq,
                    CmpOp::Ne => Cmp::Neu,
                };
                self.setp(cmp, fty, a.into(), b.into())
            }
            Expr::Logic { op, lhs, rhs } => {
                let a = operand(self, lhs)?;
                let b = operand(self, rhs)?;
                let dst = self.b.reg(RegClass::Pred);
                let op = match op {
                    LogicOp::And => PredOp::And,
                    LogicOp::Or => PredOp::Or,
                };
                self.b.push(Inst::Pred { op, dst, a, b });
                dst
            }
            Expr::Not(arg) => {
                let a = operand(self, arg)?;
                let dst = self.b.reg(RegClass::Pred);
                self.b.push(Inst::NotPred { dst, a });
                dst
            }
            // `fma.rn`: one rounding, the interpreter's `mul_add`.
            Expr::Fma { a, b, c } => {
                let a = operand(self, a)?;
                let b = operand(self, b)?;
                let c = operand(self, c)?;
                let dst = self.b.reg(self.fclass);
                self.b.push(Inst::Fma {
                    ty: fty,
                    dst,
                    a: a.into(),
                    b: b.into(),
                    c: c.into(),
                });
                dst
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = operand(self, cond)?;
                let t = operand(self, then)?;
                let o = operand(self, otherwise)?;
                let dst = self.b.reg(self.fclass);
                self.b.push(Inst::Selp {
                    ty: fty,
                    dst,
                    a: t.into(),
                    b: o.into(),
                    pred: c,
                });
                dst
            }
        };
        memo[id.index()] = Some(r);
        Ok(r)
    }

    /// A function of the math module (no native instruction), memoised as expression `id`.
    fn math(
        &mut self,
        function: Function,
        args: &[Reg],
        id: ExprId,
        memo: &mut [Option<Reg>],
    ) -> Reg {
        let r = math::emit(&mut self.b, function, self.fty, args);
        memo[id.index()] = Some(r);
        r
    }
}
