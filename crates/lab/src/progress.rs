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

/// A fit's [`identify::Step`]s shown under a workflow's task: a stage as
/// the task's message, a counted stage (starts, leave-one-out folds,
/// variants) as a task of its own with its total, so that a bar can show
/// how far it got and an ETA. A counted stage that starts again at 1 (the
/// starts of a second fit) is a new task.
pub struct StepTasks<'p> {
    progress: &'p dyn Progress,
    counted: Vec<(String, Box<dyn Task + 'p>)>,
}

impl<'p> StepTasks<'p> {
    pub fn new(progress: &'p dyn Progress) -> StepTasks<'p> {
        StepTasks { progress, counted: vec![] }
    }

    /// Shows `step`; stages go to `main`'s message.
    pub fn show(&mut self, main: &dyn Task, step: identify::Step) {
        match step {
            identify::Step::Stage(text) => main.message(text),
            identify::Step::Counted { stage, done, total } => {
                let open = self.counted.iter().position(|(name, _)| name == stage);
                let task = match open {
                    Some(i) if done > 1 => &self.counted[i].1,
                    _ => {
                        if let Some(i) = open {
                            self.counted.remove(i);
                        }
                        self.counted.push((stage.to_string(), self.progress.task(stage, Some(total as u64))));
                        &self.counted.last().expect("just pushed").1
                    }
                };
                // `done` counts the item starting: the ones before it are done.
                task.set(done.saturating_sub(1) as u64);
            }
        }
    }
}
