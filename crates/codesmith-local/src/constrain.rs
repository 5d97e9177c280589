//! Constrained decoding of the tool-call channel.
//!
//! A small model knows roughly what a tool call looks like but misspells tool
//! names, invents arguments and forgets to close its braces. The local
//! provider owns the sampler, so once the model opens a `<tool_call>` block
//! the sampler is masked: only tokens that keep the block a valid prefix of
//! `{"name": "NAME", "arguments": {...}}</tool_call>` can be chosen, where
//! NAME is one of the request's tools and the arguments object holds only
//! that tool's declared properties, each with a value of its declared type
//! (string, integer, number, boolean, string enum, array of strings), and
//! closes only when every required property is present. The block always
//! ends, and the response ends with it (one call per response).
//!
//! The mask is computed by running each vocabulary token's text through a
//! character automaton ([`CallState`]); text outside a block is not touched.
//! When the task clearly needs the workspace, the first response of a task
//! can also be made to start with a block (see [`Steering::forced`]), limited
//! to the read-only look-around tools.

use codesmith_protocol::ToolSpec;
use serde_json::Value;

use crate::ground::Grounding;
use crate::toolcall::{CLOSE_TAG, OPEN_TAG};

/// Longest string value (in characters) the constrained decoder lets the
/// model write; after it only the closing quote is allowed.
const MAX_STRING_CHARS: usize = 200;
/// Longest number the constrained decoder lets the model write, in characters.
const MAX_NUMBER_CHARS: usize = 9;
/// Most items in a string array argument.
const MAX_ARRAY_ITEMS: usize = 16;
/// The shortest tail of free text that, being a prefix of `<tool_call>`, is
/// taken as the model opening a block (`<tool`); shorter tails may be HTML.
const MIN_OPENING: usize = 5;
/// Read-only tools a forced first call may use, in the order they are offered.
pub(crate) const LOOK_TOOLS: [&str; 4] = ["list_dir", "file_search", "grep_files", "read_file"];

/// Words in a task that say it is about the files in front of the model.
const WORKSPACE_WORDS: [&str; 24] = [
    "file",
    "files",
    "folder",
    "directory",
    "directories",
    "repository",
    "repo",
    "crate",
    "crates",
    "project",
    "codebase",
    "workspace",
    "function",
    "defined",
    "module",
    "modules",
    "package",
    "packages",
    "source",
    "readme",
    "class",
    "struct",
    "test",
    "tests",
];

/// The JSON type of one argument, as far as the decoder can constrain it.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Str,
    Int,
    Num,
    Bool,
    Enum(Vec<String>),
    StrArray,
    /// A workspace path of a read-only look tool: one of the paths that exist
    /// (sorted), so the model cannot look at a file it made up.
    Path(std::sync::Arc<Vec<String>>),
}

/// One tool as the decoder sees it: its name and the arguments it can write.
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    name: String,
    props: Vec<(String, Kind)>,
    required: Vec<usize>,
}

/// The tools a block may call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Catalogue {
    tools: Vec<Shape>,
    /// Calls already made for this task (name, arguments): a block may not
    /// repeat one, since its result is already in the conversation.
    made: Vec<(String, Value)>,
}

impl Catalogue {
    /// The tools of a request whose arguments the decoder can write: a tool
    /// with a required argument of a type it cannot constrain (an object, an
    /// array of objects) is left out; such optional arguments are not offered.
    pub(crate) fn new(specs: &[ToolSpec]) -> Self {
        let tools = specs.iter().filter_map(shape).collect();
        Catalogue {
            tools,
            made: Vec::new(),
        }
    }

    /// Rules out repeating any of `made` (name, raw arguments) exactly.
    pub(crate) fn without_repeats<'a>(
        mut self,
        made: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        self.made = made
            .into_iter()
            .filter_map(|(name, args)| {
                let args = serde_json::from_str(if args.trim().is_empty() { "{}" } else { args });
                Some((name.to_string(), args.ok()?))
            })
            .collect();
        self
    }

    /// The `path` argument of each read-only look tool ([`LOOK_TOOLS`]) is
    /// limited to what exists: a directory for `list_dir` and `file_search`, a
    /// file for `read_file`, either for `grep_files`. Writers keep free
    /// strings: they may create files.
    pub(crate) fn with_paths(mut self, paths: &WorkspacePaths) -> Self {
        if paths.dirs.is_empty() {
            return self;
        }
        for tool in &mut self.tools {
            let allowed = match tool.name.as_str() {
                "list_dir" | "file_search" => std::sync::Arc::clone(&paths.dirs),
                "read_file" => std::sync::Arc::clone(&paths.files),
                "grep_files" => std::sync::Arc::clone(&paths.all),
                _ => continue,
            };
            for (name, kind) in &mut tool.props {
                if name == "path" && *kind == Kind::Str {
                    *kind = Kind::Path(std::sync::Arc::clone(&allowed));
                }
            }
        }
        self
    }

    /// Only the tools named in `names` (in the catalogue's order).
    pub(crate) fn only(&self, names: &[&str]) -> Self {
        Catalogue {
            tools: self
                .tools
                .iter()
                .filter(|t| names.contains(&t.name.as_str()))
                .cloned()
                .collect(),
            made: self.made.clone(),
        }
    }

    /// True when no tool can be called.
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

