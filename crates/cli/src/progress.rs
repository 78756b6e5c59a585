//! Progress on the terminal: one bar (or spinner) per running task, all in
//! one display so that parallel jobs never overwrite each other, and notes
//! printed above them. When standard error is not a terminal, no bars are
//! drawn and notes go to standard output as plain lines.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::time::Duration;

pub struct Bars {
    multi: MultiProgress,
}

impl Bars {
    pub fn new() -> Bars {
        Bars { multi: MultiProgress::new() }
    }
}

impl Default for Bars {
    fn default() -> Bars {
        Bars::new()
    }
}

struct Bar(ProgressBar);

impl lab::Task for Bar {
    fn set(&self, done: u64) {
        self.0.set_position(done);
    }
    fn message(&self, text: &str) {
        self.0.set_message(text.to_string());
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl lab::Progress for Bars {
    fn task(&self, name: &str, total: Option<u64>) -> Box<dyn lab::Task + '_> {
        let bar = match total {
            Some(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template("{prefix:>9} {bar:40} {pos}/{len} [{elapsed} < {eta}] {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => {
                let b = ProgressBar::new_spinner()
                    .with_style(ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]").unwrap_or_else(|_| ProgressStyle::default_spinner()));
                b.enable_steady_tick(Duration::from_millis(120));
                b
            }
        };
        bar.set_prefix(name.to_string());
        Box::new(Bar(self.multi.add(bar)))
    }

    fn note(&self, line: &str) {
        if self.multi.is_hidden() {
            println!("{line}");
        } else {
            let _ = self.multi.println(line);
        }
    }
}
