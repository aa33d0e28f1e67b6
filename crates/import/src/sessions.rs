//! Files that hold several sessions (aider chats, OpenHands evaluation
//! records): which to read, and every one of them in turn for a listing.

use std::path::Path;

use crate::Format;
use crate::ImportError;
use crate::Imported;
use crate::ReadOptions;
use crate::builder::Output;
use crate::builder::Sink;
use crate::input;

/// Every session of the file at `path`, in file order, each handed to
/// `visit` as soon as it is read, so one session's events are held at a
/// time: each chat of an aider history, each record of OpenHands
/// evaluation output, and the one session of any other file. Sessions
/// with no message are handed on too (their report counts none), so a
/// listing shows every session the file holds. `options.session` is not
/// read. Returns how many sessions there are.
///
/// # Errors
/// As [`read_with`](crate::read_with), and whatever `visit` returns, which stops the walk.
pub fn each_session(
    path: &Path,
    options: &ReadOptions,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let file = path.display().to_string();
    let input = input::Input::File(path);
    if input::scan(&file, &input, options.max_record_bytes)?.blank {
        return Err(ImportError::Empty { file });
    }
    let wanted = Wanted::All(options.max_image_pixels);
    match crate::format_of(&file, &input, options.format)? {
        Format::Aider => crate::aider::sessions(&file, &input, wanted, visit),
        Format::OpenHands => crate::openhands::sessions(&file, &input, wanted, visit),
        _ => {
            let one = ReadOptions {
                session: None,
                ..*options
            };
            visit(crate::read_input(&file, input, &one, Sink::Keep)?)?;
            Ok(1)
        }
    }
}

/// Which sessions of a file that holds several to read, and where the
/// drafts of each go.
pub(crate) enum Wanted {
    /// One: the asked one (from 1), else the last with a message.
    One(Option<usize>, Output),
    /// Every one, each kept whole in turn, its images held to this cap.
    All(u64),
}

impl Wanted {
    /// Where each of `count` sessions goes (`None`: not read);
    /// `has_messages` says which hold a message.
    ///
    /// # Errors
    /// [`ImportError::NoSuchSession`] for a session past `count`.
    pub(crate) fn outputs(
        self,
        file: &str,
        count: usize,
        has_messages: impl Fn(usize) -> bool,
    ) -> Result<Vec<Option<Output>>, ImportError> {
        match self {
            Wanted::One(asked, output) => {
                let index = pick(file, count, asked, has_messages)?;
                let mut outputs: Vec<Option<Output>> = (0..count).map(|_| None).collect();
                if let Some(slot) = outputs.get_mut(index) {
                    *slot = Some(output);
                }
                Ok(outputs)
            }
            Wanted::All(max_image_pixels) => Ok((0..count)
                .map(|_| {
                    Some(Output {
                        sink: Sink::Keep,
                        max_image_pixels,
                    })
                })
                .collect()),
        }
    }
}

/// The one session `asked` names (default: the last with a message) of
/// a file of several, read by `sessions`.
pub(crate) fn one(
    file: &str,
    asked: Option<usize>,
    output: Output,
    sessions: impl FnOnce(
        Wanted,
        &mut dyn FnMut(Imported) -> Result<(), ImportError>,
    ) -> Result<usize, ImportError>,
) -> Result<Imported, ImportError> {
    let mut found = None;
    sessions(Wanted::One(asked, output), &mut |imported| {
        found = Some(imported);
        Ok(())
    })?;
    found.ok_or_else(|| ImportError::Empty {
        file: file.to_string(),
    })
}

/// Which of `count` sessions to import (0-based): `asked` (1-based) when
/// given, else the last for which `has_messages` holds, else the last.
pub(crate) fn pick(
    file: &str,
    count: usize,
    asked: Option<usize>,
    has_messages: impl Fn(usize) -> bool,
) -> Result<usize, ImportError> {
    match asked {
        Some(n) if n >= 1 && n <= count => Ok(n - 1),
        Some(n) => Err(ImportError::NoSuchSession {
            file: file.to_string(),
            asked: n,
            count,
        }),
        None => Ok((0..count)
            .rev()
            .find(|i| has_messages(*i))
            .unwrap_or(count.saturating_sub(1))),
    }
}
