//! References pinned as collector roots: an app's table of them ([`PinnedRoots`]), one
//! pin ([`Pin`]) held while a message or a thread start holds a reference, and the
//! message a MASM `send` posts with its pin ([`MasmMessage`]).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

/// An app's references pinned as roots by pending messages and starting threads (count
/// per value).
pub type PinnedRoots = Mutex<HashMap<u64, u32>>;

/// What a MASM message carries.
pub struct MasmMessage {
    pub method: u32,
    pub arg: u64,
    pub(crate) _pin: Option<Pin>,
}

/// Keeps a reference alive as a root while a message or a thread start holds it. It
/// holds its app's pinned roots weakly: pending messages live in the app's own queue,
/// and a strong reference would keep an ended app's table alive forever.
pub struct Pin {
    roots: Weak<PinnedRoots>,
    value: u64,
}

impl Pin {
    pub fn new(roots: &Arc<PinnedRoots>, value: u64) -> Option<Pin> {
        if value == 0 {
            return None;
        }
        *roots.lock().entry(value).or_insert(0) += 1;
        Some(Pin {
            roots: Arc::downgrade(roots),
            value,
        })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let Some(roots) = self.roots.upgrade() else {
            return;
        };
        let mut p = roots.lock();
        if let Some(n) = p.get_mut(&self.value) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.value);
            }
        }
    }
}
