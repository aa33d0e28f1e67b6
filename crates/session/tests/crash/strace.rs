//! Reading an `strace -f -y` trace of a writer and auditing its fsyncs.
//!
//! The rule audited: when the writer acknowledges (writes `READY ` or
//! `ACK ` to its stdout, fd 1), everything it did to the session's files
//! before that is on disk. That is:
//!
//! - every write to a file in the session's directory (the log, blobs) is
//!   followed by an `fsync`/`fdatasync` of that file;
//! - every file created, directory made or name renamed there is followed
//!   by an `fsync` of the directory holding the new name;
//! - a file is synced before it is renamed, so a name never points at
//!   content that is not on disk yet.
//!
//! The lock file is exempt: it holds no data, and a lost lock file loses
//! nothing. `-y` makes strace print the path behind every descriptor, so
//! reused descriptor numbers need no tracking.

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

/// The system calls to trace, as passed to `strace -e trace=`.
pub(crate) const TRACED: &str =
    "fsync,fdatasync,write,openat,rename,renameat,renameat2,mkdir,mkdirat";

/// One completed, successful system call the audit cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    /// A write of `data` (strace's printed prefix, still escaped) to `fd`.
    Write {
        fd: u32,
        path: PathBuf,
        data: String,
    },
    /// `fsync` or `fdatasync` of the file or directory at `path`.
    Sync { path: PathBuf },
    /// `openat` with `O_CREAT` that returned a descriptor for `path`.
    Create { path: PathBuf },
    /// `mkdir`/`mkdirat` of `path`.
    Mkdir { path: PathBuf },
    /// A rename from `from` to `to`.
    Rename { from: PathBuf, to: PathBuf },
}

/// A call with the 1-based trace line it completed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Traced {
    pub(crate) line: usize,
    pub(crate) call: Call,
}

/// Every successful call of interest in `trace`, in completion order. A
/// call split by another thread (`<unfinished ...>` then `<... resumed>`)
/// counts where it resumed: that is when it returned.
pub(crate) fn parse(trace: &str) -> Vec<Traced> {
    let mut unfinished: BTreeMap<String, String> = BTreeMap::new();
    let mut calls = Vec::new();
    for (index, raw) in trace.lines().enumerate() {
        let (pid, text) = split_pid(raw);
        if text.starts_with("+++") || text.starts_with("---") {
            continue;
        }
        let whole = if let Some(head) = text.strip_suffix("<unfinished ...>") {
            unfinished.insert(pid.to_string(), head.trim_end().to_string());
            continue;
        } else if let Some(rest) = text.strip_prefix("<... ") {
            let Some((_, tail)) = rest.split_once(" resumed>") else {
                continue;
            };
            let head = unfinished.remove(pid).unwrap_or_default();
            format!("{head}{tail}")
        } else {
            text.to_string()
        };
        if let Some(call) = parse_call(&whole) {
            calls.push(Traced {
                line: index + 1,
                call,
            });
        }
    }
    calls
}

/// `"1234 write(...)"` into the pid and the call; a line without a pid
/// (strace traced one process only) gets an empty one.
fn split_pid(line: &str) -> (&str, &str) {
    match line.split_once(' ') {
        Some((pid, rest)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
            (pid, rest.trim_start())
        }
        _ => ("", line),
    }
}

fn parse_call(text: &str) -> Option<Call> {
    let (name, rest) = text.split_once('(')?;
    // strace pads short calls: `fsync(5</d>)      = 0`.
    let (args, result) = rest.rsplit_once(" = ")?;
    let args = args.trim_end().strip_suffix(')')?;
    let result = result.trim();
    if result.starts_with('-') || result.starts_with('?') {
        return None;
    }
    match name {
        "write" => {
            let (fd, path) = descriptor(args)?;
            let data = quoted(args).into_iter().next().unwrap_or_default();
            Some(Call::Write { fd, path, data })
        }
        "fsync" | "fdatasync" => Some(Call::Sync {
            path: descriptor(args)?.1,
        }),
        "openat" if args.contains("O_CREAT") => Some(Call::Create {
            path: descriptor(result)?.1,
        }),
        "mkdir" | "mkdirat" => Some(Call::Mkdir {
            path: PathBuf::from(quoted(args).pop()?),
        }),
        "rename" | "renameat" | "renameat2" => {
            let mut names = quoted(args);
            let to = PathBuf::from(names.pop()?);
            let from = PathBuf::from(names.pop()?);
            Some(Call::Rename { from, to })
        }
        _ => None,
    }
}

