//! A verified program translated for the executor: its ops (translated and fused once,
//! at load), its class layouts, one call descriptor per method (what `call` needs of its
//! callee, so that a call does one lookup) and, for by-name execution, its name tables.

use super::op::{layouts, translate, translate_by_name, ClassLayout, NameTables, Op};
use crate::isa::VerifiedProgram;

/// What a `call` needs of its callee, computed once at load from the verifier's
/// [`crate::isa::MethodInfo`]: one table lookup on the call path instead of the method's
/// declaration and its verifier facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallDesc {
    /// Arguments: the caller's top operands, left in place as the callee's first locals.
    pub args: u32,
    /// Locals, arguments included (those past the arguments start at zero).
    pub locals: u32,
    /// Value-stack slots the frame may use: its locals, its deepest operand stack and one
    /// more (the bound a call checks against the stack's capacity).
    pub need: u32,
}

/// A verified program translated for the executor.
pub struct Loaded {
    pub vp: VerifiedProgram,
    pub code: Vec<Vec<Op>>,
    pub layouts: Vec<ClassLayout>,
    /// One call descriptor per method, indexed as `code`.
    pub calls: Vec<CallDesc>,
    /// Class and field names, for by-name execution (empty when operands are resolved).
    pub names: NameTables,
}

impl Loaded {
    /// The program with field operands resolved once, at load.
    pub fn new(vp: VerifiedProgram) -> Loaded {
        Loaded::translated(vp, true)
    }

    /// The program translated with field operands resolved at load (`resolve`) or by name
    /// on every execution (for comparison).
    pub fn translated(vp: VerifiedProgram, resolve: bool) -> Loaded {
        Loaded::translated_with(vp, resolve, true)
    }

    /// As [`Loaded::translated`], with superinstructions (`fuse`, the normal runtime) or
    /// one op per instruction (`marvin run --no-fuse`, to check the fused code against).
    pub fn translated_with(vp: VerifiedProgram, resolve: bool, fuse: bool) -> Loaded {
        let tr = if resolve {
            translate
        } else {
            translate_by_name
        };
        let layouts = layouts(&vp.program);
        let code = vp
            .program
            .methods
            .iter()
            .zip(&vp.info)
            .map(|(m, mi)| {
                let mut code: Vec<Op> = m
                    .code
                    .iter()
                    .map(|&i| tr(&vp.program, &layouts, i))
                    .collect();
                if fuse {
                    let frame = super::regs::Frame {
                        locals: mi.local_types.len() as u32,
                        max_stack: mi.max_stack,
                        stack_types: &mi.stack_types,
                    };
                    super::fuse::fuse(&mut code, Some(&frame));
                }
                code
            })
            .collect();
        let calls = vp
            .program
            .methods
            .iter()
            .zip(&vp.info)
            .map(|(m, mi)| {
                let locals = mi.local_types.len() as u32;
                CallDesc {
                    args: m.args,
                    locals,
                    need: locals.saturating_add(mi.max_stack).saturating_add(1),
                }
            })
            .collect();
        let names = if resolve {
            NameTables::default()
        } else {
            NameTables::new(&vp.program, &layouts)
        };
        Loaded {
            vp,
            code,
            layouts,
            calls,
            names,
        }
    }
}
