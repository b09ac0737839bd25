//! Trace events in Perfetto's native protobuf format.
//!
//! A [`Tracer`] records tracks (processes, threads, counters) and events on them (slices,
//! instants, counter values) in memory and writes them as one Perfetto `Trace` file that
//! the Perfetto UI (ui.perfetto.dev) and trace processor open directly. The messages are a
//! hand-written subset of Perfetto's published protos ([`proto`]), encoded with prost.
//!
//! ```
//! use marvin_runtime::trace::{names, Tracer};
//!
//! let tracer = Tracer::new();
//! let process = tracer.process_track(100, "app");
//! let main = tracer.thread_track(process, 100, "main");
//! {
//!     let _gc = tracer.slice(main, names::GC);
//!     tracer.instant(main, "mark done");
//! }
//! let backlog = tracer.counter_track(process, names::QUEUE_BACKLOG);
//! tracer.counter(backlog, 3.0);
//! let bytes = tracer.encode();
//! assert!(!bytes.is_empty());
//! ```
//!
//! Clock: timestamps are `CLOCK_BOOTTIME` nanoseconds ([`Tracer::now_ns`]), Perfetto's
//! default trace clock, and every event packet says so (`timestamp_clock_id` = BOOTTIME), so
//! no clock snapshot is needed. Interning is not used; each packet carries its names.
//!
//! Several processes: each writes its own trace ([`Tracer::flush_to`] streams it to a file
//! as it goes), with sequence ids and track uuids of its own (derived from its pid), and
//! one of them merges the files into its trace ([`Tracer::append_trace`], [`merge`]).
//!
//! The slice and counter names the runtime uses are listed in [`names`].

mod encode;
pub mod merge;
pub mod names;
pub mod proto;
mod tracer;

pub use merge::Appended;
pub use tracer::{ArgValue, Args, SliceGuard, Tracer, TrackId};
