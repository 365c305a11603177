//! Each tuning emits exactly one `tracing` event at info level (target `stencil::tuning`,
//! message `tuned`) with its kernel, shape, trials, time, schedule and roofline fraction, for
//! sweeps and for time loops; remembered schedules emit none.
//!
//! The capturing subscriber is a few lines over `tracing`'s own `Subscriber` trait. It is the
//! process's global default (set once), and records an event only on a thread that is
//! capturing, so events of tests running on other threads are never seen. (A subscriber set
//! as the thread's default only around each call loses events: `tracing` caches whether a
//! call site is wanted, and another test's thread that meets the site first, with no
//! subscriber, can leave it cached as unwanted.) The sweep tunes `jacobi7` into a cache file of its own: the tuning memo is the
//! process's and its key holds the cache's path, so another module of this binary that tunes
//! the same kernel on the same shape without a cache cannot make the call `Remembered`. (The
//! time loop's `diffuse` is this module's own kernel, and tuned without a cache: with one, the
//! loop's sweep is tuned and stored first, a second event.)

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use stencil::prelude::*;
use stencil::{TunePolicy, TuningCache, TuningSource};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use crate::common;
use common::{N, temp_cache};
use stencil::kernels::jacobi7;

stencil! {
    #[rotate(out -> u)]
    fn diffuse(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }
}

/// One captured event: its level, target and fields (the message under `message`), each
/// field's value as text.
#[derive(Clone, Debug)]
struct Captured {
    level: Level,
    target: String,
    fields: HashMap<String, String>,
}

/// The events of a capturing thread.
#[derive(Clone, Default)]
struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
}

thread_local! {
    /// Where this thread's events go while it captures.
    static CAPTURING: RefCell<Option<Arc<Mutex<Vec<Captured>>>>> = const { RefCell::new(None) };
}

/// The process's subscriber: records the library's events of capturing threads; no spans.
struct Router;

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Router {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("stencil")
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let Some(events) = CAPTURING.with(|c| c.borrow().clone()) else {
            return;
        };
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_string(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Capture {
    /// Runs `f` with this thread capturing; the `tuned` events it saw.
    fn tuned_events<R>(&self, f: impl FnOnce() -> R) -> (R, Vec<Captured>) {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            tracing::subscriber::set_global_default(Router)
                .expect("no other global subscriber in this test binary");
        });
        self.events.lock().unwrap().clear();
        CAPTURING.with(|c| *c.borrow_mut() = Some(self.events.clone()));
        let result = f();
        CAPTURING.with(|c| *c.borrow_mut() = None);
        let events = self
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.fields.get("message").is_some_and(|m| m == "tuned"))
            .cloned()
            .collect();
        (result, events)
    }
}

fn field<'a>(event: &'a Captured, name: &str) -> &'a str {
    event
        .fields
        .get(name)
        .unwrap_or_else(|| panic!("no field `{name}` in {event:?}"))
}

fn grid(seed: usize) -> Grid3<f64> {
    let mut u = Grid3::<f64>::new([N, N, N]).unwrap();
    u.fill_with(|[i, j, k]| ((i * 7 + j * 3 + k + seed) % 11) as f64);
    u
}

#[test]
fn a_tuned_sweep_emits_one_info_event_with_its_fields() {
    let capture = Capture::default();
    let cache = TuningCache::at(temp_cache("tuning-events", "sweep"));
    let u = grid(1);
    let mut out = u.like();
    let (report, events) = capture.tuned_events(|| {
        jacobi7(&u, &mut out, 0.4, 0.1)
            .tune(TunePolicy::Quick)
            .tuning_cache(cache.clone())
            .run_with_report()
            .unwrap()
    });
    assert_eq!(report.source, TuningSource::Tuned, "{report}");
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.level, Level::INFO);
    assert_eq!(event.target, "stencil::tuning");
    assert_eq!(field(event, "kernel"), "jacobi7");
    assert_eq!(field(event, "shape"), format!("[{N}, {N}, {N}]"));
    assert_eq!(field(event, "trials"), report.trials.to_string());
    assert_eq!(field(event, "schedule"), report.description);
    assert_eq!(field(event, "time_loop"), "false");
    assert_eq!(field(event, "policy"), "quick");
    let seconds: f64 = field(event, "seconds").parse().unwrap();
    assert_eq!(seconds, report.tuning_seconds);
    // The fraction is recorded exactly when the report knows it.
    assert_eq!(
        event.fields.contains_key("roofline_fraction"),
        report.roofline_fraction.is_some(),
        "{event:?} / {report}"
    );

    // The same call again is remembered: no tuning, no event.
    let (again, events) = capture.tuned_events(|| {
        jacobi7(&u, &mut out, 0.4, 0.1)
            .tune(TunePolicy::Quick)
            .tuning_cache(cache.clone())
            .run_with_report()
            .unwrap()
    });
    assert_eq!(again.source, TuningSource::Remembered, "{again}");
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_tuned_time_loop_emits_one_event_marked_as_a_time_loop() {
    let capture = Capture::default();
    let mut u = grid(2);
    let mut v = u.like();
    let (report, events) = capture.tuned_events(|| {
        diffuse::steps(&mut u, &mut v, 0.4, 0.1)
            .tune(TunePolicy::Quick)
            .without_tuning_cache()
            .run(8)
            .unwrap()
    });
    assert_eq!(
        report.tuning.source,
        TuningSource::Tuned,
        "{}",
        report.tuning
    );
    // The loop first tunes its single sweep on its first step's job (one event, not a time
    // loop, unless this process already knows that sweep), then the loop itself: one event
    // marked as a time loop, and it comes last.
    let loops: Vec<&Captured> = events
        .iter()
        .filter(|e| field(e, "time_loop") == "true")
        .collect();
    assert_eq!(loops.len(), 1, "{events:?}");
    assert!(events.len() <= 2, "{events:?}");
    let event = events.last().unwrap();
    assert_eq!(field(event, "time_loop"), "true");
    assert_eq!(field(event, "kernel"), "diffuse");
    // The report counts the whole tuning, the sweep's trials included; each event its own.
    let trials: usize = events
        .iter()
        .map(|e| field(e, "trials").parse::<usize>().unwrap())
        .sum();
    assert_eq!(
        trials, report.tuning.trials,
        "{events:?} / {}",
        report.tuning
    );
    if let [sweep, _] = events.as_slice() {
        assert_eq!(field(sweep, "time_loop"), "false");
        assert_eq!(field(sweep, "kernel"), "diffuse");
        let sweep_schedule = field(sweep, "schedule");
        assert!(
            field(event, "backend").contains(sweep_schedule),
            "the loop names the sweep it tuned: {events:?}"
        );
    }
}
