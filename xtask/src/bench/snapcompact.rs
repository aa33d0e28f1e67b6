//! Benchmarks for the snapcompact area: frames drawn and PNG-encoded per
//! second on one core, and the time to build the frames of a 200k-token
//! archive.

use std::time::Duration;
use std::time::Instant;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_meter::Estimate;
use abridge_meter::Tokenizer;
use abridge_snapcompact::Archive;
use abridge_snapcompact::ArchiveConfig;
use abridge_snapcompact::FrameCache;
use abridge_snapcompact::FrameSpec;
use abridge_snapcompact::Grid;
use abridge_snapcompact::Ink;
use abridge_snapcompact::Run;
use abridge_snapcompact::Shape;
use abridge_snapcompact::normalize;
use abridge_snapcompact::paginate;
use abridge_snapcompact::render_page;

use super::Section;
use super::fmt_duration;
use super::median_time;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    Ok(vec![frames_per_second()?, archive_build()?])
}

/// Text that fills frames: the eval corpus, repeated, with results dimmed.
fn filler(chars: usize) -> Vec<Run> {
    let corpus: Vec<String> = crate::eval::corpus()
        .into_iter()
        .map(|s| normalize(&s.text))
        .collect();
    let mut runs = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < chars {
        let text = &corpus[i % corpus.len()];
        let ink = if i % 2 == 0 { Ink::Normal } else { Ink::Dim };
        total += text.chars().count();
        runs.push(Run::new(ink, text.clone()));
        i += 1;
    }
    runs
}

fn frames_per_second() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "snapcompact frames",
        "One full frame of mixed text (black and grey ink) laid out, drawn and PNG-encoded on one core, against the same \
         pixels encoded as 8-bit greyscale PNG (what a renderer without a narrowed palette would write).",
        &[
            "frame",
            "shape",
            "frames/s",
            "time/frame",
            "PNG KB",
            "8-bit grey PNG KB",
            "size ratio",
            "grey encode time",
        ],
    );
    for (width, height) in [(1568u32, 1568u32), (1932, 1932)] {
        let shape = Shape::by_name("11on16-bw")?;
        let grid = Grid::new(shape, width, height, 0)?;
        let runs = filler(grid.cells_per_frame() * 2);
        let page = paginate(&runs, &grid)?
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("no page"))?;
        let time = median_time(Duration::from_secs(3), || render_page(&page, &grid));
        let frame = render_page(&page, &grid)?;
        let (grey, grey_time) = grey_png(&frame.png)?;
        section.row(vec![
            format!("{width}x{height}"),
            shape.name.to_string(),
            format!("{:.1}", 1.0 / time.as_secs_f64()),
            fmt_duration(time),
            format!("{:.1}", frame.png.len() as f64 / 1024.0),
            format!("{:.1}", grey as f64 / 1024.0),
            format!(
                "{:.1}x smaller",
                grey as f64 / frame.png.len().max(1) as f64
            ),
            fmt_duration(grey_time),
        ]);
    }
    Ok(section)
}

/// Re-encodes a frame as 8-bit greyscale; returns (bytes, encode time).
fn grey_png(png_bytes: &[u8]) -> anyhow::Result<(usize, Duration)> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![
        0;
        reader
            .output_buffer_size()
            .ok_or_else(|| anyhow::anyhow!("too large"))?
    ];
    let info = reader.next_frame(&mut buf)?;
    let channels = info.color_type.samples();
    let grey: Vec<u8> = buf.chunks(channels).map(|px| px[0]).collect();
    let encode = || -> anyhow::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, info.width, info.height);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Balanced);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&grey)?;
        writer.finish()?;
        Ok(out)
    };
    let bytes = encode()?.len();
    let time = median_time(Duration::from_secs(2), encode);
    Ok((bytes, time))
}

