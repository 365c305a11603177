//! Runs a launch: blocks one after another; inside a block every thread has its own registers
//! and program counter.
//!
//! Scheduling: blocks run one after another in the order of [`LaunchOptions::blocks`]; each
//! live thread of the block runs, in the order of [`LaunchOptions::threads`] (a new shuffle
//! every round), until it reaches `bar.sync` or exits. When
//! every thread has done so, the waiting threads are released together and the round repeats;
//! the block ends when all its threads have exited. Exited threads do not count toward a
//! barrier. If the waiting threads stopped at different `bar.sync` instructions the barrier can
//! never be released as PTX defines it (a barrier in divergent code): that is reported as
//! [`EmulatorErrorKind::BarrierDeadlock`]. A thread that never stops (a runaway loop, or one that
//! spins while its block waits) is stopped by the per-thread instruction limit.
//!
//! Shared memory is filled with the byte 0xFF at the start of every block (hardware leaves it
//! undefined): a float read before any write is a NaN, so it shows in results.

use super::error::{EmulatorError, EmulatorErrorKind};
use super::eval;
use super::memory::{Memory, read_le};
use super::options::LaunchOptions;
use super::program::{Address, Entry, Op, Reg, SharedVariable, Space, Special, Src};

/// What a launch did, counted over all threads.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct LaunchStats {
    /// Instructions issued, including those whose guard predicate was false.
    pub instructions: u64,
    /// Barrier releases: each time a block's waiting threads were released from `bar.sync`
    /// (counted once per block, not per thread).
    pub barriers: u64,
    /// `ld.global` executions.
    pub global_loads: u64,
    /// `st.global` executions.
    pub global_stores: u64,
    /// `ld.shared` executions.
    pub shared_loads: u64,
    /// `st.shared` executions.
    pub shared_stores: u64,
    /// Blocks run.
    pub blocks: u64,
    /// Threads run (blocks times threads per block).
    pub threads: u64,
}

/// The byte every block's shared memory starts filled with.
pub(crate) const SHARED_POISON: u8 = 0xFF;

/// A fully checked launch request.
pub(crate) struct LaunchPlan<'a> {
    pub(crate) entry: &'a Entry,
    pub(crate) source_lines: &'a [String],
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) params: Vec<u64>,
    pub(crate) options: LaunchOptions,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Running,
    Waiting,
    Exited,
}

enum Stop {
    Barrier,
    Exit,
}

/// A thread's failure, turned into an [`EmulatorError`] with its context by the caller.
enum Fault {
    Unwritten(Reg),
    Access {
        kind: EmulatorErrorKind,
        space: Space,
        store: bool,
        address: u64,
        size: u8,
    },
    StepLimit,
}

/// The special registers of one thread.
struct Specials {
    tid: [u32; 3],
    ntid: [u32; 3],
    ctaid: [u32; 3],
    nctaid: [u32; 3],
}

impl Specials {
    fn get(&self, special: Special) -> u64 {
        u64::from(match special {
            Special::Tid(axis) => self.tid[usize::from(axis)],
            Special::Ntid(axis) => self.ntid[usize::from(axis)],
            Special::Ctaid(axis) => self.ctaid[usize::from(axis)],
            Special::Nctaid(axis) => self.nctaid[usize::from(axis)],
        })
    }
}

/// Per-block thread state, reused from block to block.
struct BlockState {
    register_count: usize,
    registers: Vec<u64>,
    written: Vec<bool>,
    pcs: Vec<u32>,
    status: Vec<Status>,
    steps: Vec<u64>,
    shared: Vec<u8>,
}

