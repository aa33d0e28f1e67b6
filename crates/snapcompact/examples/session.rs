//! Prints a real session's history as a snapcompact archive would:
//! `cargo run -p abridge-snapcompact --example session -- SESSION_FILE OUT_DIR [MODEL] [MAX_FRAMES]`.
//!
//! The file is read with abridge-session's importers (pi, Claude Code,
//! Codex, SWE-agent), its whole surface is planned into an archive, and
//! every frame is written as a PNG next to `edges.txt` (the text head and
//! tail) so the result can be looked at.

use abridge_session::Session;
use abridge_snapcompact::Archive;
use abridge_snapcompact::ArchiveConfig;
use abridge_snapcompact::FrameCache;
use abridge_snapcompact::FrameSpec;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(out)) = (args.get(1), args.get(2)) else {
        return Err("usage: session SESSION_FILE OUT_DIR [MODEL] [MAX_FRAMES]".into());
    };
    let model = args.get(3).map_or("claude-sonnet-4-5", String::as_str);
    let max_frames: usize = args.get(4).map_or(Ok(8), |s| s.parse())?;
    let imported = abridge_import::read(std::path::Path::new(input), None)?;
    let mut session = Session::in_memory("example");
    imported.append_to(&mut session)?;
    let messages = session.surface_messages();
    let spec = FrameSpec::for_model(model);
    let cache = FrameCache::default();
    let archive = Archive::build(
        &messages,
        None,
        &spec,
        max_frames,
        &ArchiveConfig::default(),
        &cache,
    )?;
    std::fs::create_dir_all(out)?;
    let out = std::path::Path::new(out);
    for (index, frame) in archive.frames(&cache)?.iter().enumerate() {
        let name = format!("frame-{index:02}-{}.png", frame.shape);
        std::fs::write(out.join(name), &frame.frame.png)?;
    }
    let edges = format!(
        "{}\n\n----- middle imaged -----\n\n{}",
        archive.head, archive.tail
    );
    std::fs::write(out.join("edges.txt"), edges)?;
    Ok(())
}
