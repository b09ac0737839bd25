//! The executor's fused field ops, run on a real app: each computes what its by-name form
//! computes and sets the same access bits in the object header.

use std::sync::Arc;

use marvin_app::{App, RunConfig};
use marvin_interpreter::exec::op::Op;
use marvin_interpreter::exec::{Loaded, Thread};
use marvin_runtime::{AccessKind, NoBarriers};
use marvin_runtime::{HeaderBits, ObjKind};

/// One method per fused atomics idiom, each taking the object as its argument.
const IDIOMS: &str = "
.class C
  .field v int
.end
.method main args=0 locals=0
  push 0
  ret
.end
.method add_two args=1 locals=1
  load 0
  push 2
  xadd C.v
  pop
  push 0
  ret
.end
.method read args=1 locals=2
  load 0
  getfield C.v
  store 1
  load 1
  ret
.end
.method bump args=1 locals=2
  load 0
  load 0
  getfield C.v
  dup
  push 1
  add
  cas C.v
  jz fail
  push 1
  ret
fail:
  push 0
  ret
.end
";

#[test]
fn fused_field_ops_compute_and_set_access_bits_as_by_name_ones_do() {
    for resolve in [true, false] {
        let p = marvin_interpreter::load::load_bytes("t.masm", IDIOMS.as_bytes()).expect("loads");
        let vp = marvin_interpreter::verify::verify(p).expect("verifies");
        let loaded = Arc::new(Loaded::translated(vp, resolve));
        let fused = |m: usize, f: fn(&Op) -> bool| loaded.code[m].iter().any(f);
        assert_eq!(fused(1, |o| matches!(o, Op::LoadXadd(..))), resolve);
        assert_eq!(
            fused(2, |o| matches!(o, Op::LoadGetFieldStore(..))),
            resolve
        );
        assert_eq!(fused(3, |o| matches!(o, Op::CasBr(..))), resolve);
        let app = Arc::new(App::new(loaded, RunConfig::default()).expect("app"));
        let mut thread = Thread::new(&app).expect("thread");
        let h = app
            .heap()
            .alloc(ObjKind::Instance, 0, 1, 0)
            .expect("allocates");
        let bits = || {
            let a = app
                .heap()
                .access::<NoBarriers>(h, AccessKind::Read)
                .expect("live");
            a.obj().header().bits()
        };
        let mut run = |m: u32| {
            let a = app
                .heap()
                .access::<NoBarriers>(h, AccessKind::Read)
                .expect("live");
            a.obj()
                .header()
                .clear(HeaderBits::READ | HeaderBits::WRITE | HeaderBits::DIRTY);
            thread.invoke(m, &[h.value()]).expect("runs")
        };
        assert_eq!(run(1), 0, "resolve={resolve}");
        let b = bits();
        assert!(b.contains(HeaderBits::WRITE | HeaderBits::DIRTY), "{b:?}");
        assert_eq!(run(2), 2, "resolve={resolve}");
        let b = bits();
        assert!(b.contains(HeaderBits::READ), "{b:?}");
        assert!(
            !b.intersects(HeaderBits::WRITE | HeaderBits::DIRTY),
            "{b:?}"
        );
        assert_eq!(run(3), 1, "resolve={resolve}");
        let b = bits();
        assert!(b.contains(HeaderBits::WRITE | HeaderBits::DIRTY), "{b:?}");
        assert_eq!(run(2), 3, "resolve={resolve}");
    }
}