fn shape(spec: &ToolSpec) -> Option<Shape> {
    let schema = &spec.input_schema;
    let required_names: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut props = Vec::new();
    if let Some(map) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in map {
            if let Some(kind) = kind_of(prop) {
                props.push((name.clone(), kind));
            } else if required_names.contains(&name.as_str()) {
                return None;
            }
        }
    }
    // Required arguments first, so the model meets them before the optional ones.
    props.sort_by_key(|(name, _)| !required_names.contains(&name.as_str()));
    let mut required = Vec::new();
    for name in &required_names {
        match props.iter().position(|(p, _)| p == name) {
            Some(at) => required.push(at),
            // Required but not declared: nothing valid can be written.
            None => return None,
        }
    }
    if props.len() > 32 || spec.name.is_empty() {
        return None;
    }
    Some(Shape {
        name: spec.name.clone(),
        props,
        required,
    })
}

fn kind_of(prop: &Value) -> Option<Kind> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let values: Option<Vec<String>> = values
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect();
        return values
            .filter(|v| !v.is_empty() && v.iter().all(|s| plain(s)))
            .map(Kind::Enum);
    }
    match prop.get("type").and_then(Value::as_str)? {
        "string" => Some(Kind::Str),
        "integer" => Some(Kind::Int),
        "number" => Some(Kind::Num),
        "boolean" => Some(Kind::Bool),
        "array" => {
            let items = prop.get("items")?;
            (items.get("type").and_then(Value::as_str) == Some("string")
                && items.get("enum").is_none())
            .then_some(Kind::StrArray)
        }
        _ => None,
    }
}

/// A string the automaton can spell without escapes.
fn plain(s: &str) -> bool {
    !s.chars().any(|c| c == '"' || c == '\\' || c.is_control())
}

/// Where in a block the automaton is.
#[derive(Debug, Clone, PartialEq)]
enum Stage {
    /// Fixed text, then `next`.
    Lit {
        text: &'static str,
        at: usize,
        next: Box<Stage>,
    },
    /// Inside the name string (the text written so far, closing quote included).
    Name(String),
    /// Right after the arguments' `{`.
    ArgsOpen,
    /// After `,` between arguments (`spaced`: the optional space was written).
    Comma { spaced: bool },
    /// Inside a key (text so far, closing quote included).
    Key(String),
    /// After a key's closing quote, before `:`.
    Colon(usize),
    /// After `:`, before the value.
    Value { prop: usize, spaced: bool },
    /// Inside a string value.
    Str {
        len: usize,
        escaped: bool,
        item: Option<usize>,
    },
    /// Inside an enum or path string value (text so far).
    EnumStr { prop: usize, text: String },
    /// Inside a number.
    Number {
        len: usize,
        digits: bool,
        fraction: Option<bool>,
        float: bool,
    },
    /// Inside `true` / `false`.
    Word { word: &'static str, at: usize },
    /// After `[` or after an array item's `,` (`items`: written so far).
    ArrayItem {
        items: usize,
        first: bool,
        spaced: bool,
    },
    /// After an array item: `,` or `]`.
    ArrayNext { items: usize },
    /// After a complete value: `,` or `}`.
    AfterValue,
    /// The block is complete.
    Done,
}

/// The automaton over one block's text after `<tool_call>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallState {
    tool: Option<usize>,
    used: u32,
    stage: Stage,
    /// The arguments object written so far (from its `{`).
    args: String,
}

/// Text between the name's closing quote and the arguments' first key.
const AFTER_NAME: &str = ", \"arguments\": {";
/// Text after the arguments object.
const AFTER_ARGS: &str = "}";

impl CallState {
    /// The state right after `<tool_call>`, or with `opening` the state right
    /// after the first `opening` bytes of `<tool_call>` have been written.
    fn new(opening: usize) -> Self {
        let body = Stage::Lit {
            text: "{\"name\": \"",
            at: 0,
            next: Box::new(Stage::Name(String::new())),
        };
        let stage = if opening < OPEN_TAG.len() {
            Stage::Lit {
                text: OPEN_TAG,
                at: opening,
                next: Box::new(body),
            }
        } else {
            body
        };
        CallState {
            tool: None,
            used: 0,
            stage,
            args: String::new(),
        }
    }

    /// True once the block has been closed.
    pub(crate) fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Feeds one character; false when it cannot come next.
    fn push(&mut self, cat: &Catalogue, c: char) -> bool {
        let stage = std::mem::replace(&mut self.stage, Stage::Done);
        let in_args = self.tool.is_some() && !matches!(stage, Stage::Lit { .. });
        match self.step(cat, stage, c) {
            Some(next) => {
                if in_args || matches!(next, Stage::ArgsOpen) {
                    self.args.push(c);
                }
                self.stage = next;
                true
            }
            None => false,
        }
    }

    /// Feeds text; false when any of it cannot come next (the state is then
    /// unspecified).
    fn push_str(&mut self, cat: &Catalogue, text: &str) -> bool {
        text.chars().all(|c| self.push(cat, c))
    }

