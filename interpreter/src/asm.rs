//! The assembler: MASM text to a [`Program`].
//!
//! Two passes. The first reads line by line, checking the syntax of every directive and
//! instruction and keeping names as written; the second resolves names (constants,
//! classes, fields, methods, labels) once every declaration is known, so a name may be used
//! before it is declared. Every problem found is reported, one `FILE:LINE: message` each.
//!
//! Beyond the language reference: a label may be followed by an instruction on the same
//! line (`loop: load 0`), and the `args=`/`locals=` keys of `.method` may come in either
//! order. `push NAME` is kept as [`Instr::PushConst`] until [`Program::link`].

use std::collections::HashMap;

use crate::diag::{Diagnostics, Sink};
use crate::isa::{Class, Const, ElemKind, Field, FieldRef, Instr, Method, Program, Ty};
use crate::lexer::{is_name, parse_int, tokenize, Tok};
use crate::mnemonic::{lookup, parse_elem, OpKind};
use crate::verify::MAX_LOCALS;

/// Assembles MASM text. `file` names the source in diagnostics and in [`Program::file`].
pub fn assemble(file: &str, src: &str) -> Result<Program, Diagnostics> {
    let mut parser = Parser::new(file);
    for (index, text) in src.split('\n').enumerate() {
        let line = u32::try_from(index + 1).unwrap_or(u32::MAX);
        parser.line(line, text.strip_suffix('\r').unwrap_or(text));
    }
    parser.finish()
}

/// An operand as written, names not yet resolved.
enum Arg {
    None,
    Int(i64),
    Name(String),
    Field(String, String),
    Elem(ElemKind),
    Str(String),
}

struct RawInstr {
    line: u32,
    kind: OpKind,
    arg: Arg,
}

struct RawMethod {
    name: String,
    line: u32,
    args: u32,
    locals: u32,
    code: Vec<RawInstr>,
    /// Label name, its line, and the index of the instruction it marks.
    labels: Vec<(String, u32, u32)>,
}

/// Where the parser is: at top level, or inside the class or method with that index.
enum Ctx {
    Top,
    Class(usize),
    Method(usize),
}

struct Parser {
    sink: Sink,
    file: String,
    ctx: Ctx,
    consts: Vec<(Const, u32)>,
    classes: Vec<Class>,
    /// Source line of each field, parallel to `classes[i].fields`.
    field_lines: Vec<Vec<u32>>,
    methods: Vec<RawMethod>,
}

impl Parser {
    fn new(file: &str) -> Self {
        Parser {
            sink: Sink::new(file),
            file: file.to_owned(),
            ctx: Ctx::Top,
            consts: Vec::new(),
            classes: Vec::new(),
            field_lines: Vec::new(),
            methods: Vec::new(),
        }
    }

    fn line(&mut self, line: u32, text: &str) {
        let toks = match tokenize(text) {
            Ok(toks) => toks,
            Err(message) => return self.sink.error(line, message),
        };
        let Some(Tok::Word(first)) = toks.first() else {
            if !toks.is_empty() {
                self.sink
                    .error(line, "a line cannot start with a string literal");
            }
            return;
        };
        if first.starts_with('.') {
            return self.directive(line, first, &toks[1..]);
        }
        let mut rest = &toks[..];
        if let Some(label) = first.strip_suffix(':') {
            self.label(line, label);
            rest = &toks[1..];
            if rest.is_empty() {
                return;
            }
        }
        self.instruction(line, rest);
    }

    fn label(&mut self, line: u32, label: &str) {
        if !is_name(label) {
            return self.sink.error(line, format!("bad label name `{label}`"));
        }
        match self.ctx {
            Ctx::Method(m) => {
                let method = &mut self.methods[m];
                let at = method.code.len() as u32;
                method.labels.push((label.to_owned(), line, at));
            }
            _ => self.sink.error(line, "a label must be inside a method"),
        }
    }

    fn directive(&mut self, line: u32, word: &str, ops: &[Tok]) {
        match word {
            ".class" => self.class(line, ops),
            ".field" => self.field(line, ops),
            ".method" => self.method(line, ops),
            ".const" => self.constant(line, ops),
            ".end" => self.end(line, ops),
            _ => self.sink.error(line, format!("unknown directive `{word}`")),
        }
    }

