//! Text helpers every page shares: clipping a label, escaping XML and HTML.

/// Clipping lives with the verdicts, whose messages quote clipped values too.
pub use crate::checkers::verdict::clip;

/// Text for XML and HTML bodies and attributes.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}
