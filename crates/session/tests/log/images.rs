//! The pixel cap on appended images (issue 11, point 7): an inline image
//! whose header claims more pixels than the cap is refused on append with
//! the field named, and nothing is written.

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_session::Session;
use abridge_session::SessionError;

use crate::support;

fn looking_at(width: u32, height: u32) -> Message {
    Message {
        content: vec![
            Block::text("look"),
            Block::Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: abridge_llm::png_header_base64(width, height),
                },
                width: None,
                height: None,
            },
        ],
        ..Message::user("")
    }
}

#[test]
fn an_appended_image_claiming_past_the_pixel_cap_is_refused() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    session.append_message(Message::user("hello")).unwrap();
    let before = support::file_hash(&path);
    let error = session
        .append_message(looking_at(100_000, 100_000))
        .unwrap_err();
    assert!(matches!(error, SessionError::Invalid { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "draft 0 of the batch: field `data.message.content`: content[1]: the image claims 100000x100000 pixels, over the limit of 50000000 pixels"
    );
    assert_eq!(support::file_hash(&path), before);
    assert_eq!(session.len(), 1);
}

#[test]
fn the_append_pixel_cap_is_configurable() {
    let mut session = Session::in_memory("cap");
    session.set_max_image_pixels(1_000_000);
    session.append_message(looking_at(1000, 1000)).unwrap();
    assert!(session.append_message(looking_at(1001, 1000)).is_err());
}
