//! The per-method abstract interpreter of the verifier.
//!
//! The state at an instruction is its operand stack as a list of type variables. A
//! worklist visits each reachable instruction once: the first path to reach an
//! instruction fixes its stack; every other path must bring the same depth, and its types
//! are unified slot by slot with the recorded ones, so no instruction needs a second visit.

use super::unify::{concrete, Mismatch, Unifier, Var, INT, REF};
use super::{field_type, MAX_STACK, MAX_STACK_CELLS};
use crate::diag::Sink;
use crate::isa::{FieldRef, Instr, Method, MethodId, Program, Ty};
use crate::mnemonic::{name as mnemonic, ty_name};

/// Where each method's variables are.
pub(super) struct Vars<'a> {
    /// The variable of local slot 0 of each method; slot `i` is `local_base[m] + i`.
    pub local_base: &'a [Var],
    /// The return-value variable of method 0; method `m`'s is `ret_base + m`.
    pub ret_base: Var,
}

impl Vars<'_> {
    pub fn local(&self, m: MethodId, slot: u32) -> Var {
        self.local_base[m as usize] + slot
    }

    pub fn ret(&self, m: MethodId) -> Var {
        self.ret_base + m
    }
}

/// A place where a value is passed to a method's argument.
pub(super) struct Site {
    pub line: u32,
    /// `call`, `send`, `sendfront` or `spawn`.
    pub what: &'static str,
    pub callee: MethodId,
    pub arg: u32,
}

/// What the analysis found in one method, still in terms of variables.
pub(super) struct MethodFacts {
    /// The stack at the entry of each instruction (`None` when unreachable).
    pub states: Vec<Option<Vec<Var>>>,
    /// The result variable of each `aload`, by pc.
    pub aloads: Vec<(u32, Var)>,
    /// The stored value's variable of each `astore`, by pc.
    pub astores: Vec<(u32, Var)>,
    pub max_stack: u32,
}

/// Everything the analysis of one method works with.
pub(super) struct Cx<'a, 'p> {
    pub program: &'p Program,
    pub vars: &'a Vars<'a>,
    pub uf: &'a mut Unifier,
    pub sink: &'a mut Sink,
    pub sites: &'a mut Vec<Site>,
    /// Stack-type entries recorded so far in the whole program.
    pub cells: &'a mut usize,
}

/// The analysis of this method stops (the problem is already reported).
struct Stop;

/// How many operands an instruction pops.
fn pops(p: &Program, instr: &Instr) -> usize {
    use Instr as I;
    match *instr {
        I::Push(_) | I::PushConst(_) | I::Null | I::Load(_) | I::Jmp(_) | I::New(_) | I::Quit => 0,
        I::PrintS(_) | I::Mark(_) | I::Time | I::CpuTime | I::UserTime | I::Gc => 0,
        I::Store(_) | I::Pop | I::Dup | I::Neg | I::Jz(_) | I::Jnz(_) | I::Jnull(_) => 1,
        I::Jnonnull(_) | I::Ret | I::GetField(_) | I::NewArray(_) | I::ALen => 1,
        I::MonitorEnter | I::MonitorExit | I::Remove(_) | I::Has(_) | I::Spawn(_) => 1,
        I::Sleep | I::Print | I::PrintC | I::Assert | I::Halt | I::NFree => 1,
        I::NAlloc | I::NLoad | I::NCheck => 2,
        I::NStore => 3,
        I::Swap | I::Add | I::Sub | I::Mul | I::Div | I::Rem | I::And | I::Or | I::Xor => 2,
        I::Shl | I::Shr | I::Lt | I::Le | I::Gt | I::Ge | I::Eq | I::Ne | I::RefEq => 2,
        I::PutField(_) | I::ALoad(_) | I::Xadd(_) | I::SendFront(_) => 2,
        I::AStore(_) | I::Cas(_) | I::Send(_) => 3,
        I::Call(m) => p.methods.get(m as usize).map_or(0, |m| m.args as usize),
    }
}

