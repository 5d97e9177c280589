//! A GNU `getopt_long` reading of a command's arguments, for the programs
//! whose options decide what they run or where they write (`cp -t DIR`,
//! `xargs -I{}`, `rm --rec`).
//!
//! It follows what the programs really accept: short options cluster
//! (`-rf`), a short option's value may be attached (`-tDIR`, `-I{}`,
//! `-n1`) or the next word, a long option's value follows `=` or is the
//! next word, and a long option may be abbreviated to any unique prefix
//! (`--target=DIR`, `--rec`). An option that is not listed, or an
//! abbreviation that fits more than one name, is an error naming it: the
//! caller then asks, because it does not know what the program will do.

use crate::shell_parse::Word;

/// The options one program takes.
pub(crate) struct OptSpec {
    /// Short options that take no value.
    pub flags: &'static str,
    /// Short options that take a value (attached or the next word).
    pub valued: &'static str,
    /// Short options whose value is optional and only ever attached
    /// (GNU `xargs -i[R]`).
    pub optional: &'static str,
    /// Long option names: `name` takes no value, `name=` takes one
    /// (attached with `=` or the next word), `name?` takes an optional
    /// value that is only ever attached with `=`.
    pub long: &'static [&'static str],
    /// Options end at the first operand (POSIX order, as `xargs`, `env`,
    /// `sudo`): the rest is a command and its arguments.
    pub stop_at_operand: bool,
}

/// One option as the program reads it: its name (`"t"`, `"target-directory"`)
/// and its value, if it took one.
#[derive(Debug, Clone)]
pub(crate) struct Opt {
    pub name: String,
    pub value: Option<Word>,
}

/// Options and operands, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    pub opts: Vec<Opt>,
    pub operands: Vec<Word>,
}

impl Parsed {
    /// True when option `name` (short letter or full long name) was given.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|o| o.name == name)
    }

    /// The values given to any of `names`, in order.
    pub(crate) fn values<'a>(&'a self, names: &'a [&str]) -> impl Iterator<Item = &'a Word> + 'a {
        self.opts
            .iter()
            .filter(move |o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_ref())
    }
}

fn part(word: &Word, text: &str) -> Word {
    Word {
        text: text.to_string(),
        ..word.clone()
    }
}

/// The listed long option `given` names: the exact name, or the only
/// listed name it is a prefix of. Returns the entry (with its `=`/`?`).
pub(crate) fn long_name(
    long: &'static [&'static str],
    given: &str,
) -> Result<&'static str, String> {
    let bare = |entry: &'static str| entry.trim_end_matches(['=', '?']);
    if let Some(exact) = long.iter().find(|e| bare(e) == given) {
        return Ok(exact);
    }
    let mut matches = long.iter().filter(|e| bare(e).starts_with(given));
    match (matches.next(), matches.next()) {
        (Some(only), None) if !given.is_empty() => Ok(only),
        (Some(_), Some(_)) => Err(format!("`--{given}` is an ambiguous abbreviation")),
        _ => Err(format!("unknown option `--{given}`")),
    }
}

