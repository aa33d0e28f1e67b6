//! Evaluation output: JSONL records, one per task instance, each a
//! session (its events in `history`), and bare events, together one more.

use serde_json::Value;

use super::Calls;
use super::Stream;
use super::sources::Located;
use super::sources::sources;
use crate::Format;
use crate::ImportError;
use crate::Imported;
use crate::Wanted;
use crate::builder::Builder;
use crate::builder::Output;
use crate::input::Input;

/// Evaluation output (JSONL records) and bare events, one line in memory
/// at a time: a first pass notes what each line is, then only the chosen
/// record is parsed again (or the bare events, twice: once for the calls
/// each response made, once to convert). A file that is not JSONL is one
/// pretty-printed record, read whole.
pub(super) fn records(
    file: &str,
    input: &Input<'_>,
    wanted: Wanted,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let survey = match survey(file, input) {
        Ok(survey) => survey?,
        // A pretty-printed record spans lines.
        Err(lines_error) => {
            let bytes = input.bytes(file)?;
            return match crate::json::parse_document(file, &bytes) {
                Ok(value) => whole(file, &[(None, value)], wanted, visit),
                Err(_) => Err(lines_error),
            };
        }
    };
    let bare = survey.bare.is_some();
    let count = survey.records.len() + usize::from(bare);
    let outputs = wanted.outputs(file, count, |i| match survey.records.get(i) {
        Some(record) => record.acts,
        None => survey.bare == Some(true),
    })?;
    for (index, output) in outputs.into_iter().enumerate() {
        let Some(output) = output else {
            continue;
        };
        let Some(record) = survey.records.get(index) else {
            visit(bare_events(
                file,
                input,
                count,
                index,
                survey.lines,
                output,
            )?)?;
            continue;
        };
        let value = input
            .record_at(file, record.line, record.offset, record.len)?
            .value;
        let values = [(Some(record.line), value)];
        let sources = sources(file, &values)?;
        let Some(source) = sources.first() else {
            return Err(ImportError::Empty {
                file: file.to_string(),
            });
        };
        let each = |visit: &mut dyn FnMut(&Located<'_>) -> Result<(), ImportError>| {
            source.events.iter().try_for_each(&mut *visit)
        };
        let picked = Picked {
            sessions: count,
            index,
            records: 1,
            record: source.record,
        };
        visit(convert(file, &picked, each, output)?)?;
    }
    Ok(count)
}

/// The bare events of the file, the session after its records, read from
/// the file each time they are walked.
fn bare_events(
    file: &str,
    input: &Input<'_>,
    count: usize,
    index: usize,
    lines: u64,
    output: Output,
) -> Result<Imported, ImportError> {
    let each = |visit: &mut dyn FnMut(&Located<'_>) -> Result<(), ImportError>| {
        for record in input.records(file)? {
            let record = record?;
            if is_bare(&record.value) {
                visit(&Located {
                    line: Some(record.line),
                    path: String::new(),
                    event: &record.value,
                })?;
            }
        }
        Ok(())
    };
    let picked = Picked {
        sessions: count,
        index,
        records: lines,
        record: None,
    };
    convert(file, &picked, each, output)
}

/// Sessions already in memory (one pretty-printed document), as
/// [`sources`] finds them.
fn whole(
    file: &str,
    values: &[(Option<u64>, Value)],
    wanted: Wanted,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let sources = sources(file, values)?;
    let outputs = wanted.outputs(file, sources.len(), |i| {
        sources[i]
            .events
            .iter()
            .any(|e| e.event.get("action").is_some())
    })?;
    for (index, output) in outputs.into_iter().enumerate() {
        let (Some(output), Some(source)) = (output, sources.get(index)) else {
            continue;
        };
        let each = |visit: &mut dyn FnMut(&Located<'_>) -> Result<(), ImportError>| {
            source.events.iter().try_for_each(&mut *visit)
        };
        let picked = Picked {
            sessions: sources.len(),
            index,
            records: match source.record {
                Some(_) => 1,
                None => values.len() as u64,
            },
            record: source.record,
        };
        visit(convert(file, &picked, each, output)?)?;
    }
    Ok(sources.len())
}