/// Executes `plan` against `memory`.
pub(crate) fn execute(
    plan: &LaunchPlan<'_>,
    memory: &mut Memory,
) -> Result<LaunchStats, EmulatorError> {
    let thread_count = plan.block.iter().map(|&n| n as usize).product::<usize>();
    let register_count = plan.entry.registers.len();
    let mut state = BlockState {
        register_count,
        registers: vec![0; thread_count * register_count],
        written: vec![false; thread_count * register_count],
        pcs: vec![0; thread_count],
        status: vec![Status::Running; thread_count],
        steps: vec![0; thread_count],
        shared: vec![SHARED_POISON; plan.entry.shared_bytes as usize],
    };
    let mut stats = LaunchStats::default();
    let [gx, gy, gz] = plan.grid.map(|n| n as usize);
    for block in plan.options.blocks.arrange(gx * gy * gz, 0) {
        let ctaid = [
            (block % gx) as u32,
            (block / gx % gy) as u32,
            (block / (gx * gy)) as u32,
        ];
        run_block(plan, ctaid, &mut state, memory, &mut stats)?;
        stats.blocks += 1;
        stats.threads += thread_count as u64;
    }
    Ok(stats)
}

fn thread_index(block: [u32; 3], thread: usize) -> [u32; 3] {
    let thread = thread as u32;
    [
        thread % block[0],
        thread / block[0] % block[1],
        thread / (block[0] * block[1]),
    ]
}

fn run_block(
    plan: &LaunchPlan<'_>,
    ctaid: [u32; 3],
    state: &mut BlockState,
    memory: &mut Memory,
    stats: &mut LaunchStats,
) -> Result<(), EmulatorError> {
    state.written.fill(false);
    state.pcs.fill(0);
    state.status.fill(Status::Running);
    state.steps.fill(0);
    state.shared.fill(SHARED_POISON);
    let mut round = u64::from(ctaid[0]) ^ u64::from(ctaid[1]) << 21 ^ u64::from(ctaid[2]) << 42;
    loop {
        round = round.wrapping_add(1);
        for thread in plan.options.threads.arrange(state.pcs.len(), round) {
            if state.status[thread] != Status::Running {
                continue;
            }
            let specials = Specials {
                tid: thread_index(plan.block, thread),
                ntid: plan.block,
                ctaid,
                nctaid: plan.grid,
            };
            match run_thread(plan, thread, &specials, state, memory, stats) {
                Ok(Stop::Exit) => state.status[thread] = Status::Exited,
                Ok(Stop::Barrier) => state.status[thread] = Status::Waiting,
                Err(fault) => return Err(fault_error(plan, state, thread, ctaid, fault, memory)),
            }
        }
        let mut waiting = (0..state.pcs.len()).filter(|&t| state.status[t] == Status::Waiting);
        let Some(first) = waiting.next() else {
            return Ok(());
        };
        if let Some(other) = waiting.find(|&t| state.pcs[t] != state.pcs[first]) {
            let line_of = |t: usize| plan.entry.code[state.pcs[t] as usize].line;
            return Err(EmulatorError::at_line(
                EmulatorErrorKind::BarrierDeadlock,
                line_of(other) as usize,
                format!(
                    "barrier deadlock in block {}: thread {} waits at the bar.sync of line {} \
                     while thread {} waits at the bar.sync of line {}; every non-exited thread \
                     of a block must reach the same bar.sync",
                    show(ctaid),
                    show(thread_index(plan.block, first)),
                    line_of(first),
                    show(thread_index(plan.block, other)),
                    line_of(other),
                ),
            ));
        }
        stats.barriers += 1;
        for thread in 0..state.pcs.len() {
            if state.status[thread] == Status::Waiting {
                state.status[thread] = Status::Running;
                state.pcs[thread] += 1;
            }
        }
    }
}

fn show(index: [u32; 3]) -> String {
    format!("({},{},{})", index[0], index[1], index[2])
}

