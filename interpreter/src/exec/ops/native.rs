//! Native memory (`nalloc`, `nfree`, `nload`, `nstore`, `ncheck`): buffers the app holds
//! outside its managed heap, carried out by the app's
//! [`NativeBuffers`](marvin_runtime::NativeBuffers). A misuse (a bad size, an
//! unknown or freed handle, an index out of bounds) is a runtime error at the instruction.

use marvin_runtime::BarrierMode;

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::Op;
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// One native-memory instruction.
    #[inline(never)]
    pub fn native(&mut self, op: &Op) -> Result<(), Trap> {
        let n = self.app.native();
        let done = match op {
            Op::NAlloc => {
                let seed = self.pop() as i64;
                let len = self.pop() as i64;
                n.alloc(len, seed).map(|h| self.push(h as u64))
            }
            Op::NFree => {
                let h = self.pop() as i64;
                n.free(h)
            }
            Op::NLoad => {
                let i = self.pop() as i64;
                let h = self.pop() as i64;
                n.load(h, i).map(|b| self.push(u64::from(b)))
            }
            Op::NStore => {
                let v = self.pop() as i64;
                let i = self.pop() as i64;
                let h = self.pop() as i64;
                n.store(h, i, v)
            }
            Op::NCheck => {
                let seed = self.pop() as i64;
                let h = self.pop() as i64;
                n.check(h, seed).map(|d| self.push(d))
            }
            _ => Ok(()),
        };
        done.map_err(|e| self.fail(Pos::Here, e.to_string()))
    }
}
