//! `SKILL.md`: YAML front matter between two `---` lines, then the Markdown body.
//!
//! The front matter is read by `yaml-rust2`. Before a value is built, one pass over the
//! parser's events refuses anchors and aliases (an alias bomb expands a few hundred bytes
//! into billions of nodes) and nesting deeper than [`MAX_DEPTH`], so the loader never sees
//! input that could make it explode.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

use super::SkillError;

/// Deepest nesting of mappings and sequences the front matter may use.
pub(super) const MAX_DEPTH: usize = 4;

/// Longest accepted `description`, in characters (the prompt shows at most
/// [`super::MAX_PROMPT_DESCRIPTION_CHARS`] of it).
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;

/// The parts of a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    /// `name:`, checked by [`check_skill_name`].
    pub name: String,
    /// `description:`, trimmed, non-empty, at most [`MAX_DESCRIPTION_CHARS`] characters.
    pub description: String,
    /// Everything after the closing `---` line.
    pub body: String,
}

/// Checks a skill name: `^[a-z0-9][a-z0-9-]{0,63}$`.
///
/// # Errors
/// [`SkillError::BadName`] naming the rule.
pub fn check_skill_name(name: &str) -> Result<(), SkillError> {
    let bad = |why: &str| {
        Err(SkillError::BadName {
            name: name.to_string(),
            why: why.to_string(),
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > 64 {
        return bad("it is longer than 64 characters");
    }
    if name.starts_with('-') {
        return bad("it starts with '-'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("only a-z, 0-9 and '-' are allowed");
    }
    Ok(())
}

/// Splits and reads a `SKILL.md`.
///
/// The file must start with a `---` line; the front matter ends at the next line that is
/// exactly `---`. A leading byte-order mark and `\r\n` line ends are accepted.
///
/// # Errors
/// [`SkillError::NoFrontMatter`], [`SkillError::BadYaml`], [`SkillError::MissingField`],
/// [`SkillError::BadName`], [`SkillError::BadDescription`].
pub fn parse_skill_md(text: &str) -> Result<SkillDoc, SkillError> {
    let Some((map, body)) = split_front_matter(text)? else {
        return Err(SkillError::NoFrontMatter);
    };
    let field = |key: &str| -> Result<String, SkillError> {
        match map.get(&Yaml::String(key.to_string())) {
            None | Some(Yaml::Null) => Err(SkillError::MissingField(key.to_string())),
            Some(Yaml::String(s)) => Ok(s.trim().to_string()),
            Some(_) => Err(SkillError::BadYaml(format!("`{key}` is not a string"))),
        }
    };
    let name = field("name")?;
    check_skill_name(&name)?;
    let description = field("description")?;
    if description.is_empty() {
        return Err(SkillError::MissingField("description".into()));
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::BadDescription(format!(
            "it is {chars} characters long; at most {MAX_DESCRIPTION_CHARS} are allowed"
        )));
    }
    Ok(SkillDoc {
        name,
        description,
        body,
    })
}

/// The front matter of a Markdown file with optional YAML front matter (skills, custom
/// commands, custom agents): `None` when the first line (after a byte-order mark) is not
/// `---`; else the mapping between the two `---` lines, screened before it is built (no
/// anchors or aliases, at most [`MAX_DEPTH`] levels, no key written twice, one document),
/// and the body after the closing line. `\r\n` line ends are accepted.
///
/// # Errors
/// [`SkillError::NoFrontMatter`] when the closing `---` line is missing,
/// [`SkillError::BadYaml`] for YAML this reader refuses or a front matter that is not a
/// mapping.
pub(crate) fn split_front_matter(
    text: &str,
) -> Result<Option<(yaml_rust2::yaml::Hash, String)>, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Ok(None);
    }
    let mut yaml = String::new();
    let mut offset = first.len();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        if line.trim_end_matches(['\r', '\n']) == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(SkillError::NoFrontMatter);
    }
    let body = text[offset..].to_string();
    screen_events(&yaml)?;
    let docs = YamlLoader::load_from_str(&yaml).map_err(|e| SkillError::BadYaml(e.to_string()))?;
    match docs.into_iter().next().unwrap_or(Yaml::Null) {
        Yaml::Hash(map) => Ok(Some((map, body))),
        Yaml::Null => Ok(Some((Default::default(), body))),
        _ => Err(SkillError::BadYaml(
            "the front matter is not a mapping of `key: value` lines".into(),
        )),
    }
}

/// One open collection while screening: a mapping (waiting for a key or a value, with
/// the keys seen so far) or a sequence.
enum Frame {
    Map {
        expect_key: bool,
        keys: std::collections::HashSet<String>,
    },
    Seq,
}

