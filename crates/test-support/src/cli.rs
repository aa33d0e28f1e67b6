//! Running the `abridge` binary as a user does, and reading what it said.
//!
//! The binary's path comes from the test crate (`env!("CARGO_BIN_EXE_abridge")`
//! exists only in the CLI's own tests), so it is passed in once.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Output;

use crate::samples::sample;

/// The `abridge` binary, run in a working directory.
#[derive(Debug, Clone)]
pub struct Cli {
    bin: PathBuf,
    dir: Option<PathBuf>,
}

impl Cli {
    /// The binary at `bin` (pass `env!("CARGO_BIN_EXE_abridge")`).
    pub fn new(bin: impl Into<PathBuf>) -> Self {
        Cli {
            bin: bin.into(),
            dir: None,
        }
    }

    /// The same binary run in `dir`, so relative paths in its output do
    /// not carry a temporary directory's name.
    pub fn in_dir(&self, dir: &Path) -> Self {
        Cli {
            bin: self.bin.clone(),
            dir: Some(dir.to_path_buf()),
        }
    }

    /// Runs it with `args` and returns what it printed and its status.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(&self.bin);
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command.args(args).output().expect("run abridge")
    }

    /// Runs it and panics with its stderr unless it succeeded.
    pub fn ok(&self, args: &[&str]) -> Output {
        let output = self.run(args);
        assert_ok(&output);
        output
    }

    /// Imports the bundled sample `name` into `dir` as
    /// `<name>.abridge.jsonl` and returns the new log's path.
    pub fn import(&self, dir: &Path, name: &str) -> PathBuf {
        let out = dir.join(format!("{name}.abridge.jsonl"));
        self.ok(&[
            "import",
            sample(name).to_str().expect("a UTF-8 sample path"),
            "-o",
            out.to_str().expect("a UTF-8 output path"),
        ]);
        out
    }
}

/// What the command printed on stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the command printed on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Panics with the command's stderr unless it succeeded.
pub fn assert_ok(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}
