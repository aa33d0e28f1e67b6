//! Limits for hostile input, for every importer: a line over the
//! configurable cap and JSON nested past the parser's depth limit each fail
//! with a typed error naming the file and line, before anything is built.
//! docs/bad-input.md lists these tests by name.

#![allow(clippy::unwrap_used)]

use abridge_import as import;
use abridge_import::Format;
use abridge_import::ImportError;
use abridge_import::ReadOptions;
use abridge_test_support::sessions;
use abridge_test_support::sessions::pi_image_line;

/// A small valid first record for each line-based format, so the bad line
/// is the second one.
fn first_line(format: Format) -> &'static str {
    match format {
        Format::Pi => sessions::PI_HEADER_LINE,
        Format::ClaudeCode => {
            r#"{"type":"user","uuid":"a","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}"#
        }
        Format::Codex => {
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}}"#
        }
        _ => "{}",
    }
}

const LINE_FORMATS: [Format; 4] = [
    Format::Pi,
    Format::ClaudeCode,
    Format::Codex,
    Format::OpenHands,
];

fn read(
    format: Format,
    bytes: &[u8],
    max_record_bytes: u64,
) -> Result<import::Imported, ImportError> {
    import::read_bytes_with(
        "hostile.jsonl",
        bytes,
        &ReadOptions {
            format: Some(format),
            max_record_bytes,
            ..ReadOptions::default()
        },
    )
}

#[test]
fn the_line_cap_defaults_to_64_mib() {
    assert_eq!(ReadOptions::default().max_record_bytes, 64 * 1024 * 1024);
    assert_eq!(import::MAX_RECORD_BYTES, 64 * 1024 * 1024);
}

#[test]
fn a_line_over_the_cap_is_refused_naming_file_and_line_in_every_importer() {
    for format in Format::ALL {
        let long = format!("{{\"text\":\"{}\"}}", "x".repeat(4096));
        let input = format!("{}\n{long}\n", first_line(format));
        match read(format, input.as_bytes(), 1024) {
            Err(ImportError::TooLong {
                file,
                line: 2,
                len,
                limit: 1024,
            }) => {
                assert_eq!(file, "hostile.jsonl");
                assert_eq!(len, long.len() as u64);
            }
            other => panic!("{}: {other:?}", format.name()),
        }
    }
}

#[test]
fn a_single_line_document_over_the_cap_is_refused_as_line_1() {
    let document = format!("{{\"trajectory\":[\"{}\"]}}", "y".repeat(10_000));
    let error = read(Format::SweAgent, document.as_bytes(), 4096).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "hostile.jsonl:1: record is {} bytes, over the limit of 4096 bytes",
            document.len()
        )
    );
}

#[test]
fn a_line_at_the_cap_is_read() {
    let input = format!("{}\n", first_line(Format::Pi));
    let cap = input.len() as u64 - 1;
    let error = read(Format::Pi, input.as_bytes(), cap).unwrap_err();
    // Past the cap check: the file is refused for holding no message.
    assert!(matches!(error, ImportError::NoMessages { .. }), "{error:?}");
}

#[test]
fn nesting_past_the_depth_limit_is_a_json_error_with_its_line() {
    for format in LINE_FORMATS {
        let nested = format!("{{\"a\":{}1{}}}", "[".repeat(5000), "]".repeat(5000));
        let input = format!("{}\n{nested}\n", first_line(format));
        match read(format, input.as_bytes(), import::MAX_RECORD_BYTES) {
            Err(ImportError::Json {
                line: 2, reason, ..
            }) => {
                assert!(reason.contains("recursion limit exceeded"), "{reason}");
            }
            other => panic!("{}: {other:?}", format.name()),
        }
    }
}