/// Refuses anchors, aliases, deep nesting, a key written twice in one mapping and more
/// than one YAML document before anything is built. A key named twice is ambiguous (one
/// reader takes the first, another the last), so it is refused, never resolved.
fn screen_events(yaml: &str) -> Result<(), SkillError> {
    let mut parser = Parser::new_from_str(yaml);
    let mut stack: Vec<Frame> = Vec::new();
    let mut documents = 0usize;
    loop {
        let (event, _) = parser
            .next_token()
            .map_err(|e| SkillError::BadYaml(e.to_string()))?;
        match &event {
            Event::StreamEnd => return Ok(()),
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(SkillError::BadYaml(
                        "the front matter holds more than one YAML document (a `--- ` line?)"
                            .into(),
                    ));
                }
                continue;
            }
            Event::Alias(_) => return Err(anchors()),
            Event::Scalar(_, _, anchor, _)
            | Event::SequenceStart(anchor, _)
            | Event::MappingStart(anchor, _)
                if *anchor > 0 =>
            {
                return Err(anchors());
            }
            Event::SequenceEnd | Event::MappingEnd => {
                stack.pop();
                continue;
            }
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..) => {}
            _ => continue,
        }
        // A node: a key or a value of the enclosing mapping, or a sequence item.
        if let Some(Frame::Map { expect_key, keys }) = stack.last_mut() {
            if *expect_key
                && let Event::Scalar(key, ..) = &event
                && !keys.insert(key.clone())
            {
                return Err(SkillError::BadYaml(format!(
                    "the key {key:?} is written twice; keep one"
                )));
            }
            *expect_key = !*expect_key;
        }
        match event {
            Event::SequenceStart(..) => stack.push(Frame::Seq),
            Event::MappingStart(..) => stack.push(Frame::Map {
                expect_key: true,
                keys: std::collections::HashSet::new(),
            }),
            _ => {}
        }
        if stack.len() > MAX_DEPTH {
            return Err(SkillError::BadYaml(format!(
                "the front matter nests deeper than {MAX_DEPTH} levels"
            )));
        }
    }
}

fn anchors() -> SkillError {
    SkillError::BadYaml("YAML anchors and aliases (`&x`, `*x`) are not allowed here".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_description_and_body() {
        let doc = parse_skill_md(
            "---\r\nname: fix-tests\r\ndescription: >\r\n  Write a test that fails first.\r\n---\r\n# Body\n",
        );
        assert_eq!(
            doc,
            Ok(SkillDoc {
                name: "fix-tests".into(),
                description: "Write a test that fails first.".into(),
                body: "# Body\n".into(),
            })
        );
    }

    #[test]
    fn refuses_what_it_does_not_understand() {
        let p = |t: &str| parse_skill_md(t).err();
        assert_eq!(p("# no front matter\n"), Some(SkillError::NoFrontMatter));
        assert_eq!(p("---\nname: a\n"), Some(SkillError::NoFrontMatter));
        assert_eq!(
            p("---\ndescription: d\n---\n"),
            Some(SkillError::MissingField("name".into()))
        );
        assert_eq!(
            p("---\nname: a\n---\n"),
            Some(SkillError::MissingField("description".into()))
        );
        assert!(matches!(
            p("---\nname: Big_Name\ndescription: d\n---\n"),
            Some(SkillError::BadName { .. })
        ));
        assert!(matches!(
            p("---\nname: [a\n---\n"),
            Some(SkillError::BadYaml(_))
        ));
        assert!(matches!(p("---\n- a\n---\n"), Some(SkillError::BadYaml(_))));
        let bomb = "---\na: &a [x, x]\nb: &b [*a, *a]\nname: n\ndescription: d\n---\n";
        assert!(matches!(p(bomb), Some(SkillError::BadYaml(m)) if m.contains("anchors")));
        let deep = "---\nname: n\ndescription: d\nx: [[[[[1]]]]]\n---\n";
        assert!(matches!(p(deep), Some(SkillError::BadYaml(m)) if m.contains("deeper")));
        let twice = "---\nname: n\ndescription: harmless\ndescription: evil\n---\n";
        assert!(matches!(p(twice), Some(SkillError::BadYaml(m)) if m.contains("twice")));
        let quoted = "---\nname: n\ndescription: a\n\"description\": b\n---\n";
        assert!(matches!(p(quoted), Some(SkillError::BadYaml(m)) if m.contains("twice")));
        let two_docs = "---\nname: n\ndescription: a\n--- \nname: m\n---\n";
        assert!(matches!(p(two_docs), Some(SkillError::BadYaml(m)) if m.contains("document")));
        let nested_ok =
            "---\nname: n\ndescription: d\nmeta: {a: 1, b: [a, a]}\nmore: {a: 2}\n---\n";
        assert_eq!(p(nested_ok), None);
        let long = format!("---\nname: n\ndescription: {}\n---\n", "w".repeat(1_100));
        assert!(matches!(p(&long), Some(SkillError::BadDescription(_))));
    }

    #[test]
    fn names_follow_the_pattern() {
        for ok in ["a", "0", "pdf-tools", &"a".repeat(64)] {
            assert_eq!(check_skill_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "-a", "A", "a_b", "a.b", "../x", &"a".repeat(65)] {
            assert!(check_skill_name(bad).is_err(), "{bad}");
        }
    }
}
