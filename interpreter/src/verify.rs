//! The verifier: proves a linked [`Program`] safe to run and computes the facts the
//! executor and the collector rely on ([`MethodInfo`]).
//!
//! Three steps:
//! 1. structural checks over the whole program (names unique, `main` present with no
//!    arguments, every operand in range, message and thread targets of the right arity,
//!    size limits), all reported together; nothing else runs if one fails;
//! 2. one abstract interpretation per method (`flow`) over its control-flow graph,
//!    visiting each reachable instruction once: stack underflow, depths and types that
//!    differ where paths meet, code that can fall off the end;
//! 3. whole-program type inference (`unify`): each local slot (arguments included), each
//!    return value and each `aload` result is a type variable; uses unify them with `int`
//!    or `ref`. Values passed as arguments *flow* into the callee's argument type, so an
//!    argument the callee never constrains (left `Any`) accepts either type.
//!
//! The output replaces every variable by its solution (`Any` when unconstrained), and
//! rewrites `aload`/`astore` with the element type found. Every value the program uses as
//! a reference (dereferences, compares, stores in a ref field, passes to a ref argument,
//! returns to such a use) sits in `Ref` slots all the way. `Any` slots may still hold a
//! reference at run time in two cases the executor must keep in mind: an argument the
//! callee never uses as either type, and an array element moved by `aload` … `astore`
//! (possibly through locals and untyped arguments) without any other use.
//!
//! `halt` ends the app, so like `ret` it has no successor. Every step is linear in the
//! program's size apart from the near-constant union-find factor, and bounded by
//! [`MAX_LOCALS`], [`MAX_STACK`] and a cap on the total size of the per-instruction stack
//! types.

mod flow;
mod unify;

use std::collections::HashMap;

use crate::diag::{Diagnostics, Sink};
use crate::isa::{FieldRef, Instr, Method, MethodId, MethodInfo, Program, Ty, VerifiedProgram};
use crate::mnemonic::{name as mnemonic, ty_name};
use flow::{MethodFacts, Site};
use unify::{Unifier, Var};

/// Most local slots a method may declare.
pub const MAX_LOCALS: u32 = 65_535;
/// Deepest operand stack a method may use.
pub const MAX_STACK: u32 = 65_535;
/// Most stack-type entries (sum over all instructions of the stack depth) for a program.
pub const MAX_STACK_CELLS: usize = 1 << 23;
/// Most local slots over the whole program.
pub const MAX_TOTAL_LOCALS: usize = 1 << 22;

/// Verifies a linked program.
pub fn verify(mut p: Program) -> Result<VerifiedProgram, Diagnostics> {
    let mut sink = Sink::new(&p.file);
    let entry = check_structure(&p, &mut sink);
    sink.finish()?;
    let Some(entry) = entry else {
        return Err(Diagnostics::one(
            &p.file,
            0,
            "the program has no `main` method",
        ));
    };
    let mut sink = Sink::new(&p.file);

    // One variable per local slot, then one per method for its return value.
    let mut local_base = Vec::with_capacity(p.methods.len());
    let mut next: usize = 2;
    for m in &p.methods {
        local_base.push(next as Var);
        next += m.locals as usize;
    }
    let ret_base = next;
    let mut uf = Unifier::new(next - 2 + p.methods.len());
    let vars = flow::Vars {
        local_base: &local_base,
        ret_base: ret_base as Var,
    };
    let mut sites = Vec::new();
    let mut cells = 0usize;
    let mut facts = Vec::with_capacity(p.methods.len());
    for id in 0..p.methods.len() {
        let mut cx = flow::Cx {
            program: &p,
            vars: &vars,
            uf: &mut uf,
            sink: &mut sink,
            sites: &mut sites,
            cells: &mut cells,
        };
        facts.push(cx.analyze(id as MethodId));
    }
    for (flow, m) in std::mem::take(&mut uf.flow_errors) {
        let site: &Site = &sites[flow.site as usize];
        sink.error(
            site.line,
            format!(
                "`{} {}` passes {} as argument {} of `{}`, which takes {}",
                site.what,
                p.methods[site.callee as usize].name,
                ty_name(m.found),
                site.arg,
                p.methods[site.callee as usize].name,
                ty_name(m.expected)
            ),
        );
    }
    sink.finish()?;

    let file = p.file.clone();
    let mut info = Vec::with_capacity(p.methods.len());
    for (id, (m, f)) in p.methods.iter_mut().zip(facts).enumerate() {
        // Analysis fails only after reporting an error, and errors returned above.
        let Some(f): Option<MethodFacts> = f else {
            return Err(Diagnostics::one(
                &file,
                m.line,
                "internal error: method not analysed",
            ));
        };
        for &(pc, v) in &f.aloads {
            m.code[pc as usize] = Instr::ALoad(uf.solve(v));
        }
        for &(pc, v) in &f.astores {
            m.code[pc as usize] = Instr::AStore(uf.solve(v));
        }
        let base = local_base[id];
        let local_types: Vec<Ty> = (0..m.locals).map(|i| uf.solve(base + i)).collect();
        let stack_types = f
            .states
            .iter()
            .map(|s| {
                s.as_ref()
                    .map_or_else(Vec::new, |s| s.iter().map(|&v| uf.solve(v)).collect())
            })
            .collect();
        info.push(MethodInfo {
            arg_types: local_types[..m.args as usize].to_vec(),
            ret_type: uf.solve(vars.ret(id as MethodId)),
            local_types,
            stack_types,
            max_stack: f.max_stack,
        });
    }
    Ok(VerifiedProgram {
        program: p,
        info,
        entry,
    })
}

