//! MASM programs shared by the front-end tests.
#![allow(dead_code)]

use marvin_interpreter::isa::Program;

/// The example of the language reference.
pub const FIB: &str = "
.class Node
  .field next ref
  .field value int
.end

.method main args=0 locals=2
  push 30
  call fib
  print
  push 0
  ret
.end

.method fib args=1 locals=1
  load 0
  push 2
  lt
  jz recurse
  load 0
  ret
recurse:
  load 0
  push 1
  sub
  call fib
  load 0
  push 2
  sub
  call fib
  add
  ret
.end
";

/// Every instruction at least once, in a program the verifier accepts.
pub const EVERYTHING: &str = r#"
.const N 4
.class Obj
  .field count int
  .field link ref
.end

.method main args=0 locals=6
  push N
  newarray ref
  store 0            ; local 0: ref[] of int[]
  push 0
  store 1            ; local 1: index
loop:
  load 1
  push N
  lt
  jz filled
  load 0
  load 1
  push 3
  newarray int
  astore
  load 1
  push 1
  add
  store 1
  jmp loop
filled:
  load 0
  push 2
  aload
  alen
  print              ; 3
  load 0
  push 1
  aload
  push 0
  push 0x7
  astore
  new Obj
  dup
  store 2
  monitorenter
  load 2
  push 5
  xadd Obj.count
  pop
  load 2
  push 5
  push 9
  cas Obj.count
  assert
  load 2
  load 2
  putfield Obj.link
  load 2
  getfield Obj.link
  null
  refeq
  jnz same
  push 0
  halt
same:
  load 2
  monitorexit
  load 2
  jnull never
  load 2
  jnonnull fine
never:
  push 1
  halt
fine:
  push 1
  push 2
  swap
  sub
  neg
  push 3
  mul
  push 2
  div
  push 5
  rem
  push 1
  and
  push 6
  or
  push 2
  xor
  push 1
  shl
  push 1
  shr
  push 4
  le
  push 1
  ge
  push 0
  gt
  push 1
  eq
  push 0
  ne
  printc
  prints "done\t\"ok\""
  mark "round"
  time
  cputime
  usertime
  add
  add
  pop
  gc
  push 1
  sleep
  push 7
  load 2
  push 10
  send onmsg
  push 8
  null
  sendfront onmsg
  push 7
  remove onmsg
  push 8
  has onmsg
  pop
  load 0
  spawn worker
  push 1
  byte_array:
  newarray byte
  pop
  quit
  push 0
  ret
.end

.method onmsg args=2 locals=2
  load 0
  print
  push 0
  ret
.end

.method worker args=1 locals=2
  load 0
  push 0
  aload
  pop
  load 0
  push 1
  aload
  push 0
  aload
  print
  load 0
  push 0
  load 0
  push 1
  aload
  astore
  push 0
  ret
.end
"#;

/// A program with constants, used by the `-D` tests.
pub const SIZED: &str = "
.const SIZE 10
.const STEP -0x2
.method main args=0 locals=1
  push SIZE
  push STEP
  add
  print
  prints \"size\\tdone\"
  push 0
  ret
.end
";

/// All three programs.
pub fn samples() -> [&'static str; 3] {
    [FIB, EVERYTHING, SIZED]
}

/// The program with every source line set to 0, for comparisons across re-assembly.
pub fn without_lines(mut p: Program) -> Program {
    for c in &mut p.classes {
        c.line = 0;
    }
    for m in &mut p.methods {
        m.line = 0;
        m.lines.iter_mut().for_each(|l| *l = 0);
    }
    p
}