    fn shape<'c>(&self, cat: &'c Catalogue) -> Option<&'c Shape> {
        self.tool.and_then(|i| cat.tools.get(i))
    }

    fn required_done(&self, cat: &Catalogue) -> bool {
        self.shape(cat)
            .is_some_and(|s| s.required.iter().all(|&i| self.used & (1 << i) != 0))
    }

    fn unused_left(&self, cat: &Catalogue) -> bool {
        self.shape(cat)
            .is_some_and(|s| (0..s.props.len()).any(|i| self.used & (1 << i) == 0))
    }

    /// True when closing the arguments now would repeat a call already made.
    fn repeats(&self, cat: &Catalogue) -> bool {
        let Some(shape) = self.shape(cat) else {
            return false;
        };
        if !cat.made.iter().any(|(name, _)| *name == shape.name) {
            return false;
        }
        let Ok(args) = serde_json::from_str::<Value>(&format!("{}}}", self.args)) else {
            return false;
        };
        cat.made
            .iter()
            .any(|(name, made)| *name == shape.name && *made == args)
    }

    fn close_args(&self, cat: &Catalogue) -> Option<Stage> {
        if self.repeats(cat) {
            return None;
        }
        self.required_done(cat).then(|| Stage::Lit {
            text: AFTER_ARGS,
            at: 0,
            next: Box::new(Stage::Lit {
                text: CLOSE_TAG,
                at: 0,
                next: Box::new(Stage::Done),
            }),
        })
    }

    fn step(&mut self, cat: &Catalogue, stage: Stage, c: char) -> Option<Stage> {
        match stage {
            Stage::Lit { text, at, next } => {
                if !text[at..].starts_with(c) {
                    return None;
                }
                let at = at + c.len_utf8();
                Some(if at == text.len() {
                    *next
                } else {
                    Stage::Lit { text, at, next }
                })
            }
            Stage::Name(mut written) => {
                let mut complete = None;
                let mut open = false;
                for (i, tool) in cat.tools.iter().enumerate() {
                    match next_char(&tool.name, &written, c) {
                        Next::Complete => complete = Some(i),
                        Next::Open => open = true,
                        Next::No => {}
                    }
                }
                written.push(c);
                if let Some(i) = complete {
                    self.tool = Some(i);
                    return Some(Stage::Lit {
                        text: AFTER_NAME,
                        at: 0,
                        next: Box::new(Stage::ArgsOpen),
                    });
                }
                open.then_some(Stage::Name(written))
            }
            Stage::ArgsOpen => match c {
                '"' if self.unused_left(cat) => Some(Stage::Key(String::new())),
                '}' => self.close_args(cat),
                _ => None,
            },
            Stage::Comma { spaced } => match c {
                ' ' if !spaced => Some(Stage::Comma { spaced: true }),
                '"' => Some(Stage::Key(String::new())),
                _ => None,
            },
            Stage::Key(mut written) => {
                let shape = self.shape(cat)?;
                let mut complete = None;
                let mut open = false;
                for (i, (name, _)) in shape.props.iter().enumerate() {
                    if self.used & (1 << i) != 0 {
                        continue;
                    }
                    match next_char(name, &written, c) {
                        Next::Complete => complete = Some(i),
                        Next::Open => open = true,
                        Next::No => {}
                    }
                }
                written.push(c);
                if let Some(i) = complete {
                    self.used |= 1 << i;
                    return Some(Stage::Colon(i));
                }
                open.then_some(Stage::Key(written))
            }
            Stage::Colon(prop) => (c == ':').then_some(Stage::Value {
                prop,
                spaced: false,
            }),
            Stage::Value { prop, spaced } => {
                if c == ' ' && !spaced {
                    return Some(Stage::Value { prop, spaced: true });
                }
                let kind = &self.shape(cat)?.props.get(prop)?.1;
                match (kind, c) {
                    (Kind::Str, '"') => Some(Stage::Str {
                        len: 0,
                        escaped: false,
                        item: None,
                    }),
                    (Kind::Enum(_) | Kind::Path(_), '"') => Some(Stage::EnumStr {
                        prop,
                        text: String::new(),
                    }),
                    (Kind::Int | Kind::Num, '-') => Some(Stage::Number {
                        len: 1,
                        digits: false,
                        fraction: None,
                        float: *kind == Kind::Num,
                    }),
                    (Kind::Int | Kind::Num, '0'..='9') => Some(Stage::Number {
                        len: 1,
                        digits: true,
                        fraction: None,
                        float: *kind == Kind::Num,
                    }),
                    (Kind::Bool, 't') => Some(Stage::Word {
                        word: "true",
                        at: 1,
                    }),
                    (Kind::Bool, 'f') => Some(Stage::Word {
                        word: "false",
                        at: 1,
                    }),
                    (Kind::StrArray, '[') => Some(Stage::ArrayItem {
                        items: 0,
                        first: true,
                        spaced: false,
                    }),
                    _ => None,
                }
            }
            Stage::Str { len, escaped, item } => {
                if escaped {
                    return matches!(c, '"' | '\\' | '/' | 'n' | 't').then_some(Stage::Str {
                        len: len + 1,
                        escaped: false,
                        item,
                    });
                }
                match c {
                    // An empty string is no use as an argument.
                    '"' if len > 0 => Some(match item {
                        Some(items) => Stage::ArrayNext { items: items + 1 },
                        None => Stage::AfterValue,
                    }),
                    '"' => None,
                    _ if len >= MAX_STRING_CHARS || c.is_control() => None,
                    '\\' => Some(Stage::Str {
                        len,
                        escaped: true,
                        item,
                    }),
                    _ => Some(Stage::Str {
                        len: len + 1,
                        escaped: false,
                        item,
                    }),
                }
            }
            Stage::EnumStr { prop, mut text } => {
                let (complete, open) = match &self.shape(cat)?.props.get(prop)?.1 {
                    Kind::Enum(values) => choice(values.iter().map(String::as_str), &text, c),
                    Kind::Path(paths) => sorted_choice(paths, &text, c),
                    _ => return None,
                };
                if complete {
                    return Some(Stage::AfterValue);
                }
                text.push(c);
                open.then_some(Stage::EnumStr { prop, text })
            }
            Stage::Number {
                len,
                digits,
                fraction,
                float,
            } => match c {
                '0'..='9' if len < MAX_NUMBER_CHARS => Some(Stage::Number {
                    len: len + 1,
                    digits: fraction.is_none() || digits,
                    fraction: fraction.map(|_| true),
                    float,
                }),
                '.' if float && digits && fraction.is_none() && len < MAX_NUMBER_CHARS => {
                    Some(Stage::Number {
                        len: len + 1,
                        digits,
                        fraction: Some(false),
                        float,
                    })
                }
                ',' | '}' if digits && fraction != Some(false) => {
                    self.step(cat, Stage::AfterValue, c)
                }
                _ => None,
            },
            Stage::Word { word, at } => {
                if !word[at..].starts_with(c) {
                    return None;
                }
                Some(if at + 1 == word.len() {
                    Stage::AfterValue
                } else {
                    Stage::Word { word, at: at + 1 }
                })
            }
            Stage::ArrayItem {
                items,
                first,
                spaced,
            } => match c {
                ' ' if !first && !spaced => Some(Stage::ArrayItem {
                    items,
                    first,
                    spaced: true,
                }),
                ']' if first => Some(Stage::AfterValue),
                '"' => Some(Stage::Str {
                    len: 0,
                    escaped: false,
                    item: Some(items),
                }),
                _ => None,
            },
            Stage::ArrayNext { items } => match c {
                ',' if items < MAX_ARRAY_ITEMS => Some(Stage::ArrayItem {
                    items,
                    first: false,
                    spaced: false,
                }),
                ']' => Some(Stage::AfterValue),
                _ => None,
            },
            Stage::AfterValue => match c {
                ',' if self.unused_left(cat) => Some(Stage::Comma { spaced: false }),
                '}' => self.close_args(cat),
                _ => None,
            },
            Stage::Done => None,
        }
    }
}

