//! Native memory (`nalloc`, `nfree`, `nload`, `nstore`, `ncheck`): buffers the app holds
//! outside its managed heap, carried out by the app's
//! [`NativeBuffers`](marvin_runtime::NativeBuffers). A misuse (a bad size, an
//! unknown or freed handle, an index out of bounds) is a runtime error at the instruction.

use marvin_runtime::{BarrierMode, NativeBuffers};

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::Op;
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// One native-memory instruction: its operands popped and its result pushed here,
    /// the work out of line in [`run_native`]. The loop's state never leaves the loop:
    /// an out-of-line handler taking `&mut self` made the dispatch loop keep its
    /// instruction and stack cursors in memory, a store on every op of every program.
    #[inline(always)]
    pub fn native(&mut self, op: &Op) -> Result<(), Trap> {
        let arity = match op {
            Op::NFree => 1,
            Op::NStore => 3,
            _ => 2,
        };
        let mut args = [0i64; 3];
        for k in (0..arity).rev() {
            args[k] = self.pop() as i64;
        }
        match run_native(self.app.native(), op, args) {
            Ok(Some(v)) => {
                self.push(v);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(self.fail(Pos::Here, e)),
        }
    }
}

/// The native-memory instruction `op` on `args` (its operands in push order): the value
/// it pushes, if any, or the runtime error's message.
#[inline(never)]
fn run_native(n: &NativeBuffers, op: &Op, args: [i64; 3]) -> Result<Option<u64>, String> {
    let [a, b, c] = args;
    match op {
        Op::NAlloc => n.alloc(a, b).map(|h| Some(h as u64)),
        Op::NFree => n.free(a).map(|()| None),
        Op::NLoad => n.load(a, b).map(|v| Some(u64::from(v))),
        Op::NStore => n.store(a, b, c).map(|()| None),
        Op::NCheck => n.check(a, b).map(Some),
        _ => Ok(None),
    }
    .map_err(|e| e.to_string())
}