fn fault_error(
    plan: &LaunchPlan<'_>,
    state: &BlockState,
    thread: usize,
    ctaid: [u32; 3],
    fault: Fault,
    memory: &Memory,
) -> EmulatorError {
    let pc = state.pcs[thread] as usize;
    let line = plan.entry.code[pc].line as usize;
    let text = plan
        .source_lines
        .get(line - 1)
        .map_or("", |text| text.trim());
    let place = format!(
        "`{text}` in thread {} of block {}",
        show(thread_index(plan.block, thread)),
        show(ctaid)
    );
    let (kind, detail) = match fault {
        Fault::Unwritten(reg) => (
            EmulatorErrorKind::UnwrittenRegister,
            format!(
                "reads register {}, which this thread never wrote",
                plan.entry.registers[reg as usize].0
            ),
        ),
        Fault::Access {
            kind,
            space,
            store,
            address,
            size,
        } => {
            let what = match (space, store) {
                (Space::Global, false) => "global load",
                (Space::Global, true) => "global store",
                (Space::Shared, false) => "shared load",
                (Space::Shared, true) => "shared store",
            };
            let problem = if kind == EmulatorErrorKind::Misaligned {
                format!("is not {size}-byte aligned")
            } else if space == Space::Global {
                format!("is {}", memory.describe(address))
            } else {
                format!(
                    "is outside every shared variable ({} bytes declared)",
                    plan.entry.shared_bytes
                )
            };
            return EmulatorError::at_line(
                kind,
                line,
                format!("{place}: {what} of {size} bytes at {address:#x} {problem}"),
            );
        }
        Fault::StepLimit => (
            EmulatorErrorKind::StepLimit,
            format!(
                "executed more than {} instructions (a runaway loop, or a thread that never \
                 reaches the barrier its block waits at)",
                plan.options.max_instructions_per_thread
            ),
        ),
    };
    EmulatorError::at_line(kind, line, format!("{place}: {detail}"))
}

/// What the thread does after one instruction.
enum Flow {
    Next,
    Jump(usize),
    Stop(Stop),
}

/// One thread's view of the state it may touch while running.
struct Thread<'a> {
    plan: &'a LaunchPlan<'a>,
    specials: &'a Specials,
    registers: &'a mut [u64],
    written: &'a mut [bool],
    shared: &'a mut [u8],
    memory: &'a mut Memory,
    stats: &'a mut LaunchStats,
}

fn run_thread(
    plan: &LaunchPlan<'_>,
    thread: usize,
    specials: &Specials,
    state: &mut BlockState,
    memory: &mut Memory,
    stats: &mut LaunchStats,
) -> Result<Stop, Fault> {
    let code = &plan.entry.code;
    let span = thread * state.register_count..(thread + 1) * state.register_count;
    let limit = plan.options.max_instructions_per_thread;
    let start_steps = state.steps[thread];
    let mut steps = start_steps;
    let mut pc = state.pcs[thread] as usize;
    let mut view = Thread {
        plan,
        specials,
        registers: &mut state.registers[span.clone()],
        written: &mut state.written[span],
        shared: &mut state.shared,
        memory,
        stats,
    };
    let outcome = loop {
        let Some(instruction) = code.get(pc) else {
            break Ok(Stop::Exit);
        };
        if steps >= limit {
            break Err(Fault::StepLimit);
        }
        steps += 1;
        if let Some(guard) = instruction.guard {
            match view.read(Src::Reg(guard.predicate)) {
                Ok(value) if (value != 0) == guard.negated => {
                    pc += 1;
                    continue;
                }
                Ok(_) => {}
                Err(fault) => break Err(fault),
            }
        }
        match view.execute(instruction.op) {
            Ok(Flow::Next) => pc += 1,
            Ok(Flow::Jump(target)) => pc = target,
            Ok(Flow::Stop(stop)) => break Ok(stop),
            Err(fault) => break Err(fault),
        }
    };
    view.stats.instructions += steps - start_steps;
    state.steps[thread] = steps;
    state.pcs[thread] = pc as u32;
    outcome
}