/// What one more character does to a quoted word being written.
enum Next {
    /// It is the closing quote right after the whole word.
    Complete,
    /// The word continues with it.
    Open,
    /// It cannot come next.
    No,
}

/// Whether `c` may follow `written` (the text after the opening quote) on
/// the way to writing `word` and its closing quote.
fn next_char(word: &str, written: &str, c: char) -> Next {
    let Some(rest) = word.strip_prefix(written) else {
        return Next::No;
    };
    if rest.is_empty() {
        if c == '"' { Next::Complete } else { Next::No }
    } else if rest.starts_with(c) {
        Next::Open
    } else {
        Next::No
    }
}

/// [`next_char`] over several words: (some word is complete, some continues).
fn choice<'a>(words: impl Iterator<Item = &'a str>, written: &str, c: char) -> (bool, bool) {
    let (mut complete, mut open) = (false, false);
    for word in words {
        match next_char(word, written, c) {
            Next::Complete => complete = true,
            Next::Open => open = true,
            Next::No => {}
        }
    }
    (complete, open)
}

/// [`choice`] over a sorted list, looking only at the words that start with `written`.
fn sorted_choice(words: &[String], written: &str, c: char) -> (bool, bool) {
    let from = words.partition_point(|w| w.as_str() < written);
    let matching = words[from..]
        .iter()
        .take_while(|w| w.starts_with(written))
        .map(String::as_str);
    choice(matching, written, c)
}

/// How one response's sampling is steered.
#[derive(Debug)]
pub(crate) struct Steering {
    /// Every tool a block the model opens may call.
    all: Catalogue,
    /// The tools of the block currently being written.
    active: Catalogue,
    /// The open block, if any.
    call: Option<CallState>,
    /// Free text generated so far (only its tail matters).
    tail: String,
    /// True once a block has been closed: the response ends there.
    finished: bool,
    /// False once the task has used its calls: the model must answer in text.
    may_open: bool,
    /// True once any token was accepted.
    started: bool,
    /// The lines of free text completed so far (those long enough to matter).
    lines: std::collections::HashSet<String>,
    /// The free-text line being written.
    line: String,
    /// Ids of the tokens that hold a line break.
    breaks: std::sync::Arc<Vec<u32>>,
    /// Each token's text, or `None` for a token that is not whole UTF-8 or is
    /// a control token (never allowed inside a block).
    texts: std::sync::Arc<Vec<Option<String>>>,
    /// The copy bias toward the task's tool results, in free text.
    grounding: Option<Grounding>,
}

