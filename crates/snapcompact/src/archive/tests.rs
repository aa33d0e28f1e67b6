use super::*;
use abridge_llm::Meta;
use abridge_llm::Role;
use pretty_assertions::assert_eq;
use serde_json::json;

fn exchange(i: usize, body: &str) -> Vec<Message> {
    vec![
        Message::user(format!("step {i}: please look")),
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: json!({"path": format!("src/f{i}.rs")}),
            }],
            meta: Meta::default(),
        },
        Message::tool_result(format!("c{i}"), body, false),
        Message::assistant(format!("done with step {i}")),
    ]
}

fn history(steps: usize, body: &str) -> Vec<Message> {
    (0..steps).flat_map(|i| exchange(i, body)).collect()
}

fn small_spec() -> FrameSpec {
    FrameSpec::for_model("claude-sonnet-4-5").with_size(440, 160) // 40 x 10 cells sharp
}

fn config() -> ArchiveConfig {
    ArchiveConfig {
        head_chars: 60,
        tail_chars: 120,
        ..ArchiveConfig::default()
    }
}

#[test]
fn reink_restores_the_serializer_inks() {
    let messages = history(3, "fn a() {}\n[not a tag] x");
    let runs = serialize(&messages, &SerializeConfig::default());
    assert_eq!(reink(&plain_text(&runs)), runs);
}