impl Thread<'_> {
    #[inline]
    fn read(&self, src: Src) -> Result<u64, Fault> {
        match src {
            Src::Reg(reg) => {
                if self.written[reg as usize] {
                    Ok(self.registers[reg as usize])
                } else {
                    Err(Fault::Unwritten(reg))
                }
            }
            Src::Imm(bits) => Ok(bits),
            Src::Special(special) => Ok(self.specials.get(special)),
        }
    }

    #[inline]
    fn write(&mut self, dst: Reg, value: u64) {
        self.registers[dst as usize] = value;
        self.written[dst as usize] = true;
    }

    fn address(&self, address: Address) -> Result<u64, Fault> {
        match address {
            Address::Reg { base, offset } => {
                Ok(self.read(Src::Reg(base))?.wrapping_add_signed(offset))
            }
            Address::Absolute(address) => Ok(address),
        }
    }

    fn execute(&mut self, op: Op) -> Result<Flow, Fault> {
        match op {
            Op::LoadParam { dst, param } => {
                self.write(dst, self.plan.params[usize::from(param)]);
            }
            Op::Mov { dst, src } => {
                let value = self.read(src)?;
                self.write(dst, value);
            }
            Op::Unary { op, ty, dst, a } => {
                let a = self.read(a)?;
                self.write(dst, eval::unary(op, ty, a));
            }
            Op::Binary { op, ty, dst, a, b } => {
                let (a, b) = (self.read(a)?, self.read(b)?);
                self.write(dst, eval::binary(op, ty, a, b));
            }
            Op::Ternary {
                op,
                ty,
                dst,
                a,
                b,
                c,
            } => {
                let (a, b, c) = (self.read(a)?, self.read(b)?, self.read(c)?);
                self.write(dst, eval::ternary(op, ty, a, b, c));
            }
            Op::Convert { to, from, dst, a } => {
                let a = self.read(a)?;
                self.write(dst, eval::convert(to, from, a));
            }
            Op::Setp {
                compare,
                ty,
                dst,
                a,
                b,
            } => {
                let (a, b) = (self.read(a)?, self.read(b)?);
                self.write(dst, u64::from(eval::setp(compare, ty, a, b)));
            }
            Op::Select {
                dst,
                a,
                b,
                predicate,
            } => {
                let predicate = self.read(predicate)?;
                let (a, b) = (self.read(a)?, self.read(b)?);
                self.write(dst, if predicate != 0 { a } else { b });
            }
            Op::Load {
                space,
                size,
                dst,
                address,
            } => {
                let address = self.address(address)?;
                let fault = |kind| Fault::Access {
                    kind,
                    space,
                    store: false,
                    address,
                    size,
                };
                if address % u64::from(size) != 0 {
                    return Err(fault(EmulatorErrorKind::Misaligned));
                }
                let value = match space {
                    Space::Global => {
                        self.stats.global_loads += 1;
                        self.memory.load(address, size)
                    }
                    Space::Shared => {
                        self.stats.shared_loads += 1;
                        shared_range(&self.plan.entry.shared, address, size)
                            .map(|range| read_le(&self.shared[range]))
                    }
                };
                let value = value.ok_or_else(|| fault(EmulatorErrorKind::OutOfBounds))?;
                self.write(dst, value);
            }
            Op::Store {
                space,
                size,
                address,
                src,
            } => {
                let address = self.address(address)?;
                let value = self.read(src)?;
                let fault = |kind| Fault::Access {
                    kind,
                    space,
                    store: true,
                    address,
                    size,
                };
                if address % u64::from(size) != 0 {
                    return Err(fault(EmulatorErrorKind::Misaligned));
                }
                let stored = match space {
                    Space::Global => {
                        self.stats.global_stores += 1;
                        self.memory.store(address, size, value)
                    }
                    Space::Shared => {
                        self.stats.shared_stores += 1;
                        match shared_range(&self.plan.entry.shared, address, size) {
                            Some(range) => {
                                self.shared[range]
                                    .copy_from_slice(&value.to_le_bytes()[..usize::from(size)]);
                                true
                            }
                            None => false,
                        }
                    }
                };
                if !stored {
                    return Err(fault(EmulatorErrorKind::OutOfBounds));
                }
            }
            Op::Barrier => return Ok(Flow::Stop(Stop::Barrier)),
            Op::Branch { target } => return Ok(Flow::Jump(target as usize)),
            Op::Exit => return Ok(Flow::Stop(Stop::Exit)),
        }
        Ok(Flow::Next)
    }
}

/// The byte range of a shared access, if one shared variable holds it entirely.
fn shared_range(
    variables: &[SharedVariable],
    address: u64,
    size: u8,
) -> Option<std::ops::Range<usize>> {
    let end = address.checked_add(u64::from(size))?;
    variables
        .iter()
        .any(|v| address >= v.offset && end <= v.offset + v.size)
        .then_some(address as usize..end as usize)
}
