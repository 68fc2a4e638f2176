//! A [`Diagram`] as a self-contained SVG (no script, nothing fetched), for `report.html`.

use std::fmt::Write as _;

use super::diagram::{title, Diagram, Item, Mark};
use super::text::xml_escape;

/// The smallest scale an SVG diagram is drawn at to fit its container (below it, the container
/// scrolls sideways).
pub const SVG_MIN_SCALE: f64 = 0.75;

impl Diagram {
    /// The diagram as a standalone SVG document (inline styles, no fonts or scripts fetched).
    /// It scales down to the width of its container, to at most [`SVG_MIN_SCALE`] of its size
    /// (`min-width`); a page puts it in a container that scrolls sideways below that, so no
    /// column is ever cut off.
    ///
    /// Long on purpose: a renderer writes its drawing top to bottom; the order of the code is the
    /// order of the SVG.
    pub fn svg(&self) -> String {
        const COL: f64 = 290.0;
        const LEFT: f64 = 150.0;
        const TOP: f64 = 56.0;
        const LINE: f64 = 14.0;
        let n = self.participants.len().max(1);
        let width = LEFT * 2.0 + COL * (n as f64 - 1.0);
        let x = |i: usize| LEFT + COL * i as f64;
        // Lay out rows first: a row is as tall as its wrapped text.
        let mut rows: Vec<(f64, f64, Vec<String>)> = Vec::new(); // (y, height, lines)
        let mut y = TOP + 16.0;
        for it in &self.items {
            // Every row starts with the op numbers the verdict cites (`#26→27`).
            let tag = it.op_tag().map(|t| format!("{t} ")).unwrap_or_default();
            let (text, chars) = match it {
                Item::Arrow {
                    from,
                    to,
                    label,
                    time_ms,
                    lost,
                    ..
                } => {
                    let span = (*from as f64 - *to as f64).abs().max(1.0);
                    let lost = if *lost { " LOST" } else { "" };
                    (
                        format!("{tag}{time_ms}ms {label}{lost}"),
                        (span * COL / 6.6) as usize,
                    )
                }
                Item::Note {
                    first,
                    last,
                    text,
                    time_ms,
                    ..
                } => {
                    let span = (*last - *first) as f64 + 1.0;
                    (
                        format!("{tag}{time_ms}ms {text}"),
                        ((span * COL - 40.0) / 6.6) as usize,
                    )
                }
            };
            let lines = wrap(&text, chars.max(16));
            let h = LINE * lines.len() as f64 + 18.0;
            rows.push((y, h, lines));
            y += h;
        }
        let verdict_lines = self
            .verdict
            .as_deref()
            .map(|v| wrap(v, ((width - 40.0) / 6.6) as usize))
            .unwrap_or_default();
        let height = y + 24.0 + LINE * verdict_lines.len() as f64 + 20.0;
        let min_width = width * SVG_MIN_SCALE;
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" style="width:100%;max-width:{width:.0}px;min-width:{min_width:.0}px;height:auto" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="11">
<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>
<rect width="100%" height="100%" fill="#fff"/>
"##
        );
        for (i, p) in self.participants.iter().enumerate() {
            let _ = write!(
                s,
                r##"<line x1="{0:.0}" y1="{1:.0}" x2="{0:.0}" y2="{2:.0}" stroke="#999" stroke-dasharray="4 3"/>
<rect x="{3:.0}" y="12" width="180" height="28" rx="4" fill="#eef3fb" stroke="#5b7db1"/><text x="{0:.0}" y="30" text-anchor="middle" font-weight="bold">{4}</text>
"##,
                x(i),
                TOP - 16.0,
                y + 8.0,
                x(i) - 90.0,
                xml_escape(&title(p))
            );
        }
        for (it, (ry, rh, lines)) in self.items.iter().zip(&rows) {
            let fill = match it.mark() {
                Mark::Witness => Some("#ffcdd2"),
                Mark::Fault => Some("#ffecb3"),
                Mark::None => None,
            };
            if let Some(f) = fill {
                let _ = writeln!(
                    s,
                    r#"<rect x="4" y="{:.0}" width="{:.0}" height="{rh:.0}" fill="{f}"/>"#,
                    ry,
                    width - 8.0
                );
            }
            match it {
                Item::Arrow {
                    from,
                    to,
                    reply,
                    lost,
                    ..
                } => {
                    let (x1, x2) = (x(*from), x(*to));
                    let ly = ry + rh - 6.0;
                    let mid = (x1 + x2) / 2.0;
                    for (k, l) in lines.iter().enumerate() {
                        let _ = writeln!(
                            s,
                            // A white outline keeps a label readable over a lifeline it crosses.
                            r##"<text x="{mid:.0}" y="{:.0}" text-anchor="middle" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                            ry + 15.0 + LINE * k as f64,
                            xml_escape(l)
                        );
                    }
                    let dash = if *reply {
                        r#" stroke-dasharray="5 3""#
                    } else {
                        ""
                    };
                    if *lost {
                        // Drawn two thirds of the way, ending in a cross.
                        let xe = x1 + (x2 - x1) * 0.66;
                        let _ = writeln!(
                            s,
                            r##"<line x1="{x1:.0}" y1="{ly:.0}" x2="{xe:.0}" y2="{ly:.0}" stroke="#c62828" stroke-width="1.5"{dash}/><path d="M{:.0},{:.0} l10,10 M{:.0},{:.0} l10,-10" stroke="#c62828" stroke-width="2"/>"##,
                            xe - 5.0,
                            ly - 5.0,
                            xe - 5.0,
                            ly + 5.0
                        );
                    } else {
                        let _ = writeln!(
                            s,
                            r##"<line x1="{x1:.0}" y1="{ly:.0}" x2="{x2:.0}" y2="{ly:.0}" stroke="#333" stroke-width="1.2" marker-end="url(#head)"{dash}/>"##
                        );
                    }
                }
                Item::Note {
                    first,
                    last,
                    nemesis,
                    ..
                } => {
                    let (x1, x2) = (x(*first) - COL / 2.0 + 8.0, x(*last) + COL / 2.0 - 8.0);
                    let (bg, border) = if *nemesis {
                        ("#fff3e0", "#e65100")
                    } else {
                        ("#fffde7", "#b8a200")
                    };
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x1:.0}" y="{:.0}" width="{:.0}" height="{:.0}" rx="3" fill="{bg}" stroke="{border}"/>"#,
                        ry + 3.0,
                        x2 - x1,
                        rh - 6.0
                    );
                    for (k, l) in lines.iter().enumerate() {
                        let _ = writeln!(
                            s,
                            r#"<text x="{:.0}" y="{:.0}" text-anchor="middle">{}</text>"#,
                            (x1 + x2) / 2.0,
                            ry + 17.0 + LINE * k as f64,
                            xml_escape(l)
                        );
                    }
                }
            }
        }
        if !verdict_lines.is_empty() {
            let vy = y + 16.0;
            let _ = writeln!(
                s,
                r##"<rect x="8" y="{vy:.0}" width="{:.0}" height="{:.0}" rx="4" fill="#ffcdd2" stroke="#c62828"/>"##,
                width - 16.0,
                LINE * verdict_lines.len() as f64 + 12.0
            );
            for (k, l) in verdict_lines.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<text x="20" y="{:.0}" font-weight="bold">{}</text>"#,
                    vy + 18.0 + LINE * k as f64,
                    xml_escape(l)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let wl = word.chars().count();
        let cl = cur.chars().count();
        if cl > 0 && cl + 1 + wl > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        // A word longer than the line is cut, after a `,` `:` or `-` where one is near the end
        // (JSON and UUIDs break there), else at the width.
        let mut w = word.to_string();
        while w.chars().count() > width {
            let chars: Vec<char> = w.chars().collect();
            let cut = (width / 2..width)
                .rev()
                .find(|&i| matches!(chars[i - 1], ',' | ':' | '-'))
                .unwrap_or(width);
            let head: String = chars[..cut].iter().collect();
            let tail: String = chars[cut..].iter().collect();
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
            lines.push(head);
            w = tail;
        }
        cur.push_str(&w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}