impl Cx<'_, '_> {
    /// Analyses method `id`; `None` when a problem stopped the analysis.
    pub fn analyze(&mut self, id: MethodId) -> Option<MethodFacts> {
        let m = &self.program.methods[id as usize];
        let mut facts = MethodFacts {
            states: vec![None; m.code.len()],
            aloads: Vec::new(),
            astores: Vec::new(),
            max_stack: 0,
        };
        if m.code.is_empty() {
            self.sink.error(
                m.line,
                format!("method `{}` is empty: control falls off its end", m.name),
            );
            return None;
        }
        facts.states[0] = Some(Vec::new());
        let mut work = vec![0u32];
        while let Some(pc) = work.pop() {
            let mut stack = facts.states[pc as usize].clone().unwrap_or_default();
            let line = m.lines[pc as usize];
            let instr = m.code[pc as usize];
            let need = pops(self.program, &instr);
            if stack.len() < need {
                self.underflow(line, &instr, need, stack.len());
                return None;
            }
            let (falls_through, target) = self.step(id, pc, line, &instr, &mut stack, &mut facts);
            let depth = stack.len().max(need);
            if depth > MAX_STACK as usize {
                self.sink
                    .error(line, format!("operand stack deeper than {MAX_STACK}"));
                return None;
            }
            facts.max_stack = facts.max_stack.max(depth as u32);
            // The fall-through successor is pushed last so it is visited first: problems
            // are then found in source order where possible.
            let succs = [target, falls_through.then_some(pc + 1)];
            for succ in succs.into_iter().flatten() {
                if succ as usize >= m.code.len() {
                    self.sink.error(
                        line,
                        format!("control can fall off the end of method `{}` here", m.name),
                    );
                    return None;
                }
                self.join(m, &mut facts, &mut work, succ, &stack, line)
                    .ok()?;
            }
        }
        Some(facts)
    }

    #[cold]
    fn underflow(&mut self, line: u32, instr: &Instr, need: usize, have: usize) {
        let message = match *instr {
            Instr::Call(callee) => format!(
                "wrong arity: `call {}` needs {need} argument(s), the stack holds {have}",
                self.program.methods[callee as usize].name
            ),
            _ => format!(
                "stack underflow: `{}` needs {need} value(s), the stack holds {have}",
                mnemonic(instr)
            ),
        };
        self.sink.error(line, message);
    }

    /// Brings `stack` to instruction `succ`, coming from an instruction at `line`.
    fn join(
        &mut self,
        m: &Method,
        facts: &mut MethodFacts,
        work: &mut Vec<u32>,
        succ: u32,
        stack: &[Var],
        line: u32,
    ) -> Result<(), Stop> {
        let at = m.lines[succ as usize];
        match &facts.states[succ as usize] {
            None => {
                *self.cells += stack.len();
                if *self.cells > MAX_STACK_CELLS {
                    self.sink.error(
                        line,
                        format!("program too large to verify: operand stacks exceed {MAX_STACK_CELLS} entries in all"),
                    );
                    return Err(Stop);
                }
                facts.states[succ as usize] = Some(stack.to_vec());
                work.push(succ);
                Ok(())
            }
            Some(old) if old.len() != stack.len() => {
                self.sink.error(
                    line,
                    format!(
                        "stack depth differs where paths meet at line {at}: {} here, {} on another path",
                        stack.len(),
                        old.len()
                    ),
                );
                Err(Stop)
            }
            Some(old) => {
                for (slot, (&here, &there)) in stack.iter().zip(old).enumerate() {
                    if let Err(mm) = self.uf.unify(here, there) {
                        self.sink.error(
                            line,
                            format!(
                                "stack slot {slot} holds {} here but {} on another path where paths meet at line {at}",
                                ty_name(mm.found),
                                ty_name(mm.expected)
                            ),
                        );
                    }
                }
                Ok(())
            }
        }
    }