/// What the first pass over a JSONL file found.
struct Survey {
    /// Each record with a `history`, in file order.
    records: Vec<RecordAt>,
    /// Whether the file has bare events, and whether one is an action.
    bare: Option<bool>,
    /// JSON lines in the file.
    lines: u64,
}

/// Where a record lies, to be read again if it is chosen.
struct RecordAt {
    line: u64,
    offset: u64,
    len: usize,
    /// Whether its history holds an action (a session with messages).
    acts: bool,
}

fn is_bare(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        !map.contains_key("history")
            && (map.contains_key("action") || map.contains_key("observation"))
    })
}

/// Reads every line once, keeping only where each record is and whether
/// it has an action. The outer error is the first line that is not JSON;
/// the inner one the first line that is JSON of no OpenHands shape, so
/// that, as for a file read whole, every line is parsed before shapes are
/// judged.
fn survey(file: &str, input: &Input<'_>) -> Result<Result<Survey, ImportError>, ImportError> {
    let mut survey = Survey {
        records: Vec::new(),
        bare: None,
        lines: 0,
    };
    let mut misshapen = None;
    for record in input.records(file)? {
        let record = record?;
        survey.lines += 1;
        if misshapen.is_some() {
            continue;
        }
        let value = [(Some(record.line), record.value)];
        let found = match sources(file, &value) {
            Ok(found) => found,
            Err(error) => {
                misshapen = Some(error);
                continue;
            }
        };
        let acts = found
            .iter()
            .any(|s| s.events.iter().any(|e| e.event.get("action").is_some()));
        if is_bare(&value[0].1) {
            survey.bare = Some(survey.bare == Some(true) || acts);
        } else {
            survey.records.push(RecordAt {
                line: record.line,
                offset: record.offset,
                len: record.len,
                acts,
            });
        }
    }
    Ok(misshapen.map_or(Ok(survey), Err))
}

/// The session chosen, and what the report says of the file.
struct Picked<'v> {
    sessions: usize,
    index: usize,
    records: u64,
    record: Option<&'v Value>,
}

/// Converts one session whose events `each` walks (it is walked twice:
/// for the calls each model response made, then to convert).
fn convert(
    file: &str,
    picked: &Picked<'_>,
    each: impl Fn(&mut dyn FnMut(&Located<'_>) -> Result<(), ImportError>) -> Result<(), ImportError>,
    output: Output,
) -> Result<Imported, ImportError> {
    let mut b = Builder::new(file, Format::OpenHands, output);
    b.report.sessions = picked.sessions;
    b.report.session = picked.index + 1;
    b.report.records = picked.records;
    if let Some(map) = picked.record.and_then(Value::as_object) {
        for key in map.keys().filter(|k| *k != "history") {
            b.report.skip(format!("record {key}"));
        }
    }
    let mut calls = Calls::default();
    let mut created = None;
    let mut first = true;
    each(&mut |located| {
        if std::mem::take(&mut first) {
            created = crate::time_of(located.event, "timestamp");
        }
        calls.add(located.event);
        Ok(())
    })?;
    let mut stream = Stream::new(&mut b, file, calls);
    each(&mut |located| stream.event(located))?;
    let id = picked
        .record
        .and_then(|r| r.get("instance_id"))
        .and_then(Value::as_str)
        .map_or_else(
            || match picked.sessions {
                1 => crate::id_from_file(file),
                _ => format!("{}-{}", crate::id_from_file(file), picked.index + 1),
            },
            str::to_string,
        );
    let (drafts, report) = b.finish(None)?;
    Ok(Imported {
        header: crate::header(id, created, None),
        drafts,
        report,
    })
}
