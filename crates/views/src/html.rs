//! HTML text helpers: escaping and the page shell with its embedded style.

/// `text` safe to place in HTML element content or a quoted attribute.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The style sheet: embedded so the page stands alone, no external assets.
const STYLE: &str = "
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; background: #fafafa; }
h1 { font-size: 1.3em; word-break: break-all; }
table.header td { padding: 2px 12px 2px 0; vertical-align: top; }
table.header td:first-child { color: #666; }
pre, code, .mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85em; }
pre { white-space: pre-wrap; word-break: break-word; background: #f0f0f0; padding: 6px; margin: 4px 0; border-radius: 3px; }
.msg { border-left: 4px solid #ccc; background: #fff; margin: 10px 0; padding: 6px 10px; }
.msg > .head { font-weight: 600; font-size: 0.9em; margin-bottom: 4px; }
.msg > .head .seq { color: #888; font-weight: normal; }
.role-user { border-color: #2b6cb0; }
.role-assistant { border-color: #2f855a; }
.role-tool { border-color: #b7791f; }
.role-system, .role-developer { border-color: #6b46c1; }
.text { white-space: pre-wrap; word-break: break-word; }
.hidden { opacity: 0.5; background: #eee; }
.hidden-note { color: #a00; font-weight: normal; font-size: 0.85em; margin-left: 8px; }
.call { margin: 4px 0; }
.call .name { font-weight: 600; }
.callid, .resultid { color: #666; }
.error { color: #a00; }
.divider { margin: 18px 0 4px; padding: 6px 10px; background: #fff4d6; border-top: 2px solid #d69e2e; border-bottom: 2px solid #d69e2e; font-weight: 600; }
.divider.rewrite { background: #eef6ff; border-color: #63b3ed; font-weight: normal; }
.log { color: #888; font-size: 0.8em; margin: 2px 0; }
.note { color: #777; font-style: italic; }
img.frame { max-width: 100%; border: 1px solid #ccc; display: block; margin: 6px 0; image-rendering: pixelated; }
img.image { max-width: 100%; border: 1px solid #ccc; display: block; margin: 6px 0; }
details > summary { cursor: pointer; color: #555; }
svg text { font-family: system-ui, sans-serif; font-size: 11px; fill: #444; }
";

/// The page up to its body, titled `title` (escaped here).
pub(crate) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    )
}

/// What closes the page after its body.
pub(crate) const TAIL: &str = "</body>\n</html>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_ampersands() {
        assert_eq!(
            escape("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
    }

    #[test]
    fn the_head_escapes_its_title() {
        let html = head("<b>");
        assert!(html.contains("<title>&lt;b&gt;</title>"));
        assert!(html.ends_with("<body>\n"));
    }
}
