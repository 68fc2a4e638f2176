//! The unit tests of `cli/src/probe/line_reader.rs`.

use acp_chaos_cli::probe::line_reader::*;
use std::io::{self, Read};

fn lines(input: &[u8], max: usize) -> Vec<Line> {
    let mut r = LineReader::new(input, max);
    let mut v = Vec::new();
    while let Some(l) = r.next_line().unwrap() {
        v.push(l);
    }
    v
}

fn text(s: &str) -> Line {
    Line::Text(s.to_string())
}

#[test]
fn text_lines_lose_their_line_end_only() {
    assert_eq!(
        lines(b"a\r\n\nb c\nlast", 16),
        [text("a"), text(""), text("b c"), text("last")]
    );
}

#[test]
fn bytes_that_are_not_utf8_are_reported_never_repaired() {
    let got = lines(b"{\"k\":\"a\xffb\"}\nok\n", 64);
    assert_eq!(
        got[0],
        Line::NotUtf8 {
            len: 11,
            at: 7,
            shown: "{\"k\":\"a\u{fffd}b\"}".into()
        }
    );
    assert_eq!(got[1], text("ok"));
    // A lone surrogate's encoding and an overlong encoding are not UTF-8 either.
    for bad in [&b"\xed\xa0\x80"[..], b"\xc0\xaf"] {
        assert!(matches!(lines(bad, 64)[0], Line::NotUtf8 { at: 0, .. }));
    }
}

#[test]
fn a_line_past_the_bound_is_skipped_and_the_next_one_read() {
    let mut input = vec![b'x'; 10_000];
    input.extend_from_slice(b"\n12345678\n123456789\nnext");
    assert_eq!(
        lines(&input, 8),
        [
            Line::Overlong {
                len: 10_000,
                max: 8
            },
            text("12345678"),
            Line::Overlong { len: 9, max: 8 },
            text("next")
        ]
    );
    // The bound counts the line, never its line end: `\r\n` as `\n`.
    assert_eq!(
        lines(
            b"12345678\r\n123456789\r\n1234567890\r\n12\r34567890123\r\nok",
            8
        ),
        [
            text("12345678"),
            Line::Overlong { len: 9, max: 8 },
            Line::Overlong { len: 10, max: 8 },
            Line::Overlong { len: 14, max: 8 },
            text("ok")
        ]
    );
    // Cut by the end of input: still one overlong line.
    assert_eq!(
        lines(&[b'y'; 100], 8),
        [Line::Overlong { len: 100, max: 8 }]
    );
}

#[test]
fn an_overlong_line_is_never_held_whole() {
    // 64 MiB through a reader bounded at 1 KiB: its buffer stays at the bound.
    struct Zeros(u64);
    impl Read for Zeros {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            let n = (b.len() as u64).min(self.0) as usize;
            b[..n].fill(b'0');
            self.0 -= n as u64;
            Ok(n)
        }
    }
    let mut r = LineReader::new(io::BufReader::new(Zeros(64 << 20)), 1024);
    assert_eq!(
        r.next_line().unwrap(),
        Some(Line::Overlong {
            len: 64 << 20,
            max: 1024
        })
    );
    assert!(r.buffer_capacity() <= 4096, "{}", r.buffer_capacity());
    assert_eq!(r.next_line().unwrap(), None);
}
