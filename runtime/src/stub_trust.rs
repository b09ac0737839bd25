//! The checks the fault and restore paths make of the shared reclaim table against what
//! the app alone knows ([`crate::stub_bits::StubBits`]), and the record of objects found
//! damaged.
//!
//! The table's RESIDENT and CLEAN bits decide whether a checkpoint is read back over an
//! object's pages and whether those pages may be dropped; another process (or a stray
//! write) can set or clear them. So:
//!
//! - a checkpoint is read back only while the stub says it is current
//!   ([`StubSpace::check_restorable`]): an object the table says is out but that was
//!   written after its checkpoint lost its newer bytes or is still in memory with them,
//!   and neither may be papered over with the older checkpoint;
//! - a restore that a write overlapped (the table said "out" under a live object) is
//!   damage too ([`StubSpace::check_restored`]);
//! - an object the table says is resident must have its header in its pages
//!   ([`StubSpace::check_pages_there`]): pages a reclaimer returned read zero.
//!
//! A failure marks the object damaged for good (every later access fails with the same
//! error), and, when the table is to blame, distrusts the table as any entry that fails
//! its checks does.

use crate::access::{AccessError, FaultError};
use crate::header::HeaderBits;
use crate::object::Obj;
use crate::reclaim_table::{EntryError, EntryFault};
use crate::stub::{Stub, StubSpace};

/// The status a run ends with after a runtime error (MASM's contract).
pub(crate) const RUNTIME_ERROR_STATUS: i32 = 70;

impl StubSpace {
    /// Before a checkpoint is read back into `stub`'s object because the table says it
    /// is out: the object is not damaged and its checkpoint holds its latest contents.
    /// `saved`: the stub has a checkpoint at all (its state's slot).
    pub fn check_restorable(&self, stub: &Stub, saved: bool) -> Result<(), AccessError> {
        if stub.bits.is_damaged() {
            return Err(self.damage_error(stub));
        }
        if !saved {
            return Err(self.table_damage(
                stub,
                "it says the object is out, but the object was never saved (the app's own \
                 record)",
            ));
        }
        if !stub.bits.is_current() {
            return Err(self.table_damage(
                stub,
                "it says the object is out, but the object was written after its last \
                 checkpoint (the app's own record): that checkpoint is stale",
            ));
        }
        Ok(())
    }

    /// After a checkpoint was read back, before the object is marked resident: nothing
    /// damaged it meanwhile and no write began during the restore (an access that was
    /// already under way when the table's RESIDENT bit was cleared under it).
    pub fn check_restored(&self, stub: &Stub) -> Result<(), AccessError> {
        if stub.bits.is_damaged() {
            return Err(self.damage_error(stub));
        }
        if !stub.bits.is_current() {
            return Err(self.table_damage(
                stub,
                "it said the object was out while the object was being written: the \
                 restore may have overwritten newer bytes",
            ));
        }
        Ok(())
    }

    /// Whether a resident object's pages hold it: a stubbed object's header always
    /// carries STUB, and pages a reclaimer returned read zero, so a table that says
    /// "resident" over returned pages is caught here rather than read as zeroes.
    pub(crate) fn check_pages_there(&self, stub: &Stub, obj: Obj<'_>) -> Result<(), AccessError> {
        if obj.header().bits().contains(HeaderBits::STUB) {
            return Ok(());
        }
        Err(self.table_damage(
            stub,
            "it says the object is resident, but its pages were returned to the system \
             (its header reads zero)",
        ))
    }

    /// Whether the in-process reclaimer may drop `stub`'s pages, by what the app alone
    /// knows: its checkpoint is current and it is not damaged. (The table's CLEAN bit
    /// only publishes the first.)
    pub fn may_drop_pages(&self, stub: &Stub) -> bool {
        stub.bits.is_current() && !stub.bits.is_damaged()
    }

    /// Damage the table is to blame for: the object is marked damaged, the table
    /// distrusted, and the error names both.
    fn table_damage(&self, stub: &Stub, what: &str) -> AccessError {
        let fault = EntryFault {
            table: self.table.describe(),
            id: stub.entry,
            object: stub.handle.value(),
            reason: EntryError::Corrupt(what.to_string()),
        };
        let _ = self.distrusted.set(fault.to_string());
        self.record_damage(stub, fault.to_string());
        AccessError::Fault {
            handle: stub.handle.value(),
            reason: Box::new(fault),
        }
    }

    /// Marks `stub`'s object damaged for good, with why (the first reason is kept):
    /// every later access, save or restore of it fails with [`StubSpace::damage_error`].
    pub fn record_damage(&self, stub: &Stub, why: String) {
        self.damage.lock().entry(stub.handle).or_insert(why);
        stub.bits.set_damaged();
    }

    /// The error an access to a damaged object fails with: why the runtime marked it,
    /// or what the swap layer found ([`crate::stub::StubHooks::damage`]).
    pub fn damage_error(&self, stub: &Stub) -> AccessError {
        let recorded = self.damage.lock().get(&stub.handle).cloned();
        let reason: FaultError = match recorded {
            Some(why) => why.into(),
            None => self
                .hooks
                .damage(stub)
                .unwrap_or_else(|| "it was found damaged".into()),
        };
        AccessError::Fault {
            handle: stub.handle.value(),
            reason,
        }
    }

    /// An access whose object turned out damaged while it touched it, dropped without
    /// asking ([`crate::barrier::Access::check`]): its bytes may be wrong and its holder
    /// never heard so, so the process ends with the runtime error's status rather than go
    /// on with them. (The executor always asks, and reports the error at its position.)
    pub(crate) fn die_unchecked(&self, stub: &Stub) -> ! {
        use std::io::Write;
        let e = self.damage_error(stub);
        let _ = writeln!(std::io::stderr(), "error: {e}");
        std::process::exit(RUNTIME_ERROR_STATUS)
    }
}
