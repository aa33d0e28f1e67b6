//! The `snapcompact` compaction method: the planned span becomes one
//! checkpoint of text edges around frame references.

use std::sync::Arc;

use abridge_compact::Availability;
use abridge_compact::Capabilities;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::FileAccess;
use abridge_compact::FileOps;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_llm::Message;
use abridge_llm::ModelEntry;
use abridge_llm::Origin;
use async_trait::async_trait;

use crate::archive::Archive;
use crate::archive::ArchiveConfig;
use crate::budget::BudgetInputs;
use crate::budget::base64_len;
use crate::budget::frame_budget;
use crate::budget::frame_tokens;
use crate::error::Error;
use crate::frame_cache::FrameCache;
use crate::record::ArchiveRecord;
use crate::record::FrameStats;
use crate::shape::FrameSpec;
use crate::thinking::thinking_allowed;

/// The method's name in events and `--method`.
pub const METHOD_NAME: &str = "snapcompact";

/// Knobs of the method besides the archive's own.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapcompactConfig {
    /// Layout of the archive.
    pub archive: ArchiveConfig,
    /// Tokens kept free for the model's reply when sizing the frame budget.
    /// Default 16,000, or the model's max output if smaller.
    pub reply_reserve: u64,
    /// Base64 bytes one full frame is assumed to take before any is drawn.
    /// Default 120,000: a full 1568x1568 frame with grey tool output
    /// measures about 90 KB of PNG, 120 KB as base64 (BENCHMARKS.md). The
    /// archive then checks the real bytes.
    pub bytes_per_frame_estimate: u64,
    /// The method declines (unavailable) when the room its pass gives it
    /// holds frames for less than this percentage of the history: the
    /// rest would be dropped, and a summary that covers all of it keeps
    /// more (see BENCHMARKS.md, "Default method order"). Default 20; 0
    /// never declines.
    pub min_printed_percent: u8,
}

impl Default for SnapcompactConfig {
    fn default() -> Self {
        SnapcompactConfig {
            archive: ArchiveConfig::default(),
            reply_reserve: 16_000,
            bytes_per_frame_estimate: 120_000,
            min_printed_percent: 20,
        }
    }
}

/// History printed onto frames for a vision model.
///
/// Built for one model (frames are shaped and billed for it); build a new
/// one when the harness switches models.
///
/// Available only when the model reads images. `run` refuses with
/// [`MethodError::NotSmaller`] when the frames, guide and text edges would
/// not cost fewer tokens than the span they replace, so a chain of methods
/// falls through to the next one.
#[derive(Debug, Clone)]
pub struct Snapcompact {
    model: String,
    entry: ModelEntry,
    spec: FrameSpec,
    config: SnapcompactConfig,
    cache: Arc<FrameCache>,
}

impl Snapcompact {
    /// The method for `model`, with figures from `catalog` and the frame
    /// spec its model line reads best.
    pub fn new(model: &str, catalog: &Catalog) -> Self {
        Snapcompact {
            model: model.to_string(),
            entry: catalog.lookup(model).entry,
            spec: FrameSpec::for_model(model),
            config: SnapcompactConfig::default(),
            cache: Arc::new(FrameCache::default()),
        }
    }

    /// Overrides the frame spec (shape or size).
    pub fn with_spec(mut self, spec: FrameSpec) -> Self {
        self.spec = spec;
        self
    }

    /// Overrides the configuration.
    pub fn with_config(mut self, config: SnapcompactConfig) -> Self {
        self.config = config;
        self
    }