impl Steering {
    /// Steering that constrains any block the model opens to `tools`.
    pub(crate) fn new(catalogue: Catalogue, texts: std::sync::Arc<Vec<Option<String>>>) -> Self {
        let all = catalogue;
        Steering {
            active: all.clone(),
            all,
            call: None,
            tail: String::new(),
            finished: false,
            may_open: true,
            started: false,
            lines: std::collections::HashSet::new(),
            line: String::new(),
            breaks: std::sync::Arc::new(
                texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.as_deref().is_some_and(|t| t.contains('\n')))
                    .map(|(id, _)| id as u32)
                    .collect(),
            ),
            texts,
            grounding: None,
        }
    }

    /// Biases free text toward copying `source` faithfully (see [`Grounding`]);
    /// no effect when `source` is blank.
    pub(crate) fn grounded(mut self, source: &str) -> Self {
        if !source.trim().is_empty() {
            self.grounding = Some(Grounding::new(source, std::sync::Arc::clone(&self.texts)));
        }
        self
    }

    /// Logit bonuses for the next token (token id, bonus); empty inside a
    /// block or when nothing is grounded.
    pub(crate) fn bias(&self) -> Vec<(u32, f32)> {
        match (&self.call, &self.grounding) {
            (None, Some(grounding)) => grounding.bias(),
            _ => Vec::new(),
        }
    }

    /// Makes the response start with a block calling one of `tools` (those of
    /// them the request offers). No effect when it offers none of them.
    pub(crate) fn forced(mut self, tools: &[&str]) -> Self {
        let only = self.all.only(tools);
        if !only.is_empty() {
            self.active = only;
            self.call = Some(CallState::new(0));
        }
        self
    }

    /// Keeps the model from opening a block: the response is text only.
    pub(crate) fn answer_only(mut self) -> Self {
        self.may_open = false;
        self
    }

    /// True while a block is being written (the next token is masked).
    #[cfg(test)]
    fn constrained(&self) -> bool {
        self.call.is_some()
    }

    /// True when the response is complete: a block was closed.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// For each token id, whether it may come next; `None` when sampling is free.
    pub(crate) fn mask(&self) -> Option<Vec<bool>> {
        let Some(call) = self.call.as_ref() else {
            return self.text_mask();
        };
        // Most tokens fail on their first character: decide those once per character.
        let first: Vec<bool> = (0u8..128)
            .map(|b| call.clone().push(&self.active, char::from(b)))
            .collect();
        let mask = self
            .texts
            .iter()
            .map(|text| {
                text.as_deref().is_some_and(|text| {
                    let Some(c) = text.chars().next() else {
                        return false;
                    };
                    if c.is_ascii() && !first[c as usize] {
                        return false;
                    }
                    let mut state = call.clone();
                    state.push_str(&self.active, text)
                })
            })
            .collect();
        Some(mask)
    }

    /// The mask for free text: no line repeated (a small model's greedy decoding
    /// falls into writing one line over and over), and in an answer-only
    /// response no `<tool_call>`; `None` when nothing is ruled out.
    fn text_mask(&self) -> Option<Vec<bool>> {
        if self.may_open && self.lines.is_empty() {
            return None;
        }
        let mut mask = if self.may_open {
            vec![true; self.texts.len()]
        } else {
            self.text_only_mask()
        };
        for &id in self.breaks.iter() {
            let Some(text) = self.texts.get(id as usize).and_then(Option::as_deref) else {
                continue;
            };
            let mut line = self.line.clone();
            for piece in text.split_inclusive('\n') {
                line.push_str(piece);
                if piece.ends_with('\n') {
                    if self.lines.contains(line_key(&line)) {
                        mask[id as usize] = false;
                        break;
                    }
                    line.clear();
                }
            }
        }
        Some(mask)
    }

    /// Every token except those that would begin `<tool_call>`, and at the
    /// start of the response any tag at all (the model reaching for a call it
    /// may not make writes some other markup instead).
    fn text_only_mask(&self) -> Vec<bool> {
        const OPENING: &str = "<tool";
        self.texts
            .iter()
            .map(|text| {
                // Control tokens (the end of the turn) and partial characters stay allowed.
                text.as_deref().is_none_or(|text| {
                    if !self.started {
                        !text.trim_start().starts_with('<')
                    } else if self.tail.is_empty() {
                        !text.contains(OPENING)
                    } else {
                        !format!("{}{text}", self.tail).contains(OPENING)
                    }
                })
            })
            .collect()
    }

    /// Records the token that was chosen.
    pub(crate) fn accept(&mut self, id: u32) {
        self.started = true;
        let text = self
            .texts
            .get(id as usize)
            .cloned()
            .flatten()
            .unwrap_or_default();
        if let Some(call) = self.call.as_mut() {
            let ok = call.push_str(&self.active, &text);
            if !ok || call.done() {
                // A token outside the mask cannot be chosen; if it was, the block
                // is left to the parser, which hands malformed calls on raw.
                self.call = None;
                self.finished = ok;
            }
            return;
        }
        if let Some(grounding) = self.grounding.as_mut() {
            grounding.accept(&text);
        }
        for piece in text.split_inclusive('\n') {
            self.line.push_str(piece);
            if piece.ends_with('\n') {
                let key = line_key(&self.line);
                if key.len() >= MIN_REPEAT_LINE {
                    self.lines.insert(key.to_string());
                }
                self.line.clear();
            }
        }
        if self.all.is_empty() {
            return;
        }
        self.tail.push_str(&text);
        if !self.may_open {
            let keep = crate::toolcall::partial_tag_suffix(&self.tail, OPEN_TAG);
            self.tail.drain(..self.tail.len() - keep);
            return;
        }
        if let Some(at) = self.tail.rfind(OPEN_TAG) {
            if at + OPEN_TAG.len() == self.tail.len() {
                self.open(OPEN_TAG.len());
            }
            self.tail.clear();
            return;
        }
        let partial = crate::toolcall::partial_tag_suffix(&self.tail, OPEN_TAG);
        if partial >= MIN_OPENING {
            self.open(partial);
            self.tail.clear();
            return;
        }
        // Keep only what could still begin a tag.
        let keep = self.tail.len() - partial;
        self.tail.drain(..keep);
    }

    fn open(&mut self, written: usize) {
        self.active = self.all.clone();
        self.call = Some(CallState::new(written));
    }
}