/// Reads `args` by `spec`; an error names the option not understood.
pub(crate) fn parse(spec: &OptSpec, args: &[Word]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut index = 0;
    while index < args.len() {
        let word = &args[index];
        let text = word.text.as_str();
        index += 1;
        if text == "--" {
            out.operands.extend(args[index..].iter().cloned());
            break;
        }
        if !text.starts_with('-') || text == "-" {
            out.operands.push(word.clone());
            if spec.stop_at_operand {
                out.operands.extend(args[index..].iter().cloned());
                break;
            }
            continue;
        }
        if word.dynamic {
            return Err(format!("option `{text}` is only known at run time"));
        }
        if let Some(long) = text.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let entry = long_name(spec.long, given)?;
            let name = entry.trim_end_matches(['=', '?']).to_string();
            let value = if entry.ends_with('=') {
                match attached {
                    Some(v) => Some(part(word, v)),
                    None => match args.get(index) {
                        Some(next) => {
                            index += 1;
                            Some(next.clone())
                        }
                        None => return Err(format!("`--{name}` lacks its value")),
                    },
                }
            } else if entry.ends_with('?') {
                attached.map(|v| part(word, v))
            } else if attached.is_some() {
                return Err(format!("`--{name}` takes no value"));
            } else {
                None
            };
            out.opts.push(Opt { name, value });
            continue;
        }
        let short = &text[1..];
        for (offset, flag) in short.char_indices() {
            let rest = &short[offset + flag.len_utf8()..];
            if spec.valued.contains(flag) {
                let value = if rest.is_empty() {
                    match args.get(index) {
                        Some(next) => {
                            index += 1;
                            next.clone()
                        }
                        None => return Err(format!("`-{flag}` lacks its value")),
                    }
                } else {
                    part(word, rest)
                };
                out.opts.push(Opt {
                    name: flag.to_string(),
                    value: Some(value),
                });
                break;
            }
            if spec.optional.contains(flag) {
                out.opts.push(Opt {
                    name: flag.to_string(),
                    value: (!rest.is_empty()).then(|| part(word, rest)),
                });
                break;
            }
            if !spec.flags.contains(flag) {
                return Err(format!("unknown option `-{flag}`"));
            }
            out.opts.push(Opt {
                name: flag.to_string(),
                value: None,
            });
        }
    }
    Ok(out)
}

/// `word` with a long option that abbreviates one of `names` written out
/// in full (`--exe=cmd` → `--exec=cmd`, `--for` → `--force`), for
/// programs whose parsers accept any unique prefix (git's parse-options,
/// GNU argp and getopt_long). A prefix of several names becomes the first
/// of them, so `names` lists the most dangerous reading first. Names in
/// `exact` are real options of their own and are left alone
/// (`--text` is not `--textconv`). Other words are returned unchanged.
pub(crate) fn expand_long<'w>(
    word: &'w str,
    names: &[&'static str],
    exact: &[&str],
) -> std::borrow::Cow<'w, str> {
    use std::borrow::Cow;
    let Some(long) = word.strip_prefix("--") else {
        return Cow::Borrowed(word);
    };
    let (given, value) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    if given.is_empty() || names.contains(&given) || exact.contains(&given) {
        return Cow::Borrowed(word);
    }
    match names.iter().find(|n| n.starts_with(given)) {
        Some(full) => Cow::Owned(match value {
            Some(v) => format!("--{full}={v}"),
            None => format!("--{full}"),
        }),
        None => Cow::Borrowed(word),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const CP: OptSpec = OptSpec {
        flags: "afrT",
        valued: "tS",
        optional: "",
        long: &[
            "force",
            "recursive",
            "target-directory=",
            "no-target-directory",
            "reflink?",
        ],
        stop_at_operand: false,
    };

    fn words(texts: &[&str]) -> Vec<Word> {
        texts.iter().map(|t| Word::literal(t)).collect()
    }

    #[test]
    fn attached_values_clusters_and_abbreviations() {
        let p = parse(&CP, &words(&["-at/etc", "x"])).unwrap();
        assert_eq!(p.values(&["t"]).next().unwrap().text, "/etc");
        assert_eq!(p.operands.len(), 1);
        let p = parse(&CP, &words(&["--targ", "/etc", "x"])).unwrap();
        assert_eq!(p.values(&["target-directory"]).next().unwrap().text, "/etc");
        let p = parse(&CP, &words(&["--target=/etc", "--ref", "x"])).unwrap();
        assert!(p.has("target-directory") && p.has("reflink"));
        assert!(parse(&CP, &words(&["--r", "x"])).is_err(), "ambiguous");
        assert!(parse(&CP, &words(&["-q", "x"])).is_err());
        assert!(parse(&CP, &words(&["--frob", "x"])).is_err());
    }
}
