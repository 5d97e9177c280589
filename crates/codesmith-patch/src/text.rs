//! A file's text as lines that remember their own terminators, so an edit keeps CRLF files
//! CRLF, keeps a UTF-8 byte-order mark, and never mixes endings it did not find.

/// A line terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    /// `\n`
    Lf,
    /// `\r\n`
    Crlf,
    /// No terminator (only ever the last line).
    None,
}

impl Eol {
    fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::Crlf => "\r\n",
            Eol::None => "",
        }
    }
}

/// One line of a document: its text without terminator, and the terminator it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocLine {
    pub(crate) text: String,
    pub(crate) eol: Eol,
}

/// A text file split into lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Doc {
    pub(crate) bom: bool,
    pub(crate) lines: Vec<DocLine>,
    /// The ending new lines take: CRLF when most terminated lines use it, else LF.
    pub(crate) eol: Eol,
}

const BOM: &str = "\u{feff}";

impl Doc {
    pub(crate) fn parse(content: &str) -> Doc {
        let (bom, body) = match content.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, content),
        };
        let mut lines = Vec::new();
        let (mut crlf, mut lf) = (0usize, 0usize);
        let mut rest = body;
        while !rest.is_empty() {
            match rest.find('\n') {
                Some(i) => {
                    let (text, eol) = match rest[..i].strip_suffix('\r') {
                        Some(t) => {
                            crlf += 1;
                            (t, Eol::Crlf)
                        }
                        None => {
                            lf += 1;
                            (&rest[..i], Eol::Lf)
                        }
                    };
                    lines.push(DocLine {
                        text: text.to_string(),
                        eol,
                    });
                    rest = &rest[i + 1..];
                }
                None => {
                    lines.push(DocLine {
                        text: rest.to_string(),
                        eol: Eol::None,
                    });
                    rest = "";
                }
            }
        }
        let eol = if crlf > lf { Eol::Crlf } else { Eol::Lf };
        Doc { bom, lines, eol }
    }

    /// The texts of the lines, for matching.
    pub(crate) fn texts(&self) -> Vec<&str> {
        self.lines.iter().map(|l| l.text.as_str()).collect()
    }

    /// Joins the lines back. Every line but the last gets a terminator (the document's own
    /// ending if it had none); the last keeps what it has.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        if self.bom {
            out.push_str(BOM);
        }
        let n = self.lines.len();
        for (i, line) in self.lines.iter().enumerate() {
            out.push_str(&line.text);
            let eol = if line.eol == Eol::None && i + 1 < n {
                self.eol
            } else {
                line.eol
            };
            out.push_str(eol.as_str());
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_shape() {
        for s in [
            "",
            "\n",
            "a",
            "a\n",
            "a\r\nb\r\n",
            "a\r\nb",
            "a\nb\r\nc",
            "\u{feff}x\r\n",
            "\n\n\n",
        ] {
            assert_eq!(Doc::parse(s).render(), s, "{s:?}");
        }
    }

    #[test]
    fn picks_the_majority_ending() {
        assert_eq!(Doc::parse("a\r\nb\r\nc\n").eol, Eol::Crlf);
        assert_eq!(Doc::parse("a\nb\r\n").eol, Eol::Lf);
        assert_eq!(Doc::parse("").eol, Eol::Lf);
    }
}
