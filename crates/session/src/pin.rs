//! Pins: text the model keeps seeing whatever compaction hides.
//!
//! A pin is a log-only event of type [`TYPE_PIN`]. It names either an
//! earlier message (`{"seq": 4, "origin": "claude-md"}`: an instruction
//! file an importer found, a message a host pinned) or carries its own
//! text (`{"text": "never push to main", "origin": "user"}`). Being a log
//! event, it never touches the surface: no fold, no pairing, no
//! checkpoint accounting changes, and it lives on the branch it was
//! written on like any other event. The request builder (crate
//! `abridge`) and the meter both read [`Session::pins`] and
//! [`Session::pinned_message`], so what is sent and what is counted come
//! from one place: a pin whose message is still on the surface is sent
//! (and counted) there, and every other pin once, in one message. A pin
//! is taken back by an `unpin` event naming it (`unpin.rs`); the pin
//! event itself stays.

use std::collections::HashMap;
use std::collections::HashSet;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use serde::Deserialize;
use serde::Serialize;

use crate::Draft;
use crate::Event;
use crate::Seq;
use crate::Session;
use crate::unpin::TYPE_UNPIN;
use crate::unpin::Unpin;

/// Event type of a pin.
pub const TYPE_PIN: &str = "pin";

/// The `Origin::Injected` source of the message that carries hidden pins
/// in a request.
pub const PINNED_SOURCE: &str = "pins";

/// The line that opens the message carrying hidden pins.
pub const PINNED_HEADER: &str = include_str!("../prompts/pinned.md");

/// What a pin event says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The pinned message, for a pin of a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The pinned text, for a pin of free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For a pin of a message: the one content block it keeps (an
    /// instruction file's reminder inside a user's request), counted from
    /// 0; `None`: the whole message's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// Who pinned it: `user` (a host or the command line), or the
    /// instruction file an importer found (`claude-md`, `agents-md`,
    /// `codex-user-instructions`).
    pub origin: String,
    /// A name for people (the instruction file's path), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Pin {
    /// A pin of the message at `seq`.
    pub fn message(seq: Seq, origin: impl Into<String>) -> Self {
        Pin {
            seq: Some(seq),
            block: None,
            text: None,
            origin: origin.into(),
            label: None,
        }
    }

    /// A pin of free text.
    pub fn text(text: impl Into<String>, origin: impl Into<String>) -> Self {
        Pin {
            seq: None,
            block: None,
            text: Some(text.into()),
            origin: origin.into(),
            label: None,
        }
    }

    /// Names the pin for people (an instruction file's path).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Keeps only content block `block` of the pinned message.
    pub fn with_block(mut self, block: usize) -> Self {
        self.block = Some(block);
        self
    }

    /// The pin event's data.
    pub fn data(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The log event that records it.
    pub fn draft(&self) -> Draft {
        Draft::log(TYPE_PIN, self.data())
    }
}

/// A pin on the active path, with the text it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivePin {
    /// The pin event's seq.
    pub at: Seq,
    /// What it says.
    pub pin: Pin,
    /// The text the model keeps: the pinned message's text blocks (joined
    /// by blank lines), or the pin's own text.
    pub text: String,
    /// True when the pinned message is itself on the surface, so the
    /// request already carries it and the pin adds nothing.
    pub visible: bool,
}

/// Why a pin event cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinFault {
    /// The pin event's seq.
    pub at: Seq,
    /// What is wrong with it.
    pub reason: String,
    /// The event's type: [`TYPE_PIN`], or [`TYPE_UNPIN`] for an unpin
    /// that takes back no pin.
    pub kind: &'static str,
    /// For an unpin: the seq it names, when its data names one.
    pub unpin_of: Option<Seq>,
}

