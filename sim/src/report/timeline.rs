//! A run as a timeline page (`timeline.html`, after Jepsen's): one column per process, every
//! op of the history in a row of its own in history (time) order, in the column of the host
//! that did it (a frame's send under its sender, its receipt under its receiver); faults and
//! world events in the last column, shaded amber; a host's cells shaded grey while it is down
//! (crash to restart) and every row amber-edged while a partition holds (to the heal). Each
//! cell opens (`<details>`) to the op's full JSON, the frame included. Witness ops are red and
//! name the properties they witness. Each row's anchor is `#op<N>`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::diagram::{compact, connections, frame_label, note_text, title, ORDER};
use super::text::{clip, xml_escape};
use crate::checkers::{Status, Verdict};
use crate::history::{op, process, History, Op};

/// The column of processes that are not hosts (the nemesis and the world).
const EVENTS: &str = "faults / world";

/// `timeline.html` for run `h`: `name` heads the page, `verdicts` mark their witnesses (red)
/// and enabling faults (amber); only invalid and unknown verdicts mark anything.
///
/// Long on purpose: a renderer writes its page top to bottom; the order of the code is the
/// order of the page.
pub fn timeline_html(name: &str, h: &History, verdicts: &[Verdict]) -> String {
    let (ends, mut hosts) = connections(h);
    for o in &h.ops {
        if !hosts.contains(&o.process) && host_like(&o.process) {
            hosts.push(o.process.clone());
        }
    }
    // Hosts in the diagram's order (a host the diagram does not draw, e.g. an idle node, too).
    hosts.sort_by_key(|h| ORDER.iter().position(|o| o == h).unwrap_or(ORDER.len()));
    let mut cols: Vec<String> = hosts;
    cols.push(EVENTS.to_string());
    let col_of = |name: &str| {
        cols.iter()
            .position(|c| c == name)
            .unwrap_or(cols.len() - 1)
    };
    let mut witness_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut fault_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for v in verdicts
        .iter()
        .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
    {
        for w in &v.witnesses {
            witness_of.entry(*w).or_default().push(v.property.clone());
        }
        if let Some(f) = v.fault {
            fault_of.entry(f).or_default().push(v.property.clone());
        }
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>timeline {}</title>\n<style>{CSS}</style></head><body>\n<h1>Timeline: {}</h1>\n<p>{} ops, hash {}. One column per process, one row per op in history order (times are simulated ms). Click a cell for the op's full JSON. <span class=\"w\">red</span>: a verdict's witness; <span class=\"f\">amber</span>: a fault or world event (the enabling fault outlined); <span class=\"dn\">grey</span>: the host is down; a row with an amber edge: a partition holds.</p>\n",
        xml_escape(name),
        xml_escape(name),
        h.ops.len(),
        h.hash()
    );
    let marked: Vec<String> = verdicts
        .iter()
        .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
        .map(|v| {
            let ws: Vec<String> = v
                .witnesses
                .iter()
                .map(|w| format!("<a href=\"#op{w}\">#{w}</a>"))
                .collect();
            let f = v
                .fault
                .map(|f| format!(", fault <a href=\"#op{f}\">#{f}</a>"))
                .unwrap_or_default();
            format!(
                "<li><b>{} {}</b>: witnesses {}{f}: {}</li>",
                xml_escape(&v.property),
                Status::as_str(v.status),
                ws.join(" "),
                xml_escape(&v.message)
            )
        })
        .collect();
    if !marked.is_empty() {
        let _ = writeln!(s, "<ul>{}</ul>", marked.join(""));
    }
    // Equal columns as wide as the page allows, each at least 10em (wider: it scrolls).
    let _ = write!(
        s,
        "<div class=\"scroll\"><table style=\"min-width:{}em\"><colgroup><col class=\"n\"><col class=\"n\"></colgroup><thead><tr><th>op</th><th>ms</th>",
        7 + 10 * cols.len()
    );
    for c in &cols {
        let t = if c == EVENTS { c.clone() } else { title(c) };
        let _ = write!(s, "<th>{}</th>", xml_escape(&t));
    }
    s.push_str("</tr></thead><tbody>\n");
    let mut down: BTreeSet<String> = BTreeSet::new();
    let mut partitioned = false;
    for o in &h.ops {
        // The state before this op shades its row; a crash shades from its own row on.
        let col = column(o, &ends);
        let ci = col_of(&col);
        if o.process == process::NEMESIS {
            match o.f.as_str() {
                op::CRASH => {
                    if let Some(x) = o.value["host"].as_str() {
                        down.insert(x.to_string());
                    }
                }
                op::HEAL => partitioned = false,
                f if f.starts_with("partition") => partitioned = true,
                _ => {}
            }
        }
        let mut cls = Vec::new();
        if witness_of.contains_key(&o.index) {
            cls.push("w");
        } else if o.process == process::NEMESIS || o.process == process::WORLD {
            cls.push("f");
        }
        if fault_of.contains_key(&o.index) {
            cls.push("ef");
        }
        let row_cls = if partitioned { " class=\"part\"" } else { "" };
        let _ = write!(
            s,
            "<tr id=\"op{0}\"{row_cls}><td class=\"n\"><a href=\"#op{0}\">{0}</a></td><td class=\"n\">{1}</td>",
            o.index, o.time_ms
        );
        for (i, c) in cols.iter().enumerate() {
            let shade = if down.contains(c) {
                " class=\"dn\""
            } else {
                ""
            };
            if i != ci {
                let _ = write!(s, "<td{shade}></td>");
                continue;
            }
            let tags: Vec<String> = witness_of
                .get(&o.index)
                .into_iter()
                .flatten()
                .map(|p| format!("{p} witness"))
                .chain(
                    fault_of
                        .get(&o.index)
                        .into_iter()
                        .flatten()
                        .map(|p| format!("{p} enabling fault")),
                )
                .collect();
            let tag = if tags.is_empty() {
                String::new()
            } else {
                format!(" <b>[{}]</b>", xml_escape(&tags.join(", ")))
            };
            let json = serde_json::to_string_pretty(o).unwrap_or_default();
            let _ = write!(
                s,
                "<td class=\"{}\"><details><summary>{}{tag}</summary><pre>{}</pre></details></td>",
                cls.join(" "),
                xml_escape(&summary(o)),
                xml_escape(&json)
            );
        }
        s.push_str("</tr>\n");
        if o.process == process::NEMESIS && o.f == op::RESTART {
            if let Some(x) = o.value["host"].as_str() {
                down.remove(x);
            }
        }
    }
    s.push_str("</tbody></table></div>\n</body></html>\n");
    s
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1em;color:#222}.scroll{overflow:auto;max-width:100%}table{border-collapse:collapse;table-layout:fixed;width:100%;font:12px ui-monospace,Menlo,Consolas,monospace}col.n{width:3.5em}th{position:sticky;top:0;background:#eef3fb;border:1px solid #5b7db1;padding:.3em .6em}td{border-left:1px solid #ddd;border-right:1px solid #ddd;padding:.1em .4em;vertical-align:top;overflow:hidden}td.n{color:#777;text-align:right}td.w,.w{background:#ffcdd2}td.f,.f{background:#fff3e0}td.ef{outline:2px solid #e65100}td.dn,.dn{background:repeating-linear-gradient(45deg,#eee,#eee 4px,#ddd 4px,#ddd 8px)}tr.part td:first-child{border-left:4px solid #ffa000}summary{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}details[open] summary{white-space:normal}pre{white-space:pre-wrap;word-break:break-all;margin:.2em 0;background:#f8f8f8}a{color:inherit}";

/// Whether a process name is a host column (not the network, the nemesis or the world).
fn host_like(p: &str) -> bool {
    ![process::NET, process::NEMESIS, process::WORLD].contains(&p)
}

/// The column an op goes in: a send under its sender, a receipt under its receiver (the other
/// end of the connection), other network ops under the host they name, and the nemesis and
/// world under [`EVENTS`].
fn column(o: &Op, ends: &BTreeMap<u64, BTreeSet<String>>) -> String {
    let v = &o.value;
    if o.process == process::NET {
        let from = v["from"].as_str().unwrap_or("");
        let conn = v["conn"].as_u64();
        return match o.f.as_str() {
            op::SEND => from.to_string(),
            op::RECV => conn
                .and_then(|c| ends.get(&c))
                .and_then(|e| e.iter().find(|x| x.as_str() != from).cloned())
                .unwrap_or_else(|| EVENTS.to_string()),
            _ => v["seen_by"]
                .as_str()
                .or(v["from"].as_str())
                .unwrap_or(EVENTS)
                .to_string(),
        };
    }
    if host_like(&o.process) {
        o.process.clone()
    } else {
        EVENTS.to_string()
    }
}

/// A cell's one-line summary: a frame's label, a diagram note's text, else the op's function
/// and value.
fn summary(o: &Op) -> String {
    let v = &o.value;
    if o.process == process::NET && (o.f == op::SEND || o.f == op::RECV) {
        let (label, _) = frame_label(&v["frame"], None, None);
        return format!("{} {}", o.f, label);
    }
    match note_text(o) {
        Some(t) => t,
        None => clip(&format!("{} {}", o.f, compact(v)), 90),
    }
}
