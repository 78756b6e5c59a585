//! Long work from Python: run on a worker thread with the GIL released,
//! reported to an optional callback, stopped by Ctrl-C.
//!
//! The calling thread waits in steps of 0.1 s, the GIL released, and between
//! steps lets Python handle its signals: on Ctrl-C it raises
//! KeyboardInterrupt at once and tells the worker to stop; the worker
//! unwinds at its next progress report (workflows report at least every
//! step of their loops) and its result is dropped. A second call starts
//! a fresh worker. No callback starts once the work is stopped, and the
//! caller returns only after a callback already running has returned: a
//! worker inside Python while the interpreter shuts down aborted it
//! ("PyGILState_Release: thread state must be current", exit 134).

use crate::errors::to_py;
use lab::{Progress, Task};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a worker unwinds with when told to stop (never a bug report).
struct Stopped;

/// Between the waiting thread and the worker.
struct Shared {
    stop: AtomicBool,
    /// The callback's own exception, raised in the caller.
    callback_error: Mutex<Option<PyErr>>,
    callback: Option<Py<PyAny>>,
    /// Held while the callback runs: the caller takes it after stopping
    /// the work, so that no callback runs past the call's return.
    calling: Mutex<()>,
}

impl Shared {
    /// Unwinds the worker when the caller has stopped it.
    fn check(&self) {
        if self.stop.load(Ordering::Relaxed) {
            std::panic::resume_unwind(Box::new(Stopped));
        }
    }

    /// `callback(task, done, total, message)`; an exception stops the work.
    fn report(&self, task: &str, done: Option<u64>, total: Option<u64>, message: Option<&str>) {
        let Some(cb) = &self.callback else { return };
        let _calling = self.calling.lock().unwrap_or_else(|p| p.into_inner());
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        Python::attach(|py| {
            if let Err(e) = cb.call1(py, (task, done, total, message)) {
                *self.callback_error.lock().expect("not poisoned") = Some(e);
                self.stop.store(true, Ordering::Relaxed);
            }
        });
    }
}

/// The callback's view of a workflow: tasks and notes.
struct Reporter {
    shared: Arc<Shared>,
}

/// One task: reports at most ten times a second, and when it ends.
struct PyTask {
    shared: Arc<Shared>,
    name: String,
    total: Option<u64>,
    done: Mutex<(u64, Instant)>,
}

/// The least time between two reports of a task.
const REPORT_EVERY: Duration = Duration::from_millis(100);

impl Task for PyTask {
    fn set(&self, done: u64) {
        self.shared.check();
        let mut last = self.done.lock().expect("not poisoned");
        last.0 = done;
        if last.1.elapsed() >= REPORT_EVERY {
            last.1 = Instant::now();
            drop(last);
            self.shared.report(&self.name, Some(done), self.total, None);
        }
    }

    fn message(&self, text: &str) {
        self.shared.check();
        let done = self.done.lock().expect("not poisoned").0;
        self.shared.report(&self.name, Some(done), self.total, Some(text));
    }
}

impl Drop for PyTask {
    fn drop(&mut self) {
        if !self.shared.stop.load(Ordering::Relaxed) && !std::thread::panicking() {
            let done = self.total.unwrap_or(self.done.lock().map(|d| d.0).unwrap_or(0));
            self.shared.report(&self.name, Some(done), Some(done), Some("done"));
        }
    }
}

impl Progress for Reporter {
    fn task(&self, name: &str, total: Option<u64>) -> Box<dyn Task + '_> {
        self.shared.check();
        self.shared.report(name, Some(0), total, None);
        Box::new(PyTask { shared: self.shared.clone(), name: name.to_string(), total, done: Mutex::new((0, Instant::now())) })
    }

    fn note(&self, line: &str) {
        self.shared.check();
        self.shared.report("note", None, None, Some(line));
    }
}

/// Runs `work` on a worker thread, the GIL released, reporting to
/// `callback(task, done, total, message)` (notes come as task "note");
/// Ctrl-C raises KeyboardInterrupt within 0.1 s and stops the worker.
pub fn run<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn Progress) -> lab::Result<T> + Send + 'static,
{
    run_with(py, callback, None, work)
}

/// As [`run`] for work that stops cleanly when `stop` is set (a
/// recording): Ctrl-C sets it, waits for the work to finish what it
/// holds, then raises KeyboardInterrupt.
pub fn run_until_stopped<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, stop: Arc<AtomicBool>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn Progress) -> lab::Result<T> + Send + 'static,
{
    run_with(py, callback, Some(stop), work)
}

fn run_with<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, clean_stop: Option<Arc<AtomicBool>>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn Progress) -> lab::Result<T> + Send + 'static,
{
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        callback_error: Mutex::new(None),
        callback: callback.filter(|c| !c.is_none(py)),
        calling: Mutex::new(()),
    });
    let (tx, rx) = mpsc::channel();
    // Waited on with the GIL released: shared with the detached closure.
    let rx = Mutex::new(rx);
    let reporter = Reporter { shared: shared.clone() };
    std::thread::Builder::new()
        .name("rodlab-work".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&reporter)));
            // The caller may have gone (Ctrl-C): nobody to tell.
            let _ = tx.send(result);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a worker thread: {e}")))?;
    let mut interrupted: Option<PyErr> = None;
    loop {
        let received = py.detach(|| rx.lock().expect("not poisoned").recv_timeout(Duration::from_millis(100)));
        if let Some(e) = shared.callback_error.lock().expect("not poisoned").take() {
            return Err(e);
        }
        match received {
            Ok(result) => {
                if let Some(interrupt) = interrupted {
                    return Err(interrupt);
                }
                return match result {
                    Ok(result) => result.map_err(to_py),
                    Err(panic) => {
                        let what = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                        Err(PyRuntimeError::new_err(format!("rodlab: internal error (please report it): {}", what.unwrap_or_else(|| "a panic".into()))))
                    }
                };
            }
            Err(RecvTimeoutError::Timeout) => {
                if interrupted.is_some() {
                    continue;
                }
                if let Err(interrupt) = py.check_signals() {
                    match &clean_stop {
                        // Finish what the work holds, then raise.
                        Some(stop) => {
                            stop.store(true, Ordering::Relaxed);
                            interrupted = Some(interrupt);
                        }
                        None => {
                            shared.stop.store(true, Ordering::Relaxed);
                            // A callback already running finishes first (the GIL
                            // released for it); none starts after.
                            py.detach(|| drop(shared.calling.lock().unwrap_or_else(|p| p.into_inner())));
                            return Err(interrupt);
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(PyRuntimeError::new_err("rodlab: the worker thread ended without a result")),
        }
    }
}