/// The text blocks of `message` (and of a tool result's content), joined
/// by blank lines: what a pin of it keeps.
pub fn pinned_text(message: &Message) -> String {
    fn collect<'a>(blocks: &'a [Block], out: &mut Vec<&'a str>) {
        for block in blocks {
            match block {
                Block::Text { text } => out.push(text),
                Block::ToolResult { content, .. } => collect(content, out),
                _ => {}
            }
        }
    }
    let mut texts = Vec::new();
    collect(&message.content, &mut texts);
    texts.join("\n\n")
}

impl Session {
    /// The pins on the active path, oldest first, one per message or text
    /// (a later pin of the same message or the same text adds nothing),
    /// without those an [`Unpin`] took back. Pin events that cannot be
    /// honoured are left out; see
    /// [`pin_faults`](Self::pin_faults).
    pub fn pins(&self) -> Vec<ActivePin> {
        self.read_pins().0
    }

    /// The pin events on the active path that cannot be honoured: data
    /// that is not a pin, a pin of neither or both a message and a text,
    /// an empty text, a seq that is not an earlier message; and the unpin
    /// events that name no live pin (see [`Unpin`]).
    pub fn pin_faults(&self) -> Vec<PinFault> {
        self.read_pins().1
    }

    /// The message a request carries for the pins whose message is not
    /// on the surface (hidden by a checkpoint, rewritten by pruning) and
    /// for every pin of free text: [`PINNED_HEADER`], then each pin's text
    /// as a block of its own, verbatim. `None` when every pin is visible
    /// or there are none.
    pub fn pinned_message(&self) -> Option<Message> {
        self.pinned_message_hiding(&HashSet::new())
    }

    /// The message [`pinned_message`](Self::pinned_message) will build
    /// once the messages at `hidden` leave the surface (a plan's span, a
    /// rewrite's targets): what a compaction must leave room for, since
    /// every pin of a message it hides comes back in it.
    pub fn pinned_message_hiding(&self, hidden: &HashSet<Seq>) -> Option<Message> {
        let carried: Vec<Block> = self
            .pins()
            .into_iter()
            .filter(|p| !p.visible || p.pin.seq.is_some_and(|seq| hidden.contains(&seq)))
            .map(|p| Block::text(p.text))
            .collect();
        if carried.is_empty() {
            return None;
        }
        let mut content = vec![Block::text(PINNED_HEADER.trim_end())];
        content.extend(carried);
        Some(Message {
            role: Role::User,
            content,
            meta: Meta {
                origin: Some(Origin::Injected {
                    source: PINNED_SOURCE.to_string(),
                }),
                ..Meta::default()
            },
        })
    }

    fn read_pins(&self) -> (Vec<ActivePin>, Vec<PinFault>) {
        let state = self.read_pin_events();
        let pins = state.live.into_iter().map(|(_, pin)| pin).collect();
        (pins, state.faults)
    }

    /// Reads the pin and unpin events on the active path, in order.
    pub(crate) fn read_pin_events(&self) -> PinState {
        let mut state = PinState::default();
        let events: Vec<&Event> = self
            .events()
            .iter()
            .filter(|e| matches!(e.body.kind(), TYPE_PIN | TYPE_UNPIN))
            .collect();
        if events.is_empty() {
            return state;
        }
        let path: HashSet<Seq> = self.active_path().into_iter().collect();
        for event in events.into_iter().filter(|e| path.contains(&e.seq)) {
            let at = event.seq;
            if event.body.kind() == TYPE_UNPIN {
                state.unpin(event);
                continue;
            }
            match self.read_pin(event) {
                Err(reason) => state.faults.push(PinFault {
                    at,
                    reason,
                    kind: TYPE_PIN,
                    unpin_of: None,
                }),
                Ok(active) => state.pin(active),
            }
        }
        state
    }

    fn read_pin(&self, event: &Event) -> Result<ActivePin, String> {
        let data = event.log().map(|l| l.data.clone()).unwrap_or_default();
        let pin: Pin =
            serde_json::from_value(data).map_err(|e| format!("not a pin's data: {e}"))?;
        let (text, visible) = self.resolve(event.seq, &pin)?;
        Ok(ActivePin {
            at: event.seq,
            pin,
            text,
            visible,
        })
    }