    /// Shares a frame cache with the request builder, so frames drawn while
    /// compacting are not drawn again for the next request.
    pub fn with_cache(mut self, cache: Arc<FrameCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The frame cache.
    pub fn cache(&self) -> &Arc<FrameCache> {
        &self.cache
    }

    /// The frame spec in use.
    pub fn spec(&self) -> &FrameSpec {
        &self.spec
    }

    fn fail(&self, error: Error) -> MethodError {
        match error {
            Error::NoFrameBudget { reason } => MethodError::Unavailable {
                method: METHOD_NAME.to_string(),
                reason,
            },
            Error::NoSaving { imaged, text } => MethodError::NotSmaller {
                method: METHOD_NAME.to_string(),
                checkpoint_tokens: imaged,
                hidden_tokens: text,
            },
            other => MethodError::Summary {
                method: METHOD_NAME.to_string(),
                reason: other.to_string(),
            },
        }
    }

    fn build(&self, plan: &Plan) -> Result<Checkpoint, Error> {
        // A previous snapcompact checkpoint is re-rendered from its text.
        let first_is_ours = plan
            .messages()
            .first()
            .is_some_and(|m| is_snapcompact_checkpoint(m));
        let (earlier, messages) = match (plan.previous(), first_is_ours) {
            (Some(previous), true) => (Some(previous.summary.as_str()), &plan.messages()[1..]),
            _ => (None, plan.messages()),
        };

        let billing = self.entry.image_billing;
        let reserve = self.config.reply_reserve.min(self.entry.max_output);
        let window_left = self
            .entry
            .context_window
            .saturating_sub(plan.tokens().head + plan.tokens().kept + reserve);
        let images_present: usize = plan
            .head()
            .iter()
            .chain(plan.kept())
            .map(|m| count_images(&m.content))
            .sum();
        let images_left =
            self.entry.images.max_per_request.map(|limit| {
                limit.saturating_sub(u32::try_from(images_present).unwrap_or(u32::MAX))
            });
        let tokens_per_frame = frame_tokens(&billing, self.spec.width, self.spec.max_height);
        let room = plan.room();
        let budget = frame_budget(&BudgetInputs {
            tokens_left: window_left.min(plan.tokens().hidden),
            tokens_per_frame,
            images_left,
            byte_budget: self.config.archive.byte_budget,
            bytes_per_frame: self.config.bytes_per_frame_estimate,
            room,
        });
        tracing::debug!(
            frames = budget.frames,
            limited_by = budget.limited_by.as_str(),
            "snapcompact frame budget"
        );
        if budget.frames == 0
            && plan.tokens().hidden <= tokens_per_frame
            && window_left >= tokens_per_frame
        {
            // One frame would cost more than the whole span as text.
            return Err(Error::NoSaving {
                imaged: tokens_per_frame,
                text: plan.tokens().hidden,
            });
        }
        if budget.frames == 0 {
            return Err(Error::NoFrameBudget {
                reason: format!("{} allows no frame", budget.limited_by.as_str()),
            });
        }
        // Thinking is printed only for families that read earlier reasoning
        // (and only when the configuration asks for it at all).
        let mut archive_config = self.config.archive.clone();
        archive_config.serialize.include_thinking &= thinking_allowed(&self.entry);
        let mut files = plan.previous().map(|p| p.files.clone()).unwrap_or_default();
        for message in messages {
            record_files(message, &mut files);
        }
        let file_list: Vec<String> = files.paths.keys().cloned().collect();
        let counter = |text: &str| plan.count(&Message::user(text));
        // The text edges and the guide cost too: with the room given,
        // fewer frames (the oldest text dropped) until the whole
        // checkpoint fits it.
        let mut frames = budget.frames;
        let (archive, imaged) = loop {
            let archive = Archive::build(
                messages,
                earlier,
                &self.spec,
                frames,
                &archive_config,
                &self.cache,
            )?;
            let imaged = archive.tokens(&billing, &file_list, &counter, &self.cache)?;
            let Some(room) = room.filter(|room| imaged > *room) else {
                break (archive, imaged);
            };
            let drawn = archive.frames(&self.cache)?.len();
            let over = usize::try_from((imaged - room).div_ceil(tokens_per_frame.max(1)))
                .unwrap_or(usize::MAX);
            frames = drawn.saturating_sub(over.max(1));
            if frames == 0 {
                return Err(Error::NoFrameBudget {
                    reason: format!(
                        "the room of {room} tokens under the pass's goal holds no frame beside the text edges ({imaged} tokens with {drawn} frame(s))"
                    ),
                });
            }
        };
        let middle = archive.middle.chars().count();
        let printed = middle.saturating_sub(archive.dropped_chars);
        if printed * 100 < middle * usize::from(self.config.min_printed_percent) {
            return Err(Error::NoFrameBudget {
                reason: format!(
                    "the frames that fit would print {printed} of the {middle} characters of history (under {}%); a summary keeps more",
                    self.config.min_printed_percent
                ),
            });
        }
        let limited_by = if frames < budget.frames {
            crate::budget::Limit::Room
        } else {
            budget.limited_by
        };
        let content = archive.stored_content(&file_list, &self.cache)?;
        if imaged >= plan.tokens().hidden {
            return Err(Error::NoSaving {
                imaged,
                text: plan.tokens().hidden,
            });
        }
        let frames = archive.frames(&self.cache)?;
        let bytes: u64 = frames.iter().map(|f| base64_len(f.frame.png.len())).sum();
        let short_summary = format!(
            "Earlier history ({} characters) printed on {} frame(s) of shape {} at {} px wide{}.",
            archive.middle.chars().count(),
            frames.len(),
            self.spec.shape.name,
            self.spec.width,
            if archive.dropped_chars > 0 {
                format!(
                    "; its oldest {} characters were left out",
                    archive.dropped_chars
                )
            } else {
                String::new()
            }
        );
        let record = ArchiveRecord {
            stats: Some(FrameStats {
                frames: frames.len(),
                frame_tokens: imaged,
                hidden_tokens: plan.tokens().hidden,
                base64_bytes: bytes,
                limited_by: limited_by.as_str().to_string(),
            }),
            ..ArchiveRecord::of(&archive)
        };
        let details = Details::new().with(&record)?;
        Ok(Checkpoint::new(archive.full_text())
            .as_transcript()
            .with_content(content)
            .with_short_summary(short_summary)
            .with_files(files)
            .with_details(details))
    }
}

#[async_trait]
impl CompactionMethod for Snapcompact {
    fn name(&self) -> &str {
        METHOD_NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::MODEL_FREE
    }