/// A synthetic coding session of about `tokens` o200k tokens.
fn session(tokens: usize) -> (Vec<Message>, usize) {
    let bpe = tiktoken_rs::o200k_base().ok();
    let corpus = crate::eval::corpus();
    let mut messages = Vec::new();
    let mut counted = 0usize;
    let mut i = 0usize;
    while counted < tokens {
        let sample = &corpus[i % corpus.len()];
        let call = Message {
            role: Role::Assistant,
            content: vec![
                Block::text(format!("Step {i}: reading the {} sample.", sample.kind)),
                Block::ToolCall {
                    id: format!("c{i}"),
                    name: "read".into(),
                    arguments: serde_json::json!({ "path": format!("src/{}_{i}.txt", sample.kind) }),
                },
            ],
            meta: Meta::default(),
        };
        let result = Message::tool_result(format!("c{i}"), sample.text.clone(), false);
        for message in [&call, &result] {
            let text = message.plain_text();
            counted += bpe
                .as_ref()
                .map_or_else(|| Estimate.count(&text), |b| b.encode_ordinary(&text).len())
                + 4;
        }
        messages.push(call);
        messages.push(result);
        i += 1;
    }
    (messages, counted)
}

fn archive_build() -> anyhow::Result<Section> {
    let spec = FrameSpec::for_model("claude-sonnet-4-5");
    let mut section = Section::new(
        "snapcompact archive build",
        &format!(
            "A synthetic 200k-token session (o200k) planned into an archive for claude-sonnet-4-5 (11on16-bw on frames \
             {}x{} at most, foveated to fit) and every frame drawn and encoded, on one core, from a cold frame cache; \
             beside the time to count the same history with o200k, the step every text method pays first. Claude lines \
             up to 4.6 read frames of at most 1568x752 (so the provider never shrinks one; earlier runs of this table \
             drew 1568x1568 frames, half as many for the same text).",
            spec.width, spec.max_height
        ),
        &[
            "history",
            "frames",
            "plan + draw",
            "frames again (cached)",
            "o200k count of the text",
            "base64 MB",
        ],
    );
    let (messages, tokens) = session(200_000);
    let unlimited = ArchiveConfig {
        byte_budget: u64::MAX,
        ..ArchiveConfig::default()
    };
    let default = ArchiveConfig::default();
    for (max_frames, config, label) in [
        (200usize, &unlimited, "no byte limit"),
        (30, &unlimited, "no byte limit"),
        (200, &default, "3 MB base64 (default)"),
    ] {
        let cache = FrameCache::new(1024);
        let start = Instant::now();
        let archive = Archive::build(&messages, None, &spec, max_frames, config, &cache)?;
        let frames = archive.frames(&cache)?;
        let cold = start.elapsed();
        let warm = median_time(Duration::from_secs(1), || archive.frames(&cache));
        let bytes: u64 = frames
            .iter()
            .map(|f| abridge_snapcompact::base64_len(f.frame.png.len()))
            .sum();
        let text: String = messages
            .iter()
            .map(Message::plain_text)
            .collect::<Vec<_>>()
            .join("\n");
        let count_time = match tiktoken_rs::o200k_base() {
            Ok(bpe) => {
                let t = Instant::now();
                std::hint::black_box(bpe.encode_ordinary(&text).len());
                fmt_duration(t.elapsed())
            }
            Err(_) => "n/a".to_string(),
        };
        let shapes: Vec<&str> = archive.segments.iter().map(|s| s.shape.as_str()).collect();
        section.row(vec![
            format!("{tokens} tokens, {} messages", messages.len()),
            format!(
                "{} of at most {max_frames}, {label} ({}{})",
                frames.len(),
                shapes.join(" / "),
                if archive.dropped_chars > 0 {
                    format!("; oldest {} chars dropped", archive.dropped_chars)
                } else {
                    String::new()
                }
            ),
            fmt_duration(cold),
            fmt_duration(warm),
            count_time,
            format!("{:.1}", bytes as f64 / 1e6),
        ]);
    }
    section.note("With 30 frames the middle no longer fits sharp frames, so its centre moves to 8on16-bw (foveation); under the default 3 MB byte budget the oldest part is dropped as well.");
    Ok(section)
}