/// `3</tmp/x/session.jsonl>` (the start of `text`) into 3 and the path.
fn descriptor(text: &str) -> Option<(u32, PathBuf)> {
    let (fd, rest) = text.split_once('<')?;
    let fd = fd.trim().parse().ok()?;
    let end = rest.find('>')?;
    Some((fd, PathBuf::from(&rest[..end])))
}

/// The double-quoted strings in `args`, escapes left as printed except
/// `\"` and `\\`.
fn quoted(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut text = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some(e @ ('"' | '\\')) => text.push(e),
                    Some(e) => {
                        text.push('\\');
                        text.push(e);
                    }
                    None => {}
                },
                c => text.push(c),
            }
        }
        out.push(text);
    }
    out
}

/// What [`audit`] counted and found.
#[derive(Debug, Default)]
pub(crate) struct Audit {
    /// Acknowledgements (`READY`/`ACK` on stdout).
    pub(crate) acks: usize,
    /// Writes to the log file itself.
    pub(crate) log_writes: usize,
    /// Syncs of the log file itself.
    pub(crate) log_syncs: usize,
    /// Files created, directories made and renames in the session's
    /// directory.
    pub(crate) created: usize,
    pub(crate) made_dirs: usize,
    pub(crate) renamed: usize,
    /// Each broken rule, naming the trace lines involved.
    pub(crate) problems: Vec<String>,
}

