//! How long work reports how far it got. The workflows print nothing:
//! they call a [`Progress`] (the binary draws bars and prints lines; tests
//! and scripts pass [`Silent`]). Work running in parallel gets one task
//! each, all reporting to the same `Progress`.

/// Where a workflow reports to. `Sync`: parallel jobs share one.
pub trait Progress: Sync {
    /// A task of `total` steps (`None`: unknown) named `name` starts; it
    /// ends when the handle is dropped.
    fn task(&self, name: &str, total: Option<u64>) -> Box<dyn Task + '_>;
    /// A line worth showing now (what was read from where, a finished
    /// job); the workflow's result carries everything that matters.
    fn note(&self, line: &str);
}

/// One running task.
pub trait Task: Send + Sync {
    /// Steps done so far.
    fn set(&self, done: u64);
    /// A short message beside the bar.
    fn message(&self, text: &str);
}

/// Reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

struct SilentTask;

impl Task for SilentTask {
    fn set(&self, _: u64) {}
    fn message(&self, _: &str) {}
}

impl Progress for Silent {
    fn task(&self, _: &str, _: Option<u64>) -> Box<dyn Task + '_> {
        Box::new(SilentTask)
    }
    fn note(&self, _: &str) {}
}
