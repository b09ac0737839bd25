//! Linking: applying `-D NAME=VALUE` overrides to a program's `.const` declarations and
//! lowering every `push NAME` ([`Instr::PushConst`]) to a plain [`Instr::Push`].
//!
//! Both the text and the binary form keep `PushConst`, so overrides work on either.

use crate::diag::{Diagnostics, Sink};
use crate::isa::{Instr, Program};
use crate::lexer::{is_name, parse_int};

impl Program {
    /// Applies `overrides` (later ones win) and lowers every constant push.
    /// An override of an undeclared constant, or a push of a constant id the program does
    /// not declare, is an error.
    pub fn link(&mut self, overrides: &[(String, i64)]) -> Result<(), Diagnostics> {
        let mut sink = Sink::new(&self.file);
        for (name, value) in overrides {
            match self.consts.iter_mut().find(|c| &c.name == name) {
                Some(c) => c.value = *value,
                None => sink.error(
                    0,
                    format!("-D {name}: the program declares no constant `{name}`"),
                ),
            }
        }
        for method in &mut self.methods {
            for (pc, instr) in method.code.iter_mut().enumerate() {
                if let Instr::PushConst(id) = *instr {
                    match self.consts.get(id as usize) {
                        Some(c) => *instr = Instr::Push(c.value),
                        None => {
                            let line = method.lines.get(pc).copied().unwrap_or(method.line);
                            sink.error(line, format!("push of undeclared constant #{id}"));
                        }
                    }
                }
            }
        }
        sink.finish()
    }
}

/// Why a command-line `NAME=VALUE` definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefineError {
    #[error("bad definition `{0}`: expected NAME=VALUE")]
    NotNameValue(String),
    #[error("bad definition `{def}`: `{name}` is not a constant name")]
    BadName { def: String, name: String },
    #[error("bad definition `{def}`: {reason}")]
    BadValue { def: String, reason: String },
}

/// Parses a command-line `NAME=VALUE` definition (VALUE decimal or `0x` hex, optional `-`).
pub fn parse_define(s: &str) -> Result<(String, i64), DefineError> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(DefineError::NotNameValue(s.to_string()));
    };
    if !is_name(name) {
        return Err(DefineError::BadName {
            def: s.to_string(),
            name: name.to_string(),
        });
    }
    let value = parse_int(value).map_err(|reason| DefineError::BadValue {
        def: s.to_string(),
        reason,
    })?;
    Ok((name.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::assemble;

    const SRC: &str =
        ".const N 10\n.method main args=0 locals=0\n push N\n print\n push 0\n ret\n.end\n";

    #[test]
    fn overrides_and_lowering() {
        let mut p = assemble("t.masm", SRC).unwrap();
        assert_eq!(p.methods[0].code[0], Instr::PushConst(0));
        p.link(&[("N".into(), 5), ("N".into(), -0x20)]).unwrap();
        assert_eq!(p.methods[0].code[0], Instr::Push(-32));
        assert_eq!(p.consts[0].value, -32);
    }

    #[test]
    fn default_value_without_override() {
        let mut p = assemble("t.masm", SRC).unwrap();
        p.link(&[]).unwrap();
        assert_eq!(p.methods[0].code[0], Instr::Push(10));
    }

    #[test]
    fn undeclared_override_is_named() {
        let mut p = assemble("t.masm", SRC).unwrap();
        let err = p.link(&[("M".into(), 1)]).unwrap_err();
        assert_eq!(err.0.len(), 1);
        assert!(err.to_string().starts_with("t.masm:0: -D M:"), "{err}");
    }

    #[test]
    fn bad_const_id_is_an_error() {
        let mut p = assemble("t.masm", SRC).unwrap();
        p.methods[0].code[0] = Instr::PushConst(7);
        let err = p.link(&[]).unwrap_err();
        assert_eq!(err.0[0].line, 3);
    }

    #[test]
    fn defines() {
        assert_eq!(parse_define("N=0x10"), Ok(("N".into(), 16)));
        assert_eq!(parse_define("a_b=-3"), Ok(("a_b".into(), -3)));
        assert!(parse_define("N").is_err());
        assert!(parse_define("1N=3").is_err());
        assert!(parse_define("N=three").is_err());
        assert!(parse_define("N=").is_err());
    }
}