/// Audits the writer of the session file `log` in `trace` (see the module
/// docs for the rule). Paths must be as strace prints them: canonical.
pub(crate) fn audit(trace: &str, log: &Path) -> Audit {
    let dir = log.parent().unwrap_or(Path::new("/"));
    let lock = PathBuf::from(format!("{}.lock", log.display()));
    let ours = |path: &Path| path.starts_with(dir) && path != lock;
    let mut report = Audit::default();
    // Path that must be synced -> why (the trace line and what happened).
    let mut owed: BTreeMap<PathBuf, String> = BTreeMap::new();
    let owe_parent = |owed: &mut BTreeMap<PathBuf, String>, path: &Path, why: String| {
        let parent = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        owed.entry(parent).or_insert(why);
    };
    for Traced { line, call } in parse(trace) {
        match call {
            Call::Write { fd: 1, data, .. }
                if data.starts_with("ACK ") || data.starts_with("READY ") =>
            {
                report.acks += 1;
                let ack = data.trim_end_matches("\\n");
                for (path, why) in std::mem::take(&mut owed) {
                    report.problems.push(format!(
                        "line {line}: `{ack}` acknowledged before an fsync of {} (owed since {why})",
                        path.display()
                    ));
                }
            }
            Call::Write { path, .. } if ours(&path) => {
                if path == log {
                    report.log_writes += 1;
                }
                owed.entry(path)
                    .or_insert_with(|| format!("line {line}: write"));
            }
            Call::Write { .. } => {}
            Call::Sync { path } => {
                if path == log {
                    report.log_syncs += 1;
                }
                owed.remove(&path);
            }
            Call::Create { path } if ours(&path) => {
                report.created += 1;
                owe_parent(
                    &mut owed,
                    &path,
                    format!("line {line}: created {}", path.display()),
                );
            }
            Call::Mkdir { path } if ours(&path) => {
                report.made_dirs += 1;
                owe_parent(
                    &mut owed,
                    &path,
                    format!("line {line}: made {}", path.display()),
                );
            }
            Call::Rename { from, to } if ours(&to) => {
                report.renamed += 1;
                if let Some(why) = owed.remove(&from) {
                    report.problems.push(format!(
                        "line {line}: {} renamed before an fsync of its content (owed since {why})",
                        from.display()
                    ));
                }
                owe_parent(
                    &mut owed,
                    &to,
                    format!("line {line}: renamed to {}", to.display()),
                );
            }
            Call::Create { .. } | Call::Mkdir { .. } | Call::Rename { .. } => {}
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real trace of the crash child (three batches of three, the first
    /// with a blob image) under `strace -f -y -s 24`, libraries' lines
    /// removed. Its session is `/tmp/abridge-trace/session.jsonl`.
    const RECORDED: &str = include_str!("fsync.trace");

    fn log() -> PathBuf {
        PathBuf::from("/tmp/abridge-trace/session.jsonl")
    }

    /// The recorded trace with the lines `drop` selects blanked, so line
    /// numbers still match the file.
    fn without(drop: impl Fn(&str) -> bool) -> String {
        RECORDED
            .lines()
            .map(|l| {
                if drop(l) {
                    "\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    }

    #[test]
    fn the_recorded_trace_passes() {
        let audit = audit(RECORDED, &log());
        assert_eq!(audit.problems, Vec::<String>::new());
        assert_eq!(audit.acks, 4, "READY and three ACKs");
        assert_eq!(audit.log_writes, 4, "the header and three batches");
        assert_eq!(audit.log_syncs, 4);
        assert_eq!((audit.created, audit.made_dirs, audit.renamed), (2, 1, 1));
    }

    #[test]
    fn without_the_log_fsyncs_every_ack_is_flagged() {
        let trace = without(|l| {
            (l.contains("fdatasync(") || l.contains("fsync(")) && l.contains("session.jsonl>")
        });
        let audit = audit(&trace, &log());
        assert_eq!(audit.log_syncs, 0);
        assert_eq!(audit.problems.len(), 4, "{:#?}", audit.problems);
        assert!(
            audit
                .problems
                .iter()
                .all(|p| p.contains("before an fsync of /tmp/abridge-trace/session.jsonl ")),
            "{:#?}",
            audit.problems
        );
    }

    #[test]
    fn without_the_directory_fsyncs_creation_and_rename_are_flagged() {
        let trace = without(|l| l.contains("fsync(") && !l.contains(".jsonl>"));
        let audit = audit(&trace, &log());
        let text = audit.problems.join("\n");
        assert_eq!(audit.problems.len(), 3, "{text}");
        assert!(
            text.contains("line 8: `READY 0` acknowledged before an fsync of /tmp/abridge-trace (owed since line 3: created /tmp/abridge-trace/session.jsonl)"),
            "{text}"
        );
        assert!(
            text.contains("`ACK 2` acknowledged before an fsync of /tmp/abridge-trace (owed since line 9: made /tmp/abridge-trace/session.jsonl.blobs)"),
            "{text}"
        );
        assert!(
            text.contains("`ACK 2` acknowledged before an fsync of /tmp/abridge-trace/session.jsonl.blobs (owed since line 12: created"),
            "{text}"
        );
    }

    #[test]
    fn a_blob_renamed_before_its_sync_is_flagged() {
        let trace = without(|l| l.contains("fdatasync(") && l.contains(".tmp>"));
        let audit = audit(&trace, &log());
        assert_eq!(audit.problems.len(), 1, "{:#?}", audit.problems);
        assert!(audit.problems[0].contains("renamed before an fsync of its content"));
    }

    #[test]
    fn a_call_split_by_another_thread_counts_where_it_returned() {
        let trace = "\
7 write(3</d/s.jsonl>, \"{}\\n\", 3 <unfinished ...>
8 write(1<pipe:[1]>, \"ACK 0\\n\", 6) = 6
7 <... write resumed>) = 3
7 fdatasync(3</d/s.jsonl>) = 0
7 write(1<pipe:[1]>, \"ACK 1\\n\", 6) = 6
7 write(3</d/s.jsonl>, \"{}\\n\", 3) = -1 ENOSPC (No space left on device)
7 write(1<pipe:[1]>, \"ACK 2\\n\", 6) = 6
7 +++ exited with 0 +++
";
        let audit = audit(trace, Path::new("/d/s.jsonl"));
        assert_eq!(audit.acks, 3);
        assert_eq!(audit.log_writes, 1, "the failed write is not counted");
        assert_eq!(audit.problems, Vec::<String>::new());
        assert_eq!(
            parse(trace)[1].call,
            Call::Write {
                fd: 3,
                path: PathBuf::from("/d/s.jsonl"),
                data: "{}\\n".into()
            }
        );
    }
}
