//! `abridge render`: text or a session's visible history printed onto PNG
//! frames, as snapcompact would show it to a vision model.

use std::io::Read;
use std::path::PathBuf;

use abridge_llm::Catalog;
use abridge_snapcompact::FrameSpec;
use abridge_snapcompact::SerializeConfig;
use abridge_snapcompact::Shape;
use anyhow::Context;

use crate::open::open_session;

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
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let _progress = crate::progress::Progress::start("rendering frames", true);
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
    let (frames, chars) = if args.text {
        let text = read_text(&args.input)?;
        (
            abridge_snapcompact::render_text(&text, &spec)?,
            text.chars().count(),
        )
    } else {
        let (session, _) = open_session(&args.input, false)?;
        let messages = session.surface_messages();
        let config = SerializeConfig::default();
        let chars = abridge_snapcompact::serialize(&messages, &config)
            .iter()
            .map(|run| run.text.chars().count())
            .sum();
        (
            abridge_snapcompact::render_messages(&messages, &spec, &config)?,
            chars,
        )
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let billing = Catalog::builtin().lookup(&args.model).entry.image_billing;
    let mut tokens = 0;
    let mut missing = 0;
    for (index, frame) in frames.iter().enumerate() {
        let path = args.out.join(format!("frame-{index:03}.png"));
        std::fs::write(&path, &frame.png)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let cost = abridge_snapcompact::frame_tokens(&billing, frame.width, frame.height);
        tokens += cost;
        missing += frame.missing;
        println!(
            "{}  {}x{}  {} bytes  {} tokens",
            path.display(),
            frame.width,
            frame.height,
            frame.png.len(),
            cost
        );
    }
    println!(
        "{} frames, {} characters, {} tokens as images for {} ({:.2} characters per token){}",
        frames.len(),
        chars,
        tokens,
        args.model,
        chars as f64 / tokens.max(1) as f64,
        if missing > 0 {
            format!("; {missing} characters had no glyph and print as ?")
        } else {
            String::new()
        }
    );
    Ok(())
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