    /// Whether `pin`, appended now, would be honoured: a pin of a message
    /// must name a message on the active path (with the block, when one
    /// is named, a text block), a pin of text must carry text.
    ///
    /// # Errors
    /// What is wrong, naming the seq, in words for a person.
    pub fn check_pin(&self, pin: &Pin) -> Result<(), String> {
        if let Some(seq) = pin.seq
            && !self.active_path().contains(&seq)
        {
            return Err(format!("seq {seq} is not on the active path"));
        }
        self.resolve(self.len() as Seq, pin).map(|_| ())
    }

    /// The text `pin`, written at `at`, keeps, and whether its message is
    /// on the surface.
    fn resolve(&self, at: Seq, pin: &Pin) -> Result<(String, bool), String> {
        let (text, visible) = match (pin.seq, &pin.text) {
            (Some(seq), None) => {
                let message = (seq < at)
                    .then(|| self.message(seq))
                    .flatten()
                    .ok_or_else(|| format!("seq {seq} is not an earlier message"))?;
                let text = match pin.block {
                    None => pinned_text(message),
                    Some(block) => match message.content.get(block) {
                        Some(Block::Text { text }) => text.clone(),
                        _ => return Err(format!("seq {seq} has no text block {block}")),
                    },
                };
                (text, self.surface().contains(seq))
            }
            (None, Some(text)) => (text.clone(), false),
            (Some(_), Some(_)) => return Err("names both a seq and a text".to_string()),
            (None, None) => return Err("names neither a seq nor a text".to_string()),
        };
        if text.trim().is_empty() {
            return Err("pins no text".to_string());
        }
        Ok((text, visible))
    }
}

/// What a pin keeps: the same message and block, or the same text, is one
/// pin however many events name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    Message(Seq, Option<usize>),
    Text(String),
}

impl Target {
    fn of(pin: &ActivePin) -> Self {
        match pin.pin.seq {
            Some(seq) => Target::Message(seq, pin.pin.block),
            None => Target::Text(pin.text.clone()),
        }
    }
}

/// The pins and unpins on the active path, read in order.
#[derive(Debug, Default)]
pub(crate) struct PinState {
    /// The live pins, oldest first, each with what it keeps.
    live: Vec<(Target, ActivePin)>,
    /// Every honoured pin event so far and what it keeps.
    by_event: HashMap<Seq, Target>,
    faults: Vec<PinFault>,
}

impl PinState {
    fn pin(&mut self, active: ActivePin) {
        let target = Target::of(&active);
        self.by_event.insert(active.at, target.clone());
        if !self.live.iter().any(|(t, _)| *t == target) {
            self.live.push((target, active));
        }
    }

    fn unpin(&mut self, event: &Event) {
        let data = event.log().map(|l| l.data.clone()).unwrap_or_default();
        let (named, reason) = match serde_json::from_value::<Unpin>(data) {
            Err(e) => (None, Some(format!("not an unpin's data: {e}"))),
            Ok(unpin) => (Some(unpin.pin), self.unpin_fault(unpin.pin)),
        };
        match (named, reason) {
            (Some(pin), None) => {
                if let Some(target) = self.by_event.get(&pin) {
                    self.live.retain(|(t, _)| t != target);
                }
            }
            (named, Some(reason)) => self.faults.push(PinFault {
                at: event.seq,
                reason,
                kind: TYPE_UNPIN,
                unpin_of: named,
            }),
            (None, None) => {}
        }
    }

    /// Why an unpin of the pin event at `pin`, read now, changes nothing.
    pub(crate) fn unpin_fault(&self, pin: Seq) -> Option<String> {
        let Some(target) = self.by_event.get(&pin) else {
            return Some(format!(
                "names seq {pin}, which is not a pin on the active path"
            ));
        };
        (!self.live.iter().any(|(t, _)| t == target))
            .then(|| format!("names pin {pin}, which is already unpinned"))
    }
}
