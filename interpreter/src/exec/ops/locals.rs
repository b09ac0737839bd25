//! Constants, locals and operand-stack moves: `push`, `load`, `store`, `pop`, `dup`,
//! `swap`, and the fused `load a; load b`.

use marvin_runtime::BarrierMode;

use super::Cx;
use crate::exec::binding::AppBinding;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    #[inline(always)]
    pub fn load(&mut self, i: u32) {
        self.push(self.local(i as usize));
    }

    #[inline(always)]
    pub fn store(&mut self, i: u32) {
        let v = self.pop();
        self.set_local(i as usize, v);
    }

    #[inline(always)]
    pub fn dup(&mut self) {
        let v = self.stk.get(self.sp - 1);
        self.push(v);
    }

    #[inline(always)]
    pub fn swap(&mut self) {
        let b = self.stk.get(self.sp - 1);
        let a = self.stk.get(self.sp - 2);
        self.stk.set(self.sp - 1, a);
        self.stk.set(self.sp - 2, b);
    }

    /// `load a; load b`
    #[inline(always)]
    pub fn load_load(&mut self, a: u32, b: u32) {
        let (x, y) = (self.local(a as usize), self.local(b as usize));
        self.push(x);
        self.push(y);
        self.advance(1);
    }
}
