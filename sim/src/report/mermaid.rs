//! A [`Diagram`] as a Mermaid `sequenceDiagram` (GitHub and most Markdown viewers draw it).

use std::fmt::Write as _;

use super::diagram::{title, Diagram, Item, Mark};

impl Diagram {
    /// The diagram as Mermaid `sequenceDiagram` source (no fences). Highlighted rows sit in a
    /// `rect` block: red for witnesses, amber for the enabling fault.
    pub fn mermaid(&self) -> String {
        let mut out = String::from("sequenceDiagram\n");
        for p in &self.participants {
            let _ = writeln!(out, "    participant {p} as {}", title(p));
        }
        let id = |i: usize| self.participants[i].as_str();
        // Consecutive rows with the same highlight share one `rect` block.
        let mut open = Mark::None;
        for it in &self.items {
            // Every row starts with the op numbers the verdict cites
            // (`op 26→27`: Mermaid reads `#` as the start of an entity code.)
            let tag = it
                .op_tag()
                .map(|t| format!("op {} ", t.trim_start_matches('#')))
                .unwrap_or_default();
            if it.mark() != open {
                if open != Mark::None {
                    out.push_str("    end\n");
                }
                match it.mark() {
                    Mark::Witness => out.push_str("    rect rgb(255, 205, 210)\n"),
                    Mark::Fault => out.push_str("    rect rgb(255, 236, 179)\n"),
                    Mark::None => {}
                }
                open = it.mark();
            }
            match it {
                Item::Arrow {
                    from,
                    to,
                    label,
                    reply,
                    lost,
                    time_ms,
                    mark,
                    ..
                } => {
                    let arrow = match (reply, lost) {
                        (false, false) => "->>",
                        (true, false) => "-->>",
                        (false, true) => "-x",
                        (true, true) => "--x",
                    };
                    let lost_tag = if *lost { " LOST" } else { "" };
                    let star = if *mark == Mark::Witness { "⚠ " } else { "" };
                    let _ = writeln!(
                        out,
                        "    {}{arrow}{}: {star}{tag}{time_ms}ms {}{lost_tag}",
                        id(*from),
                        id(*to),
                        mermaid_escape(label)
                    );
                }
                Item::Note {
                    first,
                    last,
                    text,
                    time_ms,
                    mark,
                    ..
                } => {
                    let over = if first == last {
                        id(*first).to_string()
                    } else {
                        format!("{},{}", id(*first), id(*last))
                    };
                    let star = if *mark == Mark::Witness { "⚠ " } else { "" };
                    let _ = writeln!(
                        out,
                        "    Note over {over}: {}{star}{tag}{time_ms}ms {}",
                        wrap_tag(text),
                        mermaid_escape(text)
                    );
                }
            }
        }
        if open != Mark::None {
            out.push_str("    end\n");
        }
        if let Some(v) = &self.verdict {
            let last = self.participants.len().saturating_sub(1);
            let _ = writeln!(
                out,
                "    rect rgb(255, 205, 210)\n    Note over {},{}: {}{}\n    end",
                id(0),
                id(last),
                wrap_tag(v),
                mermaid_escape(v)
            );
        }
        out
    }
}

/// Mermaid draws a note as wide as the participants it spans and lets longer text spill over
/// the edge; `wrap:` makes it wrap instead (short notes stay on one line).
fn wrap_tag(text: &str) -> &'static str {
    if text.chars().count() >= 60 {
        "wrap: "
    } else {
        ""
    }
}

/// Mermaid message text: `#` starts an entity code and `;` may end a statement, so both are
/// written as entity codes; newlines become spaces.
fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