    /// Requires `v` to have the type of `want`; `role` names the operand.
    fn expect(&mut self, v: Var, want: Var, line: u32, instr: &Instr, role: &str) {
        if let Err(mm) = self.uf.unify(v, want) {
            self.mismatch(line, instr, role, mm);
        }
    }

    #[cold]
    fn mismatch(&mut self, line: u32, instr: &Instr, role: &str, mm: Mismatch) {
        self.sink.error(
            line,
            format!(
                "type mismatch: `{}` {role} must be {}, found {}",
                mnemonic(instr),
                ty_name(mm.expected),
                ty_name(mm.found)
            ),
        );
    }

    /// Passes `v` to argument `arg` of `callee`.
    fn pass(&mut self, v: Var, callee: MethodId, arg: u32, line: u32, what: &'static str) {
        let site = self.sites.len() as u32;
        self.sites.push(Site {
            line,
            what,
            callee,
            arg,
        });
        if let Err(mm) = self.uf.flow(v, self.vars.local(callee, arg), site) {
            self.sink.error(
                line,
                format!(
                    "`{what} {name}` passes {} as argument {arg} of `{name}`, which takes {}",
                    ty_name(mm.found),
                    ty_name(mm.expected),
                    name = self.program.methods[callee as usize].name
                ),
            );
        }
    }

    fn field_var(&self, f: FieldRef) -> Var {
        concrete(field_type(self.program, f).unwrap_or(Ty::Int))
    }

