//! The app's side of the executor's [`AppBinding`]: what the interpreter loop asks of the
//! app it runs in. Every method is `#[inline]`: the executor is monomorphised over
//! [`App`], and these calls sit where the loop used to read the app's fields directly.

use std::sync::Arc;
use std::time::Instant;

use marvin_interpreter::exec::{AppBinding, Fault, Loaded, Post};
use marvin_runtime::trace::names::CodeLocation;
use marvin_runtime::Heap;
use marvin_runtime::NativeBuffers;
use marvin_runtime::Safepoints;
use marvin_runtime::{Holder, Monitors};

use crate::app::App;
use crate::{messages, threads};

impl AppBinding for App {
    #[inline]
    fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    #[inline]
    fn heap(&self) -> &Heap {
        &self.heap
    }

    #[inline]
    fn safepoints(&self) -> &Arc<Safepoints> {
        &self.safepoints
    }

    #[inline]
    fn monitors(&self) -> &Monitors {
        &self.monitors
    }

    #[inline]
    fn native(&self) -> &NativeBuffers {
        &self.native
    }

    #[inline]
    fn barriers(&self) -> bool {
        self.barriers
    }

    #[inline]
    fn stack_slots(&self) -> usize {
        self.stack_slots
    }

    #[inline]
    fn max_frames(&self) -> usize {
        self.max_frames
    }

    #[inline]
    fn collect_stopped(&self) {
        App::collect_stopped(self)
    }

    #[inline]
    fn write_out(&self, bytes: &[u8]) {
        App::write_out(self, bytes)
    }

    #[inline]
    fn now_ns(&self) -> u64 {
        App::now_ns(self)
    }

    #[inline]
    fn mark(&self, s: u32) {
        App::mark(self, s)
    }

    #[inline]
    fn is_traced(&self) -> bool {
        self.trace.is_enabled()
    }

    fn monitor_contended(
        &self,
        holder: Holder,
        from: CodeLocation<'_>,
        start_ns: u64,
        end_ns: u64,
    ) {
        self.trace
            .monitor_contention(holder.owner_tid, holder.waiters, from, start_ns, end_ns);
    }

    #[inline]
    fn post(app: &Arc<Self>, post: Post) -> Result<(), Fault> {
        messages::post(app, post)
    }

    #[inline]
    fn remove(&self, method: u32, what: i64) {
        messages::remove(self, method, what)
    }

    #[inline]
    fn has(&self, method: u32, what: i64) -> bool {
        messages::has(self, method, what)
    }

    #[inline]
    fn quit(&self) {
        messages::quit(self)
    }

    #[inline]
    fn spawn(app: &Arc<Self>, method: u32, arg: u64, arg_is_ref: bool) -> Result<(), Fault> {
        threads::spawn(app, method, arg, arg_is_ref)
    }

    #[inline]
    fn sleep_until(&self, until: Instant) {
        App::sleep_until(self, until)
    }
}