/// A line as compared for repeats: without surrounding whitespace.
fn line_key(line: &str) -> &str {
    line.trim()
}

/// Shortest line (trimmed, in bytes) that may not be written twice in one
/// response; shorter ones (`}`, `end`, blank) repeat legitimately.
const MIN_REPEAT_LINE: usize = 6;

/// The paths that exist in a workspace, each list sorted and
/// workspace-relative with `/` separators.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkspacePaths {
    /// Directories, `.` (the root) included.
    dirs: std::sync::Arc<Vec<String>>,
    /// Files.
    files: std::sync::Arc<Vec<String>>,
    /// Both.
    all: std::sync::Arc<Vec<String>>,
}

/// Workspace paths a look tool's `path` may name: `.`, then every file and
/// directory up to [`PATH_DEPTH`] levels down, leaving out hidden entries
/// and build or dependency folders (`target`, `node_modules`), at most
/// [`MAX_PATHS`]. Empty when the folder cannot be read.
pub(crate) fn workspace_paths(root: &std::path::Path) -> WorkspacePaths {
    let mut dirs = vec![".".to_string()];
    let mut files = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), String::new(), 0)]);
    if !root.is_dir() {
        return WorkspacePaths::default();
    }
    while let Some((dir, prefix, depth)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<(String, bool)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let is_dir = e.file_type().ok()?.is_dir();
                Some((name, is_dir))
            })
            .filter(|(name, _)| {
                !name.starts_with('.') && name != "target" && name != "node_modules" && plain(name)
            })
            .collect();
        names.sort();
        for (name, is_dir) in names {
            if dirs.len() + files.len() >= MAX_PATHS {
                break;
            }
            let path = format!("{prefix}{name}");
            if is_dir {
                if depth + 1 < PATH_DEPTH {
                    queue.push_back((dir.join(&name), format!("{path}/"), depth + 1));
                }
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let mut all: Vec<String> = dirs.iter().chain(&files).cloned().collect();
    dirs.sort();
    files.sort();
    all.sort();
    WorkspacePaths {
        dirs: std::sync::Arc::new(dirs),
        files: std::sync::Arc::new(files),
        all: std::sync::Arc::new(all),
    }
}

/// How deep [`workspace_paths`] looks.
const PATH_DEPTH: usize = 4;
/// Most paths [`workspace_paths`] returns.
const MAX_PATHS: usize = 5000;

/// True when the latest user message is a task (not tool results) whose
/// words say it is about the workspace's files, so the first response should
/// look before it answers.
pub(crate) fn task_needs_workspace(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .any(|word| WORKSPACE_WORDS.contains(&word.to_ascii_lowercase().as_str()))
        || text.split_whitespace().any(names_a_path)
}

/// True for a word that names a file or a path: `calc.py`, `src/`, `./run.sh`
/// (not a number such as `2.5`, not a sentence's last word and its full stop).
fn names_a_path(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '_');
    if word.contains('/') && word.chars().any(char::is_alphanumeric) {
        return true;
    }
    let Some((stem, extension)) = word.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=5).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(name: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: schema,
        }
    }

    fn catalogue() -> Vec<ToolSpec> {
        vec![
            spec(
                "list_dir",
                serde_json::json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "depth": {"type": "integer"}}}),
            ),
            spec(
                "file_search",
                serde_json::json!({"type": "object", "properties": {
                    "pattern": {"type": "string"}, "include_ignored": {"type": "boolean"},
                    "max_results": {"type": "integer"}}, "required": ["pattern"]}),
            ),
            spec(
                "update_plan",
                serde_json::json!({"type": "object", "properties": {
                    "plan": {"type": "array", "items": {"type": "object"}}}, "required": ["plan"]}),
            ),
            spec(
                "exec_shell",
                serde_json::json!({"type": "object", "properties": {
                    "command": {"type": "string"},
                    "mode": {"enum": ["run", "check"]},
                    "paths": {"type": "array", "items": {"type": "string"}},
                    "ratio": {"type": "number"}}, "required": ["command"]}),
            ),
        ]
    }

    /// Whether `text`, written right after `<tool_call>`, stays a valid prefix;
    /// and whether it completes the block.
    fn check(text: &str) -> (bool, bool) {
        let cat = Catalogue::new(&catalogue());
        let mut state = CallState::new(OPEN_TAG.len());
        let ok = state.push_str(&cat, text);
        (ok, ok && state.done())
    }

    #[test]
    fn valid_calls_complete_the_block() {
        for text in [
            r#"{"name": "list_dir", "arguments": {}}</tool_call>"#,
            r#"{"name": "list_dir", "arguments": {"path": "crates", "depth": 2}}</tool_call>"#,
            r#"{"name": "file_search", "arguments": {"pattern": "*.toml","include_ignored": true}}</tool_call>"#,
            r#"{"name": "exec_shell", "arguments": {"command": "say \"hi\"", "mode": "check", "paths": ["a", "b"], "ratio": -0.5}}</tool_call>"#,
            r#"{"name": "exec_shell", "arguments": {"command": "x", "paths": []}}</tool_call>"#,
        ] {
            assert_eq!(check(text), (true, true), "{text}");
        }
    }

    #[test]
    fn invalid_text_is_refused_where_it_goes_wrong() {
        for text in [
            // An unknown tool, and one whose required argument cannot be written.
            r#"{"name": "list_files""#,
            r#"{"name": "update_plan""#,
            // An undeclared argument, a repeated one, a value of the wrong type.
            r#"{"name": "list_dir", "arguments": {"recursive""#,
            r#"{"name": "list_dir", "arguments": {"path": "a", "path""#,
            r#"{"name": "list_dir", "arguments": {"depth": "2"#,
            // Closing before a required argument; an empty string; a raw newline.
            r#"{"name": "file_search", "arguments": {}"#,
            r#"{"name": "file_search", "arguments": {"pattern": """#,
            "{\"name\": \"file_search\", \"arguments\": {\"pattern\": \"a\n",
            // An enum value that is not listed; text after the block.
            r#"{"name": "exec_shell", "arguments": {"command": "x", "mode": "walk"#,
            r#"{"name": "list_dir", "arguments": {}}</tool_call>x"#,
        ] {
            assert!(!check(text).0, "accepted: {text}");
        }
        // A valid prefix is accepted without completing the block.
        assert_eq!(check(r#"{"name": "list_d"#), (true, false));
    }

    #[test]
    fn a_call_already_made_cannot_be_repeated() {
        let cat = Catalogue::new(&catalogue())
            .without_repeats([("list_dir", r#"{"path": "."}"#), ("list_dir", "")]);
        let fits = |text: &str| CallState::new(OPEN_TAG.len()).push_str(&cat, text);
        assert!(!fits(r#"{"name": "list_dir", "arguments": {"path": "."}"#));
        assert!(!fits(r#"{"name": "list_dir", "arguments": {}"#));
        assert!(fits(r#"{"name": "list_dir", "arguments": {"path": "src"}"#));
        assert!(fits(
            r#"{"name": "list_dir", "arguments": {"path": ".", "depth": 2}"#
        ));
        assert!(fits(
            r#"{"name": "file_search", "arguments": {"pattern": "."}"#
        ));
    }

    #[test]
    fn strings_are_bounded() {
        let long = "a".repeat(MAX_STRING_CHARS);
        let text = format!(r#"{{"name": "list_dir", "arguments": {{"path": "{long}"#);
        assert!(check(&text).0);
        assert!(!check(&format!("{text}a")).0);
        assert!(check(&format!("{text}\"}}}}</tool_call>")).1);
    }

    fn texts(words: &[&str]) -> std::sync::Arc<Vec<Option<String>>> {
        std::sync::Arc::new(words.iter().map(|w| Some((*w).to_string())).collect())
    }

    #[test]
    fn a_forced_block_allows_only_look_tools_and_ends_the_response() {
        let vocab = texts(&[
            "<tool_call>",
            "{\"name\": \"",
            "list_dir",
            "exec_shell",
            "\", \"arguments\": {",
            "}}",
            "</tool_call>",
            "hello",
        ]);
        let mut steering = Steering::new(Catalogue::new(&catalogue()), vocab).forced(&LOOK_TOOLS);
        let allowed = |s: &Steering| -> Vec<usize> {
            let mask = s.mask().unwrap();
            (0..mask.len()).filter(|&i| mask[i]).collect()
        };
        assert_eq!(allowed(&steering), vec![0]);
        steering.accept(0);
        steering.accept(1);
        // exec_shell is in the catalogue but not a look tool.
        assert_eq!(allowed(&steering), vec![2]);
        for id in [2, 4, 5] {
            steering.accept(id);
        }
        assert_eq!(allowed(&steering), vec![6]);
        steering.accept(6);
        assert!(steering.finished() && !steering.constrained());
    }

    #[test]
    fn a_block_the_model_opens_is_constrained_from_its_tag() {
        let vocab = texts(&["Let me look. ", "<tool", "_call>", "{\"name\": \""]);
        let mut steering = Steering::new(Catalogue::new(&catalogue()), vocab);
        assert!(steering.mask().is_none());
        steering.accept(0);
        assert!(!steering.constrained());
        steering.accept(1);
        assert!(steering.constrained());
        let mask = steering.mask().unwrap();
        assert_eq!(mask, vec![false, false, true, false]);
        steering.accept(2);
        assert_eq!(steering.mask().unwrap(), vec![false, false, false, true]);
    }

    #[test]
    fn a_look_tool_names_only_paths_that_exist() {
        let dirs = std::sync::Arc::new(vec![
            ".".to_string(),
            "crates".to_string(),
            "crates/a".to_string(),
        ]);
        let files = std::sync::Arc::new(vec!["crates/a/lib.rs".to_string()]);
        let paths = WorkspacePaths {
            all: std::sync::Arc::new(vec![
                ".".to_string(),
                "crates".to_string(),
                "crates/a".to_string(),
                "crates/a/lib.rs".to_string(),
            ]),
            dirs,
            files,
        };
        let mut specs = catalogue();
        specs.push(spec(
            "read_file",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ));
        let cat = Catalogue::new(&specs).with_paths(&paths);
        let fits = |text: &str| {
            let mut state = CallState::new(OPEN_TAG.len());
            let ok = state.push_str(&cat, text);
            (ok, ok && state.done())
        };
        let list = |path: &str| {
            format!(r#"{{"name": "list_dir", "arguments": {{"path": "{path}"}}}}</tool_call>"#)
        };
        assert_eq!(fits(&list("crates")), (true, true));
        assert_eq!(fits(&list("crates/a")), (true, true));
        assert_eq!(fits(&list(".")), (true, true));
        assert!(!fits(&list("list_dir")).0);
        assert!(!fits(&list("crates/b")).0);
        // list_dir takes a directory, read_file a file.
        assert!(!fits(&list("crates/a/lib.rs")).0);
        let read = |path: &str| {
            format!(r#"{{"name": "read_file", "arguments": {{"path": "{path}"}}}}</tool_call>"#)
        };
        assert_eq!(fits(&read("crates/a/lib.rs")), (true, true));
        assert!(!fits(&read("crates")).0);
        // A writer's path stays free: it may create a file.
        assert!(fits(r#"{"name": "exec_shell", "arguments": {"command": "new/file""#).0);
    }

    #[test]
    fn an_answer_only_response_cannot_open_a_block_but_can_end() {
        let vocab = std::sync::Arc::new(vec![
            Some("The crates: a, b.".to_string()),
            Some("<tool_call>".to_string()),
            Some("<".to_string()),
            Some("tool".to_string()),
            None,
        ]);
        let mut steering = Steering::new(Catalogue::new(&catalogue()), vocab).answer_only();
        // No markup to start with.
        assert_eq!(
            steering.mask().unwrap(),
            vec![true, false, false, true, true]
        );
        steering.accept(3);
        assert_eq!(
            steering.mask().unwrap(),
            vec![true, false, true, true, true]
        );
        steering.accept(2);
        assert_eq!(
            steering.mask().unwrap(),
            vec![true, false, true, false, true]
        );
        steering.accept(0);
        assert!(!steering.constrained() && !steering.finished());
    }

    #[test]
    fn workspace_paths_are_listed_sorted_without_hidden_or_build_folders() {
        let dir = std::env::temp_dir().join(format!("cs-paths-{}", std::process::id()));
        for sub in ["src/deep/er/est", ".git/objects", "target/debug"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        let paths = workspace_paths(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            *paths.all,
            vec![
                ".",
                "src",
                "src/deep",
                "src/deep/er",
                "src/deep/er/est",
                "src/lib.rs"
            ]
        );
        assert_eq!(*paths.files, vec!["src/lib.rs"]);
        assert_eq!(paths.dirs.len(), 5);
    }

    #[test]
    fn a_line_is_not_written_twice() {
        let vocab = std::sync::Arc::new(vec![
            Some("Cargo.toml".to_string()),
            Some("\n".to_string()),
            Some("crates/".to_string()),
            Some("}\n".to_string()),
            None,
        ]);
        let mut steering = Steering::new(Catalogue::new(&catalogue()), vocab);
        assert!(steering.mask().is_none());
        for id in [0, 1, 3, 0] {
            steering.accept(id);
        }
        // "Cargo.toml" again may not end its line; a short line may repeat.
        assert_eq!(
            steering.mask().unwrap(),
            vec![true, false, true, true, true]
        );
        steering.accept(2);
        assert_eq!(steering.mask().unwrap(), vec![true, true, true, true, true]);
    }

    #[test]
    fn grounding_biases_free_text_but_not_a_block() {
        let vocab = texts(&["<tool_call>", "list_dir", "\n", "Cargo.toml"]);
        let steering = Steering::new(Catalogue::new(&catalogue()), vocab.clone())
            .grounded("Cargo.toml\nlist_dir\n");
        assert!(steering.bias().is_empty(), "nothing written yet");
        let mut copying = Steering::new(Catalogue::new(&catalogue()), vocab.clone())
            .grounded("Cargo.toml\nlist_dir\n");
        copying.accept(3);
        assert_eq!(
            copying.bias().iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            vec![2]
        );
        // Inside a forced block the tool-call mask alone decides.
        let forced = Steering::new(Catalogue::new(&catalogue()), vocab.clone())
            .forced(&LOOK_TOOLS)
            .grounded("<tool_call>list_dir");
        assert!(forced.bias().is_empty());
        // Nothing to copy from: no bias.
        let mut blank = Steering::new(Catalogue::new(&catalogue()), vocab).grounded("  \n");
        blank.accept(3);
        assert!(blank.bias().is_empty());
    }

    #[test]
    fn workspace_tasks_are_recognised() {
        assert!(task_needs_workspace("List the crates in this repository."));
        assert!(task_needs_workspace("Where is the function parse defined?"));
        assert!(task_needs_workspace("Name the files in src/"));
        assert!(task_needs_workspace("Read calc.py and say what add does."));
        assert!(task_needs_workspace("What is in src/?"));
        assert!(!task_needs_workspace("What is 2 + 2?"));
        assert!(!task_needs_workspace("Is 2.5 more than 2? Say yes."));
        assert!(!task_needs_workspace("Write a haiku about autumn."));
    }
}