    /// Applies one instruction to `stack` (which holds at least `pops` values); returns
    /// whether control falls through and the branch target, if any.
    fn step(
        &mut self,
        me: MethodId,
        pc: u32,
        line: u32,
        instr: &Instr,
        stack: &mut Vec<Var>,
        facts: &mut MethodFacts,
    ) -> (bool, Option<u32>) {
        use Instr as I;
        let pop = |stack: &mut Vec<Var>| stack.pop().unwrap_or(INT);
        match *instr {
            I::Push(_) | I::PushConst(_) | I::Time | I::CpuTime | I::UserTime => stack.push(INT),
            I::Null | I::New(_) => stack.push(REF),
            I::Load(i) => stack.push(self.vars.local(me, i)),
            I::Store(i) => {
                let v = pop(stack);
                if let Err(mm) = self.uf.unify(v, self.vars.local(me, i)) {
                    self.sink.error(
                        line,
                        format!(
                            "type mismatch: local {i} holds {} (the type of its first store), `store {i}` stores {}",
                            ty_name(mm.expected),
                            ty_name(mm.found)
                        ),
                    );
                }
            }
            I::Pop => {
                pop(stack);
            }
            I::Dup => {
                let v = pop(stack);
                stack.extend([v, v]);
            }
            I::Swap => {
                let n = stack.len();
                stack.swap(n - 1, n - 2);
            }
            I::Add
            | I::Sub
            | I::Mul
            | I::Div
            | I::Rem
            | I::And
            | I::Or
            | I::Xor
            | I::Shl
            | I::Shr => {
                self.operands(stack, 2, INT, line, instr);
                stack.push(INT);
            }
            I::Lt | I::Le | I::Gt | I::Ge | I::Eq | I::Ne => {
                self.operands(stack, 2, INT, line, instr);
                stack.push(INT);
            }
            I::Neg => {
                self.operands(stack, 1, INT, line, instr);
                stack.push(INT);
            }
            I::RefEq => {
                self.operands(stack, 2, REF, line, instr);
                stack.push(INT);
            }
            I::Jmp(t) => return (false, Some(t)),
            I::Jz(t) | I::Jnz(t) => {
                self.operands(stack, 1, INT, line, instr);
                return (true, Some(t));
            }
            I::Jnull(t) | I::Jnonnull(t) => {
                self.operands(stack, 1, REF, line, instr);
                return (true, Some(t));
            }
            I::Call(callee) => {
                let n = self.program.methods[callee as usize].args as usize;
                let args = stack.split_off(stack.len() - n);
                for (i, v) in args.into_iter().enumerate() {
                    self.pass(v, callee, i as u32, line, "call");
                }
                stack.push(self.vars.ret(callee));
            }
            I::Ret => {
                let v = pop(stack);
                if let Err(mm) = self.uf.unify(v, self.vars.ret(me)) {
                    self.sink.error(
                        line,
                        format!(
                            "type mismatch: method `{}` returns {} elsewhere, this `ret` returns {}",
                            self.program.methods[me as usize].name,
                            ty_name(mm.expected),
                            ty_name(mm.found)
                        ),
                    );
                }
                return (false, None);
            }
            I::Halt => {
                self.operands(stack, 1, INT, line, instr);
                return (false, None);
            }
            I::GetField(f) => {
                self.operands(stack, 1, REF, line, instr);
                stack.push(self.field_var(f));
            }
            I::PutField(f) => {
                let v = pop(stack);
                self.expect(v, self.field_var(f), line, instr, "value");
                self.operands(stack, 1, REF, line, instr);
            }
            I::NewArray(_) => {
                self.operands(stack, 1, INT, line, instr);
                stack.push(REF);
            }
            I::ALoad(_) => {
                self.operands(stack, 1, INT, line, instr);
                self.operands(stack, 1, REF, line, instr);
                let e = self.uf.fresh();
                facts.aloads.push((pc, e));
                stack.push(e);
            }
            I::AStore(_) => {
                let v = pop(stack);
                facts.astores.push((pc, v));
                self.operands(stack, 1, INT, line, instr);
                self.operands(stack, 1, REF, line, instr);
            }
            I::ALen => {
                self.operands(stack, 1, REF, line, instr);
                stack.push(INT);
            }
            I::Cas(f) => {
                let ty = self.field_var(f);
                let new = pop(stack);
                self.expect(new, ty, line, instr, "new value");
                let expected = pop(stack);
                self.expect(expected, ty, line, instr, "expected value");
                self.operands(stack, 1, REF, line, instr);
                stack.push(INT);
            }
            I::Xadd(_) => {
                self.operands(stack, 1, INT, line, instr);
                self.operands(stack, 1, REF, line, instr);
                stack.push(INT);
            }
            I::MonitorEnter | I::MonitorExit => self.operands(stack, 1, REF, line, instr),
            I::Send(target) | I::SendFront(target) => {
                let what = mnemonic(instr);
                if matches!(instr, I::Send(_)) {
                    self.operands(stack, 1, INT, line, instr);
                }
                let arg = pop(stack);
                self.pass(arg, target, 1, line, what);
                let code = pop(stack);
                self.expect(code, INT, line, instr, "`what` code");
                self.pass(INT, target, 0, line, what);
            }
            I::Remove(_) => self.operands(stack, 1, INT, line, instr),
            I::Has(_) => {
                self.operands(stack, 1, INT, line, instr);
                stack.push(INT);
            }
            I::Spawn(target) => {
                let arg = pop(stack);
                self.pass(arg, target, 0, line, "spawn");
            }
            I::Sleep | I::Print | I::PrintC | I::Assert | I::NFree => {
                self.operands(stack, 1, INT, line, instr)
            }
            I::NStore => self.operands(stack, 3, INT, line, instr),
            I::NAlloc | I::NLoad | I::NCheck => {
                self.operands(stack, 2, INT, line, instr);
                stack.push(INT);
            }
            I::Quit | I::PrintS(_) | I::Mark(_) | I::Gc => {}
        }
        (true, None)
    }

    /// Pops `n` operands that must all have the type of `want`.
    fn operands(&mut self, stack: &mut Vec<Var>, n: usize, want: Var, line: u32, instr: &Instr) {
        for _ in 0..n {
            let v = stack.pop().unwrap_or(want);
            let role = if want == REF {
                "reference operand"
            } else {
                "int operand"
            };
            self.expect(v, want, line, instr, role);
        }
    }
}