    /// Checks that `ops` is exactly `n` words and returns them.
    fn words<'t>(
        &mut self,
        line: u32,
        what: &str,
        ops: &'t [Tok],
        n: usize,
    ) -> Option<Vec<&'t str>> {
        let words: Vec<&str> = ops
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(*w),
                Tok::Str(_) => None,
            })
            .collect();
        if words.len() != ops.len() || words.len() != n {
            self.sink.error(
                line,
                format!("`{what}` takes {n} operand(s), found {}", ops.len()),
            );
            return None;
        }
        Some(words)
    }

    /// Checks a declared name, reporting a bad one.
    fn name(&mut self, line: u32, what: &str, name: &str) -> String {
        if !is_name(name) {
            self.sink.error(line, format!("bad {what} name `{name}`"));
        }
        name.to_owned()
    }

    fn at_top(&mut self, line: u32, what: &str) -> bool {
        if matches!(self.ctx, Ctx::Top) {
            return true;
        }
        self.sink.error(
            line,
            format!("`{what}` inside a class or method (missing `.end`?)"),
        );
        false
    }

    fn class(&mut self, line: u32, ops: &[Tok]) {
        if !self.at_top(line, ".class") {
            return;
        }
        let name = match self.words(line, ".class", ops, 1) {
            Some(w) => self.name(line, "class", w[0]),
            None => String::new(),
        };
        self.classes.push(Class {
            name,
            fields: Vec::new(),
            line,
        });
        self.field_lines.push(Vec::new());
        self.ctx = Ctx::Class(self.classes.len() - 1);
    }

    fn field(&mut self, line: u32, ops: &[Tok]) {
        let Ctx::Class(c) = self.ctx else {
            return self.sink.error(line, "`.field` outside a class");
        };
        let Some(w) = self.words(line, ".field", ops, 2) else {
            return;
        };
        let name = self.name(line, "field", w[0]);
        let ty = match w[1] {
            "int" => Ty::Int,
            "ref" => Ty::Ref,
            other => {
                return self.sink.error(
                    line,
                    format!("bad field type `{other}` (expected int or ref)"),
                )
            }
        };
        self.classes[c].fields.push(Field { name, ty });
        self.field_lines[c].push(line);
    }

    fn method(&mut self, line: u32, ops: &[Tok]) {
        if !self.at_top(line, ".method") {
            return;
        }
        let (mut name, mut args, mut locals) = (String::new(), None, None);
        if let Some(w) = self.words(line, ".method", ops, 3) {
            name = self.name(line, "method", w[0]);
            for kv in &w[1..] {
                let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
                let slot = match key {
                    "args" => &mut args,
                    "locals" => &mut locals,
                    _ => {
                        self.sink.error(
                            line,
                            format!("bad `.method` operand `{kv}` (expected args=N or locals=N)"),
                        );
                        continue;
                    }
                };
                if slot.is_some() {
                    self.sink.error(line, format!("`{key}=` given twice"));
                }
                match parse_int(value).ok().and_then(|v| u32::try_from(v).ok()) {
                    Some(v) if v <= MAX_LOCALS => *slot = Some(v),
                    _ => self.sink.error(
                        line,
                        format!("bad `{key}=` value `{value}` (expected 0..={MAX_LOCALS})"),
                    ),
                }
            }
            if args.is_none() || locals.is_none() {
                self.sink
                    .error(line, "`.method` needs both args=N and locals=N");
            }
        }
        let (args, locals) = (args.unwrap_or(0), locals.unwrap_or(0));
        if locals < args {
            self.sink
                .error(line, format!("locals={locals} is less than args={args}"));
        }
        self.methods.push(RawMethod {
            name,
            line,
            args,
            locals,
            code: Vec::new(),
            labels: Vec::new(),
        });
        self.ctx = Ctx::Method(self.methods.len() - 1);
    }

    fn constant(&mut self, line: u32, ops: &[Tok]) {
        if !self.at_top(line, ".const") {
            return;
        }
        let Some(w) = self.words(line, ".const", ops, 2) else {
            return;
        };
        let name = self.name(line, "constant", w[0]);
        match parse_int(w[1]) {
            Ok(value) => self.consts.push((Const { name, value }, line)),
            Err(message) => self.sink.error(line, message),
        }
    }

    fn end(&mut self, line: u32, ops: &[Tok]) {
        if !ops.is_empty() {
            self.sink.error(line, "`.end` takes no operands");
        }
        if matches!(self.ctx, Ctx::Top) {
            self.sink
                .error(line, "`.end` without `.class` or `.method`");
        }
        self.ctx = Ctx::Top;
    }

    fn instruction(&mut self, line: u32, toks: &[Tok]) {
        let Ctx::Method(m) = self.ctx else {
            return self
                .sink
                .error(line, "an instruction must be inside a method");
        };
        let mnemonic = match &toks[0] {
            Tok::Word(w) => *w,
            Tok::Str(_) => return self.sink.error(line, "expected an instruction"),
        };
        let Some(kind) = lookup(mnemonic) else {
            return self
                .sink
                .error(line, format!("unknown instruction `{mnemonic}`"));
        };
        let ops = &toks[1..];
        let arg = match kind {
            OpKind::Plain(_) => {
                if !ops.is_empty() {
                    return self
                        .sink
                        .error(line, format!("`{mnemonic}` takes no operand"));
                }
                Arg::None
            }
            _ => match self.operand(mnemonic, kind, ops) {
                Ok(arg) => arg,
                Err(message) => return self.sink.error(line, message),
            },
        };
        self.methods[m].code.push(RawInstr { line, kind, arg });
    }

    /// Parses the single operand of an instruction that takes one.
    fn operand(&self, mnemonic: &str, kind: OpKind, ops: &[Tok]) -> Result<Arg, String> {
        let [op] = ops else {
            return Err(format!(
                "`{mnemonic}` takes one operand, found {}",
                ops.len()
            ));
        };
        if let OpKind::Str(_) = kind {
            return match op {
                Tok::Str(s) => Ok(Arg::Str(s.clone())),
                Tok::Word(w) => Err(format!(
                    "`{mnemonic}` expects a string literal, found `{w}`"
                )),
            };
        }
        let Tok::Word(word) = op else {
            return Err(format!("`{mnemonic}` does not take a string literal"));
        };
        let named = |what: &str| {
            if is_name(word) {
                Ok(Arg::Name((*word).to_owned()))
            } else {
                Err(format!("bad {what} name `{word}`"))
            }
        };
        match kind {
            OpKind::Push => {
                if word.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
                    parse_int(word).map(Arg::Int)
                } else {
                    named("constant")
                }
            }
            OpKind::Local(_) => match parse_int(word) {
                Ok(v) => u32::try_from(v)
                    .map(|v| Arg::Int(v.into()))
                    .map_err(|_| format!("bad local index `{word}`")),
                Err(_) => Err(format!("bad local index `{word}`")),
            },
            OpKind::Label(_) => named("label"),
            OpKind::Method(_) => named("method"),
            OpKind::Class(_) => named("class"),
            OpKind::Field(_) => match word.split_once('.') {
                Some((c, f)) if is_name(c) && is_name(f) => Ok(Arg::Field(c.into(), f.into())),
                _ => Err(format!("bad field operand `{word}` (expected CLASS.FIELD)")),
            },
            OpKind::Elem => parse_elem(word).map(Arg::Elem).ok_or_else(|| {
                format!("bad array element kind `{word}` (expected int, byte or ref)")
            }),
            OpKind::Plain(_) | OpKind::Str(_) => unreachable!("handled above"),
        }
    }

    fn finish(self) -> Result<Program, Diagnostics> {
        let Parser {
            mut sink,
            file,
            ctx,
            consts,
            classes,
            field_lines,
            methods,
        } = self;
        match ctx {
            Ctx::Top => {}
            Ctx::Class(c) => {
                let class = &classes[c];
                sink.error(class.line, format!("`.class {}` has no `.end`", class.name));
            }
            Ctx::Method(m) => {
                let method = &methods[m];
                sink.error(
                    method.line,
                    format!("`.method {}` has no `.end`", method.name),
                );
            }
        }
        let names = Names {
            consts: index(
                &mut sink,
                "constant",
                consts.iter().map(|(c, l)| (c.name.clone(), *l)),
            ),
            classes: index(
                &mut sink,
                "class",
                classes.iter().map(|c| (c.name.clone(), c.line)),
            ),
            fields: classes
                .iter()
                .zip(&field_lines)
                .map(|(c, lines)| {
                    let what = format!("field in class `{}`", c.name);
                    index(
                        &mut sink,
                        &what,
                        c.fields
                            .iter()
                            .map(|f| f.name.clone())
                            .zip(lines.iter().copied()),
                    )
                })
                .collect(),
            methods: index(
                &mut sink,
                "method",
                methods.iter().map(|m| (m.name.clone(), m.line)),
            ),
        };
        let mut strings = Interner::default();
        let methods = methods
            .into_iter()
            .map(|m| resolve_method(&mut sink, &names, &mut strings, m))
            .collect();
        sink.finish()?;
        Ok(Program {
            file,
            classes,
            methods,
            strings: strings.strings,
            consts: consts.into_iter().map(|(c, _)| c).collect(),
        })
    }
}

