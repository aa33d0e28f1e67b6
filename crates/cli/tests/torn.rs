//! The `abridge` binary on a torn log (issue 27: one torn byte at the end
//! of an imported session cost the whole session). Every command that
//! reads works on the complete part and says what is torn; every command
//! that writes refuses and changes nothing; `check` fails, naming the
//! `repair` to run; `repair` moves the torn bytes to a sidecar, and with
//! `--keep-complete` keeps the torn batch's complete events. And the
//! commands that only read create no file beside the session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::path::PathBuf;
use std::process::Output;

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::samples::PI;
use abridge_test_support::samples::SWE;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

fn abridge(args: &[&str]) -> Output {
    cli().run(args)
}

/// The pi sample imported (four batches), then copied alone into a
/// directory of its own and cut 200 bytes short, as a crash in the middle
/// of its last write leaves it. Returns the directory, the log and its
/// bytes.
fn torn_log() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let scratch = tempfile::tempdir().unwrap();
    let imported = cli().import(scratch.path(), PI);
    let bytes = std::fs::read(&imported).unwrap();
    let cut = bytes[..bytes.len() - 200].to_vec();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.jsonl");
    std::fs::write(&path, &cut).unwrap();
    (dir, path, cut)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `check --json` of `path`: how many events it holds.
