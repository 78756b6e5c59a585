//! The rodlab_cli crate's unit tests, through its public API: one test binary
//! that links the library cargo built once (tests inside the crate compiled
//! it a second time, under cfg(test)).

mod args {
    use rodlab_cli::args::*;

    #[test]
    fn lists_take_negative_first_values_and_reject_non_numbers() {
        assert_eq!("-1,0,2.5e-3".parse::<Numbers>().unwrap(), Numbers(vec![-1.0, 0.0, 2.5e-3]));
        assert!("1,NaN".parse::<Numbers>().unwrap_err().to_string().contains("not a finite number"));
        assert!("1,,2".parse::<Numbers>().is_err());
        assert!(Numbers(vec![1.0, 2.0]).exactly::<3>("tip-force", "X,Y,Z").unwrap_err().to_string().contains("got 2 values"));
    }
}

mod lib {
    use clap::CommandFactory;
    use rodlab_cli::Cli;

    /// Every command says what it does, and the examples under a command
    /// are of that command (a doc comment or `after_help` left above the
    /// wrong variant moves to its neighbour silently).
    #[test]
    fn every_command_has_its_own_help_and_examples() {
        fn walk(cmd: &clap::Command, path: &str, problems: &mut Vec<String>) {
            if cmd.get_about().is_none() {
                problems.push(format!("`{path}` has no about"));
            }
            if let Some(after) = cmd.get_after_help() {
                let after = after.to_string();
                if after.contains("Examples") && !after.lines().any(|l| l.trim_start().starts_with(&format!("{path} ")) || l.trim() == path) {
                    problems.push(format!("`{path}`'s examples are of another command: {after:?}"));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &format!("{path} {}", sub.get_name()), problems);
            }
        }
        let cli = Cli::command();
        cli.clone().debug_assert();
        let mut problems = vec![];
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, &format!("rodlab {}", sub.get_name()), &mut problems);
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