/// Name tables for resolution.
struct Names {
    consts: HashMap<String, u32>,
    classes: HashMap<String, u32>,
    fields: Vec<HashMap<String, u32>>,
    methods: HashMap<String, u32>,
}

/// Indexes `items` (name, line) by name, reporting every name declared twice.
fn index(
    sink: &mut Sink,
    what: &str,
    items: impl Iterator<Item = (String, u32)>,
) -> HashMap<String, u32> {
    let mut map: HashMap<String, (u32, u32)> = HashMap::new();
    for (i, (name, line)) in items.enumerate() {
        if name.is_empty() {
            continue; // a bad declaration, already reported
        }
        if let Some(&(_, first)) = map.get(&name) {
            sink.error(
                line,
                format!("duplicate {what} `{name}` (first declared at line {first})"),
            );
        } else {
            map.insert(name, (i as u32, line));
        }
    }
    map.into_iter().map(|(k, (i, _))| (k, i)).collect()
}

#[derive(Default)]
struct Interner {
    strings: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Interner {
    fn intern(&mut self, s: String) -> u32 {
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.ids.insert(s, id);
        id
    }
}

fn resolve_method(sink: &mut Sink, names: &Names, strings: &mut Interner, m: RawMethod) -> Method {
    let labels = index(
        sink,
        &format!("label in method `{}`", m.name),
        m.labels.iter().map(|(n, l, _)| (n.clone(), *l)),
    );
    for (label, line, at) in &m.labels {
        if *at as usize >= m.code.len() {
            sink.error(*line, format!("label `{label}` marks no instruction"));
        }
    }
    let target = |sink: &mut Sink, label: &str, line: u32| -> u32 {
        match labels.get(label) {
            Some(&i) => m.labels[i as usize].2,
            None => {
                sink.error(line, format!("undefined label `{label}`"));
                0
            }
        }
    };
    let mut code = Vec::with_capacity(m.code.len());
    let mut lines = Vec::with_capacity(m.code.len());
    for ins in &m.code {
        let line = ins.line;
        let lookup_in =
            |sink: &mut Sink, map: &HashMap<String, u32>, what: &str, name: &str| match map
                .get(name)
            {
                Some(&id) => id,
                None => {
                    sink.error(line, format!("undefined {what} `{name}`"));
                    0
                }
            };
        let instr = match (ins.kind, &ins.arg) {
            (OpKind::Plain(i), _) => i,
            (OpKind::Push, Arg::Int(n)) => Instr::Push(*n),
            (OpKind::Push, Arg::Name(n)) => {
                Instr::PushConst(lookup_in(sink, &names.consts, "constant", n))
            }
            (OpKind::Local(f), Arg::Int(n)) => f(*n as u32),
            (OpKind::Label(f), Arg::Name(n)) => f(target(sink, n, line)),
            (OpKind::Method(f), Arg::Name(n)) => f(lookup_in(sink, &names.methods, "method", n)),
            (OpKind::Class(f), Arg::Name(n)) => f(lookup_in(sink, &names.classes, "class", n)),
            (OpKind::Field(f), Arg::Field(c, name)) => {
                let class = lookup_in(sink, &names.classes, "class", c);
                let field = match names.fields.get(class as usize).and_then(|fs| fs.get(name)) {
                    Some(&i) => i,
                    None => {
                        if names.classes.contains_key(c) {
                            sink.error(line, format!("undefined field `{c}.{name}`"));
                        }
                        0
                    }
                };
                f(FieldRef { class, field })
            }
            (OpKind::Elem, Arg::Elem(k)) => Instr::NewArray(*k),
            (OpKind::Str(f), Arg::Str(s)) => f(strings.intern(s.clone())),
            _ => unreachable!("operand kinds are checked while parsing"),
        };
        code.push(instr);
        lines.push(line);
    }
    Method {
        name: m.name,
        args: m.args,
        locals: m.locals,
        code,
        lines,
        line: m.line,
    }
}