fn events(path: &Path) -> u64 {
    let output = abridge(&["check", path.to_str().unwrap(), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["events"].as_u64().unwrap()
}

/// The commands that only read, each with its arguments around the
/// session's path; `out` is a directory elsewhere for what they write.
fn reading_commands(session: &str, out: &Path) -> Vec<Vec<String>> {
    let report = out.join("report.html").display().to_string();
    let frames = out.join("frames").display().to_string();
    [
        vec!["stats", session],
        vec!["context", session],
        vec!["recall", session, "--toc"],
        vec!["report", session, "-o", &report],
        vec!["render", session, "-o", &frames, "--model", "gpt-4o"],
        vec![
            "simulate", session, "--window", "16000", "--method", "digest",
        ],
        vec!["branch", session],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(str::to_string).collect())
    .collect()
}

fn run(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    abridge(&args)
}

#[test]
fn every_reading_command_reads_a_torn_log_says_so_and_leaves_it_as_it_was() {
    let (dir, path, cut) = torn_log();
    let out = tempfile::tempdir().unwrap();
    let before = names(dir.path());
    for args in reading_commands(path.to_str().unwrap(), out.path()) {
        let output = run(&args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("cut short") && stderr(&output).contains("abridge repair"),
            "{args:?} did not say what is torn: {}",
            stderr(&output)
        );
        assert!(
            std::fs::read(&path).unwrap() == cut,
            "{args:?} changed the log"
        );
        assert_eq!(names(dir.path()), before, "{args:?} wrote beside the log");
    }
}

#[test]
fn every_writing_command_refuses_a_torn_log_and_changes_nothing() {
    let (_dir, path, cut) = torn_log();
    let session = path.to_str().unwrap();
    for args in [
        vec![
            "compact", session, "--method", "digest", "--window", "64000",
        ],
        vec!["branch", session, "--to", "5"],
        vec!["branch", session, "--to", "5", "--summary"],
    ] {
        let output = abridge(&args);
        assert!(!output.status.success(), "{args:?} wrote to a torn log");
        let error = stderr(&output);
        assert!(
            error.contains("cut short")
                && error.contains("nothing was written")
                && error.contains(&format!("abridge repair {session}")),
            "{args:?}: {error}"
        );
        assert!(
            std::fs::read(&path).unwrap() == cut,
            "{args:?} changed the log"
        );
    }
}

/// Regression test for "check exits 0 on a torn log, and says its events
/// were removed".
#[test]
fn check_fails_on_a_torn_log_naming_the_repair_to_run() {
    let (_dir, path, cut) = torn_log();
    let session = path.to_str().unwrap();
    let output = abridge(&["check", session]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stdout(&output).starts_with("torn tail: line "),
        "{}",
        stdout(&output)
    );
    let error = stderr(&output);
    assert!(
        error.contains(&format!("run `abridge repair {session}`"))
            && error.contains("--keep-complete"),
        "{error}"
    );
    let json = abridge(&["check", session, "--json"]);
    assert!(!json.status.success());
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert!(
        report["torn_tail"]["events"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert!(std::fs::read(&path).unwrap() == cut);
}

#[test]
fn repair_sets_the_torn_bytes_aside_and_keep_complete_keeps_the_whole_events() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path, cut) = torn_log();
    let keep = dir.path().join("keep.jsonl");
    std::fs::write(&keep, &cut).unwrap();
    let session = path.to_str().unwrap();

    let repair = abridge(&["repair", session]);
    assert!(repair.status.success(), "{}", stderr(&repair));
    let sidecar = dir.path().join("torn.jsonl.torn-1");
    assert!(
        stdout(&repair).contains(&format!("in {}", sidecar.display())),
        "{}",
        stdout(&repair)
    );
    let mut joined = std::fs::read(&path).unwrap();
    joined.extend(std::fs::read(&sidecar).unwrap());
    assert!(joined == cut, "the log and its sidecar lost bytes");
    let mode = std::fs::metadata(&sidecar).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let check = abridge(&["check", session]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(stdout(&abridge(&["repair", session])).contains("nothing to repair"));

    let repair = abridge(&[
        "repair",
        keep.to_str().unwrap(),
        "--keep-complete",
        "--json",
    ]);
    assert!(repair.status.success(), "{}", stderr(&repair));
    let report: serde_json::Value = serde_json::from_slice(&repair.stdout).unwrap();
    let torn_events = report["set_aside"]["events"].as_u64().unwrap();
    assert!(torn_events > 0, "{report}");
    assert_eq!(report["kept"].as_array().unwrap().len() as u64, torn_events);
    let check = abridge(&["check", keep.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert_eq!(events(&keep), events(&path) + torn_events);
}

/// Regression test for "read-only `stats` creates `.counts` and `.lock`
/// files" (issue 27, point 8).
#[test]
fn reading_commands_create_no_files_beside_the_session() {
    let scratch = tempfile::tempdir().unwrap();
    let imported = cli().import(scratch.path(), SWE);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alone.jsonl");
    std::fs::copy(&imported, &path).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut commands = reading_commands(path.to_str().unwrap(), out.path());
    commands.push(vec!["check".into(), path.display().to_string()]);
    for args in commands {
        let output = run(&args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_eq!(
            names(dir.path()),
            ["alone.jsonl"],
            "{args:?} created a file"
        );
    }
}

/// Regression test for "a broken line's error says 'open with salvage',
/// which the CLI has no way to do" (issue 27, point 8).
#[test]
fn a_broken_line_names_the_command_that_salvages_it_and_that_command_works() {
    let scratch = tempfile::tempdir().unwrap();
    let path = cli().import(scratch.path(), SWE);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // Line 3 is the first user message: the rest stays a valid session.
    lines[2] = "{\"seq\":1,\"parent\":0,broken";
    let broken = format!("{}\n", lines.join("\n"));
    std::fs::write(&path, &broken).unwrap();
    let session = path.to_str().unwrap();
    let output = abridge(&["compact", session, "--method", "digest"]);
    assert!(!output.status.success());
    let advice = format!("`abridge repair {session} --salvage-to NEW`");
    assert!(stderr(&output).contains(&advice), "{}", stderr(&output));

    let new = scratch.path().join("salvaged.jsonl");
    let salvage = abridge(&["repair", session, "--salvage-to", new.to_str().unwrap()]);
    assert!(salvage.status.success(), "{}", stderr(&salvage));
    assert!(
        stdout(&salvage).contains("skipped line 3:"),
        "{}",
        stdout(&salvage)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    assert_eq!(events(&new) as usize, lines.len() - 2);
}
