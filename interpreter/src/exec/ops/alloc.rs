//! Allocation: `new` and `newarray`, from the thread's allocation buffer, collecting (a
//! safepoint) when the heap asks for it; the running op's position is saved first so the
//! collector sees this frame's stack map.

use marvin_runtime::BarrierMode;
use marvin_runtime::ObjKind;
use marvin_runtime::MAX_ARRAY_LEN;

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::ARRAY_CLASS;
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `new C`
    #[inline(always)]
    pub fn new_instance(&mut self, c: u32) -> Result<(), Trap> {
        self.save_pc();
        let l = &self.loaded.layouts[c as usize];
        match self.th.alloc(ObjKind::Instance, c, l.slots, l.nrefs) {
            Ok(h) => self.push(h),
            Err(f) => return Err(f.at(self.method, (self.pc() - 1) as u32)),
        }
        Ok(())
    }

    /// `newarray` of the length on the stack
    #[inline(always)]
    pub fn new_array(&mut self, kind: ObjKind) -> Result<(), Trap> {
        let n = self.stk.get(self.sp - 1) as i64;
        if n < 0 {
            return Err(self.fail(Pos::Here, "negative array length"));
        }
        if n as u64 > MAX_ARRAY_LEN {
            return Err(self.fail(Pos::Here, "out of memory"));
        }
        self.save_pc();
        match self.th.alloc(kind, ARRAY_CLASS, n as u32, 0) {
            Ok(h) => {
                self.sp -= 1;
                self.push(h)
            }
            Err(f) => return Err(f.at(self.method, (self.pc() - 1) as u32)),
        }
        Ok(())
    }
}