#[test]
fn a_short_middle_is_printed_sharp_and_stored_without_pixels() {
    let messages = history(4, "fn main() {}");
    let cache = FrameCache::default();
    let archive = Archive::build(&messages, None, &small_spec(), 10, &config(), &cache).unwrap();
    assert_eq!(archive.segments.len(), 1);
    assert_eq!(archive.segments[0].shape, "11on16-bw");
    assert!(archive.head.starts_with("[user] step 0"));
    assert!(archive.tail.ends_with("[assistant] done with step 3"));
    let stored = archive
        .stored_content(&["src/f0.rs".into()], &cache)
        .unwrap();
    let json = serde_json::to_string(&stored).unwrap();
    assert!(!json.contains("iVBOR"), "no PNG in the stored checkpoint");
    assert!(json.contains(FRAME_URL_SCHEME));
    let expanded = archive.expand(&stored, &cache).unwrap();
    let frames = archive.frames(&cache).unwrap();
    let images: Vec<(u32, u32)> = expanded
        .iter()
        .filter_map(|b| match b {
            Block::Image {
                source: ImageSource::Base64 { data, .. },
                width,
                height,
            } => {
                assert!(data.starts_with("iVBOR"));
                Some((width.unwrap(), height.unwrap()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), frames.len());
    assert!(!images.is_empty());
    assert_eq!(images[0].0, 440);
}

#[test]
fn the_edges_never_cut_a_result_from_its_call() {
    let messages = history(6, "x");
    for head in [0, 20, 40, 60, 80, 100] {
        for tail in [0, 30, 60, 90, 120] {
            let config = ArchiveConfig {
                head_chars: head,
                tail_chars: tail,
                ..ArchiveConfig::default()
            };
            let (h, t) = edges(&messages, false, &config);
            assert!(h <= t);
            assert!(
                messages.get(h).is_none_or(|m| m.role != Role::Tool),
                "{head}/{tail}"
            );
            assert!(
                messages.get(t).is_none_or(|m| m.role != Role::Tool),
                "{head}/{tail}"
            );
        }
    }
}

#[test]
fn a_long_middle_keeps_sharp_ends_around_a_dense_centre() {
    let messages = history(40, &"0O1lI ".repeat(20));
    let cache = FrameCache::default();
    let spec = small_spec();
    let all_sharp = paginate(
        &reink(&plain_text(&serialize(
            &messages,
            &SerializeConfig::default(),
        ))),
        &Grid::new(spec.shape, 440, 160, 0).unwrap(),
    )
    .unwrap()
    .len();
    let budget = all_sharp * 9 / 10;
    assert!(budget >= 10, "{all_sharp}");
    let archive = Archive::build(&messages, None, &spec, budget, &config(), &cache).unwrap();
    let shapes: Vec<&str> = archive.segments.iter().map(|s| s.shape.as_str()).collect();
    assert_eq!(shapes, ["11on16-bw", "8on16-bw", "11on16-bw"]);
    assert_eq!(archive.dropped_chars, 0);
    let frames = archive.frames(&cache).unwrap();
    assert!(frames.len() <= budget, "{} > {budget}", frames.len());
    // Segments tile the middle exactly.
    assert_eq!(archive.segments[0].start, 0);
    for pair in archive.segments.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    assert_eq!(
        archive.segments.last().unwrap().end,
        archive.middle.chars().count()
    );
}

#[test]
fn when_dense_frames_cannot_hold_it_the_oldest_part_is_dropped_and_counted() {
    let messages = history(60, &"abcdefghij".repeat(30));
    let cache = FrameCache::default();
    let archive = Archive::build(&messages, None, &small_spec(), 3, &config(), &cache).unwrap();
    assert!(archive.dropped_chars > 0);
    assert!(archive.dropped_frames > 0);
    assert_eq!(archive.segments.len(), 1);
    assert_eq!(archive.segments[0].end, archive.middle.chars().count());
    assert!(archive.frames(&cache).unwrap().len() <= 3);
    let kept: String = archive.middle.chars().skip(archive.dropped_chars).collect();
    assert!(
        kept.starts_with('['),
        "the kept part starts at a scope: {kept:.40}"
    );
    let stored = archive.stored_content(&[], &cache).unwrap();
    let guide = stored[0].as_text().unwrap();
    assert!(
        guide.contains(&format!("The oldest {} characters", archive.dropped_chars)),
        "{guide}"
    );
}

#[test]
fn the_byte_budget_removes_frames_until_they_fit() {
    let messages = history(40, &"0O1lI ".repeat(20));
    let cache = FrameCache::default();
    let roomy = Archive::build(&messages, None, &small_spec(), 50, &config(), &cache).unwrap();
    let bytes: Vec<u64> = roomy
        .frames(&cache)
        .unwrap()
        .iter()
        .map(|f| base64_len(f.frame.png.len()))
        .collect();
    let budget = bytes.iter().take(3).sum::<u64>();
    let tight = ArchiveConfig {
        byte_budget: budget,
        ..config()
    };
    let archive = Archive::build(&messages, None, &small_spec(), 50, &tight, &cache).unwrap();
    let total: u64 = archive
        .frames(&cache)
        .unwrap()
        .iter()
        .map(|f| base64_len(f.frame.png.len()))
        .sum();
    assert!(total <= budget);
    let none = ArchiveConfig {
        byte_budget: 10,
        ..config()
    };
    assert!(matches!(
        Archive::build(&messages, None, &small_spec(), 50, &none, &cache),
        Err(Error::NoFrameBudget { .. })
    ));
}

#[test]
fn frames_are_cached_by_content() {
    let messages = history(4, "fn main() {}");
    let cache = FrameCache::default();
    let archive = Archive::build(&messages, None, &small_spec(), 10, &config(), &cache).unwrap();
    let first = archive.frames(&cache).unwrap();
    let second = archive.frames(&cache).unwrap();
    assert!(Arc::ptr_eq(&first[0].frame, &second[0].frame));
    let fresh = archive.frames(&FrameCache::default()).unwrap();
    assert_eq!(first[0].frame.png, fresh[0].frame.png);
}

#[test]
fn the_archive_round_trips_through_checkpoint_details() {
    let messages = history(4, "fn main() {}");
    let archive = Archive::build(
        &messages,
        Some("[user] earlier work"),
        &small_spec(),
        10,
        &config(),
        &FrameCache::default(),
    )
    .unwrap();
    assert!(
        archive.head.is_empty(),
        "an earlier archive is the oldest history"
    );
    assert!(archive.middle.starts_with("[user] earlier work\n"));
    let details = abridge_compact::Details::new()
        .with(&crate::ArchiveRecord::of(&archive))
        .unwrap();
    let text = archive.full_text();
    assert!(
        !serde_json::to_string(&details)
            .unwrap()
            .contains("earlier work"),
        "details hold no text"
    );
    assert_eq!(
        crate::archive_from_summary(&text, &details),
        Some(archive.clone())
    );
    assert_eq!(
        crate::archive_from_summary(&format!("{text}x"), &details),
        None
    );
    assert_eq!(
        crate::archive_from_summary(&text, &abridge_compact::Details::new()),
        None
    );
    assert!(archive.full_text().contains("earlier work"));
}