    fn available(&self) -> Availability {
        if !self.entry.vision {
            return Availability::Unavailable {
                reason: Error::NoVision {
                    model: self.model.clone(),
                }
                .to_string(),
            };
        }
        Availability::Ready
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let _span = tracing::info_span!(
            "snapcompact",
            messages = plan.messages().len(),
            hidden = plan.tokens().hidden
        )
        .entered();
        self.build(plan)
            .map(MethodOutput::Checkpoint)
            .map_err(|e| self.fail(e))
    }
}

/// True for a checkpoint message written by this method.
pub fn is_snapcompact_checkpoint(message: &Message) -> bool {
    matches!(&message.meta.origin, Some(Origin::Checkpoint { method, .. }) if method == METHOD_NAME)
}

fn count_images(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            Block::Image { .. } => 1,
            Block::ToolResult { content, .. } => count_images(content),
            _ => 0,
        })
        .sum()
}

/// Records the paths tool calls name, by what the tool's name suggests.
fn record_files(message: &Message, files: &mut FileOps) {
    for (_, name, arguments) in message.tool_calls() {
        let name = name.to_ascii_lowercase();
        let access = if ["write", "edit", "patch", "create", "replace", "str_replace"]
            .iter()
            .any(|k| name.contains(k))
        {
            FileAccess::Write
        } else if ["read", "view", "open", "cat"]
            .iter()
            .any(|k| name.contains(k))
        {
            FileAccess::Read
        } else {
            continue;
        };
        for key in ["path", "file_path", "filePath", "file"] {
            if let Some(path) = arguments.get(key).and_then(|v| v.as_str()) {
                files.record(path, access);
            }
        }
    }
}
