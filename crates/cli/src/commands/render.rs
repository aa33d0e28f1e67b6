//! `abridge render`: text or a session's visible history printed onto PNG
//! frames, as snapcompact would show it to a vision model.

use std::io::Read;
use std::path::Path;
use std::path::PathBuf;

use abridge_llm::Catalog;
use abridge_snapcompact::FrameSpec;
use abridge_snapcompact::Ink;
use abridge_snapcompact::Run;
use abridge_snapcompact::SerializeConfig;
use abridge_snapcompact::Shape;
use anyhow::Context;
use serde::Serialize;

use crate::open::open_session;
use crate::redaction::RedactArgs;

/// Arguments of `abridge render`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// An abridge session file (its visible history is rendered), or with
    /// `--text` a text file (`-` for standard input).
    input: PathBuf,
    /// Directory for the PNG frames (created if missing).
    #[arg(short, long)]
    out: PathBuf,
    /// Render INPUT as plain text rather than a session.
    #[arg(long)]
    text: bool,
    /// The model that will read the frames (chooses shape, size, billing).
    #[arg(long, default_value = "claude-sonnet-4-5")]
    model: String,
    /// A shape by name, overriding the model's (11on16-bw, 8on22-bw,
    /// 8on16-bw, 8x13-bw).
    #[arg(long)]
    shape: Option<String>,
    /// Frame width in pixels, overriding the model's.
    #[arg(long)]
    width: Option<u32>,
    /// Tallest frame in pixels, overriding the model's.
    #[arg(long)]
    height: Option<u32>,
    /// Print the frames written and the totals as one JSON object.
    #[arg(long)]
    json: bool,
    /// Refuse, writing nothing, when the input needs more frames than
    /// this. The default, 1,000 full frames, is about 90 MB of PNG and ten
    /// times what any provider reads in one request (Anthropic takes 100
    /// images); a larger render is almost certainly a mistake.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAMES)]
    max_frames: usize,
    #[command(flatten)]
    redact: RedactArgs,
}

/// `--max-frames` when not given.
const DEFAULT_MAX_FRAMES: usize = 1000;

/// One PNG written, with what the model is billed for it.
#[derive(Debug, Serialize)]
struct Frame {
    path: PathBuf,
    width: u32,
    height: u32,
    /// Size of the PNG file.
    bytes: usize,
    /// Tokens the model's provider bills for this frame as an image.
    tokens: u64,
}

/// Everything `render` reports, also its `--json` form.
#[derive(Debug, Serialize)]
struct Rendered {
    model: String,
    frames: Vec<Frame>,
    /// Characters of text printed onto the frames.
    characters: usize,
    /// Billed tokens of all frames together.
    tokens: u64,
    characters_per_token: f64,
    /// Characters with no glyph in the shape's font, printed as `?`.
    missing_glyphs: usize,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let _progress = crate::progress::Progress::start("rendering frames", !args.json);
    let mut spec = FrameSpec::for_model(&args.model);
    if let Some(name) = &args.shape {
        spec = spec.with_shape(Shape::by_name(name)?);
    }
    if args.width.is_some() || args.height.is_some() {
        spec = spec.with_size(
            args.width.unwrap_or(spec.width),
            args.height.unwrap_or(spec.max_height),
        );
    }
    // Frames are files a reader can share: what they print is redacted
    // like everything else abridge writes.
    let redactor = if args.text {
        args.redact.redactor(Path::new("."))?
    } else {
        args.redact.redactor(&args.input)?
    };
    let (frames, chars) = if args.text {
        let text = read_text(&args.input)?;
        let text = abridge_compact::host::redact_with(redactor.as_deref(), &text).into_owned();
        let runs = [Run::new(Ink::Normal, abridge_snapcompact::normalize(&text))];
        (
            abridge_snapcompact::render_runs_within(&runs, &spec, 0, args.max_frames)?,
            text.chars().count(),
        )
    } else {
        let (session, _) = open_session(&args.input, false)?;
        let mut messages = session.surface_messages();
        if let Some(redactor) = &redactor {
            messages = redactor.redact_messages(&messages);
        }
        let runs = abridge_snapcompact::serialize(&messages, &SerializeConfig::default());
        let chars = runs.iter().map(|run| run.text.chars().count()).sum();
        (
            abridge_snapcompact::render_runs_within(&runs, &spec, 0, args.max_frames)?,
            chars,
        )
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let billing = Catalog::builtin().lookup(&args.model).entry.image_billing;
    let mut written = Vec::with_capacity(frames.len());
    for (index, frame) in frames.iter().enumerate() {
        let path = args.out.join(format!("frame-{index:03}.png"));
        abridge_session::write_private(&path, &frame.png)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(Frame {
            path,
            width: frame.width,
            height: frame.height,
            bytes: frame.png.len(),
            tokens: abridge_snapcompact::frame_tokens(&billing, frame.width, frame.height),
        });
    }
    let tokens = written.iter().map(|f| f.tokens).sum::<u64>();
    let rendered = Rendered {
        model: args.model.clone(),
        frames: written,
        characters: chars,
        tokens,
        characters_per_token: chars as f64 / tokens.max(1) as f64,
        missing_glyphs: frames.iter().map(|f| f.missing).sum(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rendered)?);
    } else {
        print_human(&rendered);
    }
    Ok(())
}

fn print_human(rendered: &Rendered) {
    for frame in &rendered.frames {
        println!(
            "{}  {}x{}  {} bytes  {} tokens",
            frame.path.display(),
            frame.width,
            frame.height,
            frame.bytes,
            frame.tokens
        );
    }
    println!(
        "{} frames, {} characters, {} tokens as images for {} ({:.2} characters per token){}",
        rendered.frames.len(),
        rendered.characters,
        rendered.tokens,
        rendered.model,
        rendered.characters_per_token,
        if rendered.missing_glyphs > 0 {
            format!(
                "; {} characters had no glyph and print as ?",
                rendered.missing_glyphs
            )
        } else {
            String::new()
        }
    );
}

fn read_text(path: &std::path::Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))
}
