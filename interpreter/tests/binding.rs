//! The executor runs on any [`AppBinding`], not only marvin's app: a minimal binding
//! here (a heap, safepoints, monitors and a record of what the program asked for) sees
//! the message and thread instructions decoded as the spec says (operand order, delays,
//! which arguments are references) and output, marks and faults arrive where they should.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use marvin_interpreter::exec::{AppBinding, Fault, Loaded, Post, PostAt, Thread, Trap};
use marvin_runtime::trace::names::CodeLocation;
use marvin_runtime::NativeBuffers;
use marvin_runtime::Safepoints;
use marvin_runtime::{Heap, HeapConfig};
use marvin_runtime::{Holder, Monitors};

/// What the program asked of its app, in order.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Post(Post),
    Remove(u32, i64),
    Has(u32, i64),
    Quit,
    Spawn(u32, bool),
    Out(Vec<u8>),
    Mark(u32),
}

struct Recorder {
    loaded: Loaded,
    heap: Heap,
    safepoints: Arc<Safepoints>,
    monitors: Monitors,
    native: NativeBuffers,
    asked: Mutex<Vec<Asked>>,
    /// Whether posts fail as after `quit`.
    quitted: bool,
}

impl AppBinding for Recorder {
    fn loaded(&self) -> &Loaded {
        &self.loaded
    }
    fn heap(&self) -> &Heap {
        &self.heap
    }
    fn safepoints(&self) -> &Arc<Safepoints> {
        &self.safepoints
    }
    fn monitors(&self) -> &Monitors {
        &self.monitors
    }
    fn native(&self) -> &NativeBuffers {
        &self.native
    }
    fn barriers(&self) -> bool {
        true
    }
    fn stack_slots(&self) -> usize {
        1 << 12
    }
    fn max_frames(&self) -> usize {
        64
    }
    fn collect_stopped(&self) {}
    fn write_out(&self, bytes: &[u8]) {
        self.asked.lock().unwrap().push(Asked::Out(bytes.to_vec()));
    }
    fn now_ns(&self) -> u64 {
        0
    }
    fn mark(&self, s: u32) {
        self.asked.lock().unwrap().push(Asked::Mark(s));
    }
    fn is_traced(&self) -> bool {
        false
    }
    fn monitor_contended(&self, _: Holder, _: CodeLocation<'_>, _: u64, _: u64) {}
    fn post(app: &Arc<Self>, post: Post) -> Result<(), Fault> {
        if app.quitted {
            return Err(Fault::PostAfterQuit);
        }
        app.asked.lock().unwrap().push(Asked::Post(post));
        Ok(())
    }
    fn remove(&self, method: u32, what: i64) {
        self.asked.lock().unwrap().push(Asked::Remove(method, what));
    }
    fn has(&self, method: u32, what: i64) -> bool {
        self.asked.lock().unwrap().push(Asked::Has(method, what));
        what == 7
    }
    fn quit(&self) {
        self.asked.lock().unwrap().push(Asked::Quit);
    }
    fn spawn(app: &Arc<Self>, method: u32, _arg: u64, arg_is_ref: bool) -> Result<(), Fault> {
        app.asked
            .lock()
            .unwrap()
            .push(Asked::Spawn(method, arg_is_ref));
        Ok(())
    }
    fn sleep_until(&self, _: Instant) {}
}

const PROGRAM: &str = r#"
.class C
  .field v int
.end
.method main args=0 locals=1
  new C
  store 0
  push 1
  load 0
  push 250
  send h
  push 2
  push 99
  push -5
  send h
  push 3
  load 0
  sendfront h
  push 4
  remove h
  push 7
  has h
  print
  push 8
  has h
  print
  load 0
  spawn t
  push 5
  spawn t
  mark "done"
  quit
  push 0
  ret
.end
.method h args=2 locals=2
  push 0
  ret
.end
.method t args=1 locals=1
  push 0
  ret
.end
"#;

fn recorder(quitted: bool) -> Arc<Recorder> {
    let p = marvin_interpreter::asm::assemble("binding.masm", PROGRAM).expect("assembles");
    let vp = marvin_interpreter::verify::verify(p).expect("verifies");
    Arc::new(Recorder {
        loaded: Loaded::new(vp),
        heap: Heap::new(HeapConfig::default()).expect("heap"),
        safepoints: Safepoints::new(),
        monitors: Monitors::new(),
        native: NativeBuffers::new(),
        asked: Mutex::new(Vec::new()),
        quitted,
    })
}

#[test]
fn message_instructions_reach_the_binding_decoded() {
    let app = recorder(false);
    let mut t = Thread::new(&app).expect("thread");
    let entry = app.loaded.vp.entry;
    assert_eq!(t.invoke(entry, &[]), Ok(0));
    let asked = app.asked.lock().unwrap();
    let obj = match &asked[0] {
        Asked::Post(p) => p.arg,
        other => panic!("first a post, not {other:?}"),
    };
    let post = |what, arg, arg_is_ref, when| {
        Asked::Post(Post {
            method: 1,
            what,
            arg,
            arg_is_ref,
            when,
        })
    };
    assert_eq!(
        *asked,
        vec![
            post(1, obj, true, PostAt::Delayed { ms: 250 }),
            post(2, 99, false, PostAt::Delayed { ms: 0 }),
            post(3, obj, true, PostAt::Front),
            Asked::Remove(1, 4),
            Asked::Has(1, 7),
            Asked::Out(b"1\n".to_vec()),
            Asked::Has(1, 8),
            Asked::Out(b"0\n".to_vec()),
            Asked::Spawn(2, true),
            Asked::Spawn(2, false),
            Asked::Mark(0),
            Asked::Quit,
        ]
    );
}

#[test]
fn a_fault_of_the_binding_is_a_runtime_error_at_the_instruction() {
    let app = recorder(true);
    let mut t = Thread::new(&app).expect("thread");
    let entry = app.loaded.vp.entry;
    match t.invoke(entry, &[]) {
        Err(Trap::Error {
            message,
            method,
            pc,
        }) => {
            assert_eq!(message, "post after quit");
            assert_eq!((method, pc), (entry, 5), "at the first send");
        }
        other => panic!("expected a runtime error, got {other:?}"),
    }
}
