//! The runtime's services: messages, threads and the looper (`send`, `sendfront`,
//! `remove`, `has`, `quit`, `spawn`, `sleep`, carried out by the app), output (`print`,
//! `printc`, `prints`), clocks and marks, `gc`, `assert` and `halt`. Each that can block
//! or collect saves the running op's position first, so a collection meanwhile sees this
//! frame's stack map.

use std::time::{Duration, Instant};

use marvin_runtime::BarrierMode;

use super::{Cx, Pos};
use crate::exec::binding::{AppBinding, Post, PostAt};
use crate::exec::interp::Thread;
use crate::exec::op::Op;
use crate::exec::trap::{Fault, Trap};
use crate::isa::Ty;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// A message, thread or looper instruction.
    #[inline(always)]
    pub fn message(&mut self, op: Op) -> Result<(), Trap> {
        self.save_pc();
        let pc = self.pc() - 1;
        self.sp = match self.th.message_op(op, self.sp, self.method, pc) {
            Ok(sp) => sp,
            Err(f) => return Err(f.at(self.method, pc as u32)),
        };
        Ok(())
    }

    /// `print`
    #[inline(always)]
    pub fn print(&mut self) {
        let v = self.pop() as i64;
        self.app.write_out(format!("{v}\n").as_bytes());
    }

    /// `printc`
    #[inline(always)]
    pub fn print_c(&mut self) {
        let v = self.pop();
        self.app.write_out(&[v as u8]);
    }

    /// `prints s`
    #[inline(always)]
    pub fn print_s(&mut self, s: u32) {
        let text = &self.loaded.vp.program.strings[s as usize];
        let mut line = String::with_capacity(text.len() + 1);
        line.push_str(text);
        line.push('\n');
        self.app.write_out(line.as_bytes());
    }

    /// `usertime`. The user-time clock is tick-accounted while the total is exact, so a
    /// raw user reading can pass the total by up to a tick: clamped so that user time is
    /// never more than user + system time.
    #[inline(always)]
    pub fn user_time(&mut self) {
        let user = marvin_runtime::cpuclock::thread_user_time_ns();
        self.push(user.min(marvin_runtime::cpuclock::thread_cpu_time_ns()))
    }

    /// `gc`
    #[inline(always)]
    pub fn gc(&mut self) {
        self.save_pc();
        self.th.collect(&[]);
    }

    /// `assert`
    #[inline(always)]
    pub fn assert(&mut self) -> Result<(), Trap> {
        if self.pop() == 0 {
            return Err(self.fail(Pos::Here, "assertion failed"));
        }
        Ok(())
    }
}

impl<A: AppBinding> Thread<A> {
    /// Executes one message, thread or looper instruction at `method`+`pc` on the value
    /// stack whose top is `sp`: pops its operands, asks the app to carry it out, and
    /// returns the new top.
    pub(in crate::exec) fn message_op(
        &mut self,
        op: Op,
        mut sp: usize,
        method: u32,
        pc: usize,
    ) -> Result<usize, Fault> {
        let app = self.app.clone();
        let arg_is_ref = |depth_from_top: usize| {
            let types = &app.loaded().vp.info[method as usize].stack_types[pc];
            types.len() >= depth_from_top && types[types.len() - depth_from_top] == Ty::Ref
        };
        let pop = |sp: &mut usize| {
            *sp -= 1;
            self.stack.get(*sp)
        };
        match op {
            Op::Send(m) | Op::SendFront(m) => {
                let front = matches!(op, Op::SendFront(_));
                let arg_is_ref = arg_is_ref(if front { 1 } else { 2 });
                let when = if front {
                    PostAt::Front
                } else {
                    PostAt::Delayed {
                        ms: (pop(&mut sp) as i64).max(0) as u64,
                    }
                };
                let arg = pop(&mut sp);
                let what = pop(&mut sp) as i64;
                A::post(
                    &app,
                    Post {
                        method: m,
                        what,
                        arg,
                        arg_is_ref,
                        when,
                    },
                )?;
            }
            Op::Remove(m) => {
                let what = pop(&mut sp) as i64;
                app.remove(m, what);
            }
            Op::Has(m) => {
                let what = pop(&mut sp) as i64;
                let has = app.has(m, what);
                self.stack.set(sp, has as u64);
                sp += 1;
            }
            Op::Quit => app.quit(),
            Op::Spawn(m) => {
                let arg_is_ref = arg_is_ref(1);
                let arg = pop(&mut sp);
                A::spawn(&app, m, arg, arg_is_ref)?;
            }
            Op::Sleep => {
                let ms = pop(&mut sp) as i64;
                let until = Instant::now() + Duration::from_millis(ms.max(0) as u64);
                let a = app.clone();
                self.blocking(&[], || a.sleep_until(until));
                if app.safepoints().is_terminating() {
                    return Err(Fault::Terminated);
                }
            }
            _ => unreachable!("not a message instruction: {op:?}"),
        }
        Ok(sp)
    }
}