#[test]
fn a_document_nested_past_the_depth_limit_is_a_json_error_with_its_line() {
    let document = format!(
        "{{\n\"trajectory\": [],\n\"history\": {}0{}\n}}",
        "[".repeat(300),
        "]".repeat(300)
    );
    match read(
        Format::SweAgent,
        document.as_bytes(),
        import::MAX_RECORD_BYTES,
    ) {
        Err(ImportError::Json {
            line: 3, reason, ..
        }) => {
            assert!(reason.contains("recursion limit exceeded"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A Claude Code user line holding an inline PNG whose header claims
/// `width` x `height`.
fn claude_image_line(width: u32, height: u32) -> String {
    serde_json::json!({
        "type": "user", "uuid": "b", "parentUuid": "a", "sessionId": "s",
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                "data": abridge_llm::png_header_base64(width, height)}},
        ]},
    })
    .to_string()
}

fn with_image_cap(
    format: Format,
    bytes: &[u8],
    limit: u64,
) -> Result<import::Imported, ImportError> {
    import::read_bytes_with(
        "hostile.jsonl",
        bytes,
        &ReadOptions {
            format: Some(format),
            max_image_pixels: limit,
            ..ReadOptions::default()
        },
    )
}

#[test]
fn an_image_claiming_past_the_pixel_cap_is_refused_naming_file_line_and_field() {
    for (format, line) in [
        (Format::ClaudeCode, claude_image_line(100_000, 100_000)),
        (Format::Pi, pi_image_line(100_000, 100_000)),
    ] {
        let bytes = format!("{}\n{line}\n", first_line(format));
        let error = with_image_cap(
            format,
            bytes.as_bytes(),
            ReadOptions::default().max_image_pixels,
        )
        .unwrap_err();
        assert!(
            matches!(
                error,
                ImportError::ImageTooLarge {
                    line: Some(2),
                    width: 100_000,
                    height: 100_000,
                    ..
                }
            ),
            "{format:?}: {error:?}"
        );
        let text = error.to_string();
        assert!(
            text.starts_with("hostile.jsonl:2: field `message.content[")
                && text.ends_with(
                    "]`: the image claims 100000x100000 pixels, over the limit of 50000000 pixels"
                ),
            "{format:?}: {text}"
        );
    }
}

#[test]
fn the_pixel_cap_is_configurable_and_defaults_to_50_megapixels() {
    assert_eq!(ReadOptions::default().max_image_pixels, 50_000_000);
    let bytes = format!(
        "{}\n{}\n",
        first_line(Format::ClaudeCode),
        claude_image_line(1000, 1000)
    );
    assert!(with_image_cap(Format::ClaudeCode, bytes.as_bytes(), 1_000_000).is_ok());
    assert!(matches!(
        with_image_cap(Format::ClaudeCode, bytes.as_bytes(), 999_999),
        Err(ImportError::ImageTooLarge { .. })
    ));
}

/// A cap raised past the default holds all the way into the session: the
/// session checks every image again, so without the raised cap there a
/// file the reader accepted would still be refused on write.
#[test]
fn a_raised_pixel_cap_holds_through_the_session_written() {
    // 64 megapixels: past the default of 50, under a raised cap of 100.
    let bytes = sessions::pi_session_with_image(8000, 8000);
    let raised = 100_000_000;
    let store = || Box::new(abridge_session::MemoryStore::new());
    let imported = with_image_cap(Format::Pi, bytes.as_bytes(), raised).unwrap();
    let refused = imported.clone().into_session(store()).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("over the limit of 50000000 pixels"),
        "{refused}"
    );
    let (session, _) = imported.into_session_with(store(), raised).unwrap();
    assert_eq!(session.surface().len(), 1);

    // The streaming path, read from a file, takes the cap from the options.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big-image.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let options = |max_image_pixels| ReadOptions {
        format: Some(Format::Pi),
        max_image_pixels,
        ..ReadOptions::default()
    };
    let written = import::write_with(&path, &options(raised), store()).unwrap();
    assert_eq!(written.surface_messages, 1);
    assert!(matches!(
        import::write_with(&path, &ReadOptions::default(), store()),
        Err(ImportError::ImageTooLarge { line: Some(2), .. })
    ));
}
