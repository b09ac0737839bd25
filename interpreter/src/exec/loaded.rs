//! A verified program translated for the executor: its ops (translated and fused once,
//! at load), its class layouts and, for by-name execution, its name tables.

use super::op::{layouts, translate, translate_by_name, ClassLayout, NameTables, Op};
use crate::isa::VerifiedProgram;

/// A verified program translated for the executor.
pub struct Loaded {
    pub vp: VerifiedProgram,
    pub code: Vec<Vec<Op>>,
    pub layouts: Vec<ClassLayout>,
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
            .map(|m| {
                let mut code: Vec<Op> = m
                    .code
                    .iter()
                    .map(|&i| tr(&vp.program, &layouts, i))
                    .collect();
                if fuse {
                    super::fuse::fuse(&mut code);
                }
                code
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
            names,
        }
    }
}