/// Reports every name declared twice among `(name, line)` pairs.
fn duplicates<'a>(sink: &mut Sink, what: &str, items: impl Iterator<Item = (&'a str, u32)>) {
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for (name, line) in items {
        if let Some(first) = seen.get(name) {
            sink.error(
                line,
                format!("duplicate {what} `{name}` (first declared at line {first})"),
            );
        } else {
            seen.insert(name, line);
        }
    }
}

/// Program-wide checks that make the flow analysis safe to run; returns `main`'s id.
fn check_structure(p: &Program, sink: &mut Sink) -> Option<MethodId> {
    duplicates(
        sink,
        "class",
        p.classes.iter().map(|c| (c.name.as_str(), c.line)),
    );
    duplicates(
        sink,
        "method",
        p.methods.iter().map(|m| (m.name.as_str(), m.line)),
    );
    duplicates(
        sink,
        "constant",
        p.consts.iter().map(|c| (c.name.as_str(), 0)),
    );
    for c in &p.classes {
        duplicates(
            sink,
            "field",
            c.fields.iter().map(|f| (f.name.as_str(), c.line)),
        );
        for f in &c.fields {
            if f.ty == Ty::Any {
                sink.error(
                    c.line,
                    format!("field `{}.{}` must be int or ref", c.name, f.name),
                );
            }
        }
    }
    let total_locals: usize = p.methods.iter().map(|m| m.locals as usize).sum();
    if total_locals > MAX_TOTAL_LOCALS {
        sink.error(0, format!("the methods declare {total_locals} local slots in all; the limit is {MAX_TOTAL_LOCALS}"));
    }
    for m in &p.methods {
        check_method(p, m, sink);
    }
    let entry = p.method_id("main");
    match entry.map(|id| &p.methods[id as usize]) {
        None => sink.error(0, "the program has no `main` method"),
        Some(m) if m.args != 0 => sink.error(
            m.line,
            format!("`main` must take no arguments (it has args={})", m.args),
        ),
        Some(_) => {}
    }
    entry
}

fn check_method(p: &Program, m: &Method, sink: &mut Sink) {
    if m.locals < m.args {
        sink.error(
            m.line,
            format!(
                "method `{}`: locals={} is less than args={}",
                m.name, m.locals, m.args
            ),
        );
    }
    if m.locals > MAX_LOCALS {
        sink.error(
            m.line,
            format!(
                "method `{}`: locals={} exceeds the limit of {MAX_LOCALS}",
                m.name, m.locals
            ),
        );
    }
    if m.lines.len() != m.code.len() {
        sink.error(
            m.line,
            format!("method `{}`: line table does not match its code", m.name),
        );
        return;
    }
    let len = m.code.len();
    for (instr, &line) in m.code.iter().zip(&m.lines) {
        if let Some(problem) = operand_problem(p, m, len, instr) {
            sink.error(line, format!("`{}`: {problem}", mnemonic(instr)));
        }
    }
}

/// What is wrong with an instruction's operand, if anything.
fn operand_problem(p: &Program, m: &Method, len: usize, instr: &Instr) -> Option<String> {
    let method = |id: MethodId, args: Option<u32>| match p.methods.get(id as usize) {
        None => Some(format!("undefined method #{id}")),
        Some(t) => match args {
            Some(n) if t.args != n => Some(format!(
                "target `{}` must take {n} argument(s) (it has args={})",
                t.name, t.args
            )),
            _ => None,
        },
    };
    match *instr {
        Instr::PushConst(id) => Some(match p.consts.get(id as usize) {
            Some(c) => format!("constant `{}` was not linked", c.name),
            None => format!("undefined constant #{id}"),
        }),
        Instr::Load(i) | Instr::Store(i) if i >= m.locals => Some(format!(
            "local {i} out of range (method `{}` has locals={})",
            m.name, m.locals
        )),
        Instr::Jmp(t) | Instr::Jz(t) | Instr::Jnz(t) | Instr::Jnull(t) | Instr::Jnonnull(t)
            if t as usize >= len =>
        {
            Some(format!(
                "branch target {t} out of range (method `{}` has {len} instructions)",
                m.name
            ))
        }
        Instr::Call(id) => method(id, None),
        Instr::Send(id) | Instr::SendFront(id) | Instr::Remove(id) | Instr::Has(id) => {
            method(id, Some(2))
        }
        Instr::Spawn(id) => method(id, Some(1)),
        Instr::New(c) if c as usize >= p.classes.len() => Some(format!("undefined class #{c}")),
        Instr::GetField(f) | Instr::PutField(f) | Instr::Cas(f) => field_type(p, f).err(),
        Instr::Xadd(f) => match field_type(p, f) {
            Ok(Ty::Int) => None,
            Ok(_) => Some("xadd needs an int field".into()),
            Err(msg) => Some(msg),
        },
        Instr::PrintS(s) | Instr::Mark(s) if s as usize >= p.strings.len() => {
            Some(format!("undefined string #{s}"))
        }
        _ => None,
    }
}

/// The declared type of a field, or why the operand does not name one.
pub(crate) fn field_type(p: &Program, f: FieldRef) -> Result<Ty, String> {
    let class = p
        .classes
        .get(f.class as usize)
        .ok_or_else(|| format!("undefined class #{}", f.class))?;
    let field = class
        .fields
        .get(f.field as usize)
        .ok_or_else(|| format!("undefined field #{} of class `{}`", f.field, class.name))?;
    Ok(field.ty)
}
