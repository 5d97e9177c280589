//! Known-safe options of read-only programs (kept next to the arity
//! dictionary, and used with it).
//!
//! A read-only program earns `Safe` only when every option it is given is
//! listed here for it; an unknown option makes the call ask, naming the
//! option (`unknown option --pre for rg`). This is the shape of Codex's
//! `is_known_safe_command`: narrow allow-lists with exact options, so a new
//! or forgotten flag that runs a program (`rg --pre`, `fd -x`), writes a
//! file (`tree -o`) or changes the machine (`date -s`) is never assumed
//! harmless. A program on the read-only list with no entry here is `Safe`
//! only without options.

/// The options one program may be given and stay read-only.
#[derive(Debug)]
pub(crate) struct SafeOptions {
    /// Program name as looked up (`grep`, `rg`).
    pub program: &'static str,
    /// Short flags that take no value; `"*"` accepts every option (programs
    /// with no option that runs code or writes files).
    pub flags: &'static str,
    /// Short flags that take a value, attached (`-A3`) or as the next word.
    pub valued: &'static str,
    /// Long options: `name` takes no value, `name=` takes one (attached
    /// with `=` or the next word), `name==` takes the next two words,
    /// `name?` takes an optional value that is only ever attached with `=`
    /// (the next word is never read as its value).
    pub long: &'static [&'static str],
    /// True when `-NUM` / `+NUM` counts are accepted (`head -20`).
    pub numeric: bool,
    /// Short flags whose value is optional and only ever attached (`git status -uno`,
    /// `git log -M50%`): the rest of the word is their value, the next word never is.
    pub optional: &'static str,
}

pub(crate) const fn entry(
    program: &'static str,
    flags: &'static str,
    valued: &'static str,
    long: &'static [&'static str],
    numeric: bool,
) -> SafeOptions {
    SafeOptions {
        program,
        flags,
        valued,
        long,
        numeric,
        optional: "",
    }
}

const ANY: &str = "*";
const GREP_LONG: &[&str] = &[
    "after-context=",
    "basic-regexp",
    "before-context=",
    "binary-files=",
    "byte-offset",
    "color",
    "color=",
    "colour",
    "colour=",
    "context=",
    "count",
    "dereference-recursive",
    "devices=",
    "directories=",
    "exclude-dir=",
    "exclude-from=",
    "exclude=",
    "extended-regexp",
    "file=",
    "files-with-matches",
    "files-without-match",
    "fixed-strings",
    "help",
    "ignore-case",
    "include=",
    "initial-tab",
    "invert-match",
    "label=",
    "line-buffered",
    "line-number",
    "line-regexp",
    "max-count=",
    "no-filename",
    "no-ignore-case",
    "no-messages",
    "null",
    "null-data",
    "only-matching",
    "perl-regexp",
    "quiet",
    "recursive",
    "regexp=",
    "silent",
    "text",
    "version",
    "with-filename",
    "word-regexp",
];

/// Sorted by program name (checked by a test).
const TABLE: &[SafeOptions] = &[
    entry(":", ANY, "", &[], false),
    entry("[", ANY, "", &[], false),
    entry("arch", ANY, "", &[], false),
    entry("b2sum", ANY, "", &[], false),
    entry("base64", ANY, "", &[], false),
    entry("basename", ANY, "", &[], false),
    entry(
        "bat",
        "AnpPuS",
        "lmrHL",
        &[
            "color=",
            "decorations=",
            "highlight-line=",
            "language=",
            "line-range=",
            "list-languages",
            "list-themes",
            "number",
            "paging=",
            "plain",
            "show-all",
            "style=",
            "tabs=",
            "terminal-width=",
            "theme=",
            "wrap=",
        ],
        false,
    ),
    entry(
        "bc",
        "lqsw",
        "",
        &["mathlib", "quiet", "standard", "warn"],
        false,
    ),
    entry("bzcat", ANY, "", &[], false),
    entry("cal", ANY, "", &[], false),
    entry(
        "cat",
        "AbeEnstTuv",
        "",
        &[
            "help",
            "number",
            "number-nonblank",
            "show-all",
            "show-ends",
            "show-nonprinting",
            "show-tabs",
            "squeeze-blank",
            "version",
        ],
        false,
    ),
    entry("cksum", ANY, "", &[], false),
    entry("clear", ANY, "", &[], false),
    entry("cmp", ANY, "", &[], false),
    entry("column", ANY, "", &[], false),
    entry("comm", ANY, "", &[], false),
    entry(
        "cut",
        "nsz",
        "bcdf",
        &[
            "bytes=",
            "characters=",
            "complement",
            "delimiter=",
            "fields=",
            "only-delimited",
            "output-delimiter=",
            "zero-terminated",
        ],
        false,
    ),
    entry(
        "date",
        "uIR",
        "dr",
        &[
            "date=",
            "iso-8601",
            "iso-8601=",
            "reference=",
            "rfc-3339=",
            "rfc-email",
            "universal",
            "utc",
        ],
        false,
    ),
    entry(
        "df",
        "ahHiklPT",
        "Btx",
        &[
            "all",
            "block-size=",
            "exclude-type=",
            "human-readable",
            "inodes",
            "local",
            "output",
            "output=",
            "portability",
            "print-type",
            "si",
            "total",
            "type=",
        ],
        false,
    ),
    entry(
        "diff",
        "abBdeEiNnpqrstTuwyZ",
        "CDFILSUWxX",
        &[
            "brief",
            "color",
            "color=",
            "context",
            "context=",
            "exclude-from=",
            "exclude=",
            "expand-tabs",
            "ignore-all-space",
            "ignore-blank-lines",
            "ignore-case",
            "ignore-space-change",
            "ignore-tab-expansion",
            "ignore-trailing-space",
            "initial-tab",
            "label=",
            "minimal",
            "new-file",
            "no-dereference",
            "normal",
            "recursive",
            "report-identical-files",
            "side-by-side",
            "speed-large-files",
            "stat",
            "strip-trailing-cr",
            "suppress-common-lines",
            "text",
            "unified",
            "unified=",
            "width=",
        ],
        true,
    ),
    entry("diffstat", ANY, "", &[], false),
    entry("dirname", ANY, "", &[], false),
    entry(
        "du",
        "0abcDhHklLmPsSx",
        "dBt",
        &[
            "all",
            "apparent-size",
            "block-size=",
            "bytes",
            "count-links",
            "dereference",
            "exclude=",
            "human-readable",
            "max-depth=",
            "null",
            "one-file-system",
            "separate-dirs",
            "si",
            "summarize",
            "threshold=",
            "time",
            "time=",
            "total",
        ],
        false,
    ),
    entry("echo", ANY, "", &[], false),
    entry(
        "egrep",
        "abcEFGHhIiLlnoqRrsTUVvwxyZz",
        "ABCDdefm",
        GREP_LONG,
        true,
    ),
    entry("expand", ANY, "", &[], false),
    entry("expr", ANY, "", &[], false),
    entry("false", ANY, "", &[], false),
    entry(
        "fd",
        "0aFgHhIiLlpsuV1",
        "cdeEjStj",
        &[
            "absolute-path",
            "case-sensitive",
            "changed-before=",
            "changed-within=",
            "color=",
            "exact-depth=",
            "exclude=",
            "extension=",
            "fixed-strings",
            "follow",
            "full-path",
            "glob",
            "hidden",
            "ignore-case",
            "max-depth=",
            "max-results=",
            "min-depth=",
            "no-ignore",
            "no-ignore-vcs",
            "print0",
            "size=",
            "type=",
            "unrestricted",
        ],
        false,
    ),
    entry(
        "fgrep",
        "abcEFGHhIiLlnoqRrsTUVvwxyZz",
        "ABCDdefm",
        GREP_LONG,
        true,
    ),
    entry(
        "file",
        "0bcdEhiIklLNnprsSvz",
        "eFfmP",
        &[
            "brief",
            "mime",
            "mime-type",
            "mime-encoding",
            "dereference",
            "no-dereference",
            "help",
            "version",
        ],
        false,
    ),
    entry("fmt", ANY, "", &[], false),
    entry("fold", ANY, "", &[], false),
    entry("free", ANY, "", &[], false),
    entry("getconf", ANY, "", &[], false),
    entry(
        "grep",
        "abcEFGHhIiLlnoqRrsTUVvwxyZz",
        "ABCDdefm",
        GREP_LONG,
        true,
    ),
    entry("groups", ANY, "", &[], false),
    entry(
        "head",
        "qvz",
        "cn",
        &[
            "bytes=",
            "lines=",
            "quiet",
            "silent",
            "verbose",
            "zero-terminated",
        ],
        true,
    ),
    entry("hexdump", ANY, "", &[], false),
    entry(
        "hostname",
        "AadfIisy",
        "",
        &[
            "all-fqdns",
            "alias",
            "domain",
            "fqdn",
            "ip-address",
            "all-ip-addresses",
            "short",
            "long",
        ],
        false,
    ),
    entry("id", ANY, "", &[], false),
    entry(
        "jq",
        "acCeMnrjsSh",
        "",
        &[
            "arg==",
            "argjson==",
            "ascii-output",
            "color-output",
            "compact-output",
            "exit-status",
            "indent=",
            "join-output",
            "monochrome-output",
            "null-input",
            "raw-input",
            "raw-output",
            "raw-output0",
            "seq",
            "slurp",
            "sort-keys",
            "stream",
            "tab",
        ],
        false,
    ),
    entry(
        "less",
        "aBcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~",
        "bhjpPxyz#",
        &[
            "chop-long-lines",
            "quit-if-one-screen",
            "RAW-CONTROL-CHARS",
            "raw-control-chars",
            "no-init",
            "LINE-NUMBERS",
            "line-numbers",
            "ignore-case",
            "IGNORE-CASE",
            "quit-at-eof",
            "squeeze-blank-lines",
            "pattern=",
            "tabs=",
        ],
        false,
    ),
    entry(
        "ls",
        "1aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ",
        "ITw",
        &[
            "all",
            "almost-all",
            "author",
            "block-size=",
            "classify",
            "classify=",
            "color",
            "color=",
            "colour",
            "colour=",
            "dereference",
            "dereference-command-line",
            "directory",
            "escape",
            "file-type",
            "format=",
            "full-time",
            "group-directories-first",
            "help",
            "hide-control-chars",
            "hide=",
            "human-readable",
            "hyperlink",
            "hyperlink=",
            "ignore-backups",
            "ignore=",
            "indicator-style=",
            "inode",
            "kibibytes",
            "literal",
            "no-group",
            "numeric-uid-gid",
            "quote-name",
            "recursive",
            "reverse",
            "show-control-chars",
            "si",
            "size",
            "sort=",
            "tabsize=",
            "time-style=",
            "time=",
            "version",
            "width=",
            "zero",
        ],
        false,
    ),
    entry("lscpu", ANY, "", &[], false),
    entry(
        "man",
        "afkwW",
        "",
        &["apropos", "whatis", "where", "path"],
        false,
    ),
    entry("md5sum", ANY, "", &[], false),
    entry("more", "dlfpcsu", "n", &[], false),
    entry("nl", ANY, "", &[], false),
    entry("nproc", ANY, "", &[], false),
    entry("numfmt", ANY, "", &[], false),
    entry("od", ANY, "", &[], false),
    entry("paste", ANY, "", &[], false),
    entry("pgrep", ANY, "", &[], false),
    entry("printenv", ANY, "", &[], false),
    entry("ps", ANY, "", &[], false),
    entry("pwd", ANY, "", &[], false),
    entry("read", "ers", "adinNptu", &[], false),
    entry("readlink", ANY, "", &[], false),
    entry("realpath", ANY, "", &[], false),
    entry("rev", ANY, "", &[], false),
    entry(
        "rg",
        "0abcFHhiIlLnNopqsSuUvVwx.",
        "ABCdEefgjmMrtT",
        &[
            "after-context=",
            "before-context=",
            "case-sensitive",
            "color=",
            "colors=",
            "column",
            "context=",
            "count",
            "count-matches",
            "debug",
            "encoding=",
            "engine=",
            "field-context-separator=",
            "field-match-separator=",
            "file=",
            "files",
            "files-with-matches",
            "files-without-match",
            "fixed-strings",
            "follow",
            "glob-case-insensitive",
            "glob=",
            "heading",
            "help",
            "hidden",
            "iglob=",
            "ignore-case",
            "invert-match",
            "json",
            "line-number",
            "line-regexp",
            "max-columns-preview",
            "max-columns=",
            "max-count=",
            "max-depth=",
            "max-filesize=",
            "multiline",
            "multiline-dotall",
            "no-config",
            "no-filename",
            "no-heading",
            "no-ignore",
            "no-ignore-vcs",
            "no-line-number",
            "no-messages",
            "null",
            "only-matching",
            "passthru",
            "path-separator=",
            "pcre2",
            "quiet",
            "regexp=",
            "replace=",
            "smart-case",
            "sort=",
            "sortr=",
            "stats",
            "text",
            "threads=",
            "trim",
            "type-list",
            "type-not=",
            "type=",
            "unrestricted",
            "version",
            "vimgrep",
            "with-filename",
            "word-regexp",
        ],
        false,
    ),
    entry("seq", ANY, "", &[], false),
    entry("sha1sum", ANY, "", &[], false),
    entry("sha224sum", ANY, "", &[], false),
    entry("sha256sum", ANY, "", &[], false),
    entry("sha384sum", ANY, "", &[], false),
    entry("sha512sum", ANY, "", &[], false),
    entry("shasum", ANY, "", &[], false),
    entry("shellcheck", ANY, "", &[], false),
    entry("sleep", ANY, "", &[], false),
    entry(
        "sort",
        "bcCdfghiMmnRrsuVz",
        "kSt",
        &[
            "check",
            "debug",
            "dictionary-order",
            "field-separator=",
            "general-numeric-sort",
            "human-numeric-sort",
            "ignore-case",
            "ignore-leading-blanks",
            "ignore-nonprinting",
            "key=",
            "merge",
            "month-sort",
            "numeric-sort",
            "parallel=",
            "random-sort",
            "reverse",
            "stable",
            "unique",
            "version-sort",
            "zero-terminated",
        ],
        false,
    ),
    entry(
        "stat",
        "fLt",
        "c",
        &["dereference", "file-system", "format=", "printf=", "terse"],
        false,
    ),
    entry("strings", ANY, "", &[], false),
    entry("tac", ANY, "", &[], false),
    entry(
        "tail",
        "fFqrvz",
        "cns",
        &[
            "bytes=",
            "follow",
            "follow=",
            "lines=",
            "pid=",
            "quiet",
            "retry",
            "silent",
            "sleep-interval=",
            "verbose",
            "zero-terminated",
        ],
        true,
    ),
    entry("test", ANY, "", &[], false),
    entry("top", "bcHiS", "dnpuU", &[], false),
    entry("tput", ANY, "", &[], false),
    entry(
        "tr",
        "cCdst",
        "",
        &["complement", "delete", "squeeze-repeats", "truncate-set1"],
        false,
    ),
    entry(
        "tree",
        "adfgilpqstuvACDFNQrUJ",
        "ILP",
        &[
            "charset=",
            "dirsfirst",
            "du",
            "filelimit=",
            "gitignore",
            "help",
            "matchdirs",
            "noreport",
            "prune",
            "si",
            "sort=",
            "version",
        ],
        false,
    ),
    entry("true", ANY, "", &[], false),
    entry("tty", ANY, "", &[], false),
    entry("type", ANY, "", &[], false),
    entry("uname", ANY, "", &[], false),
    entry("unexpand", ANY, "", &[], false),
    entry(
        "uniq",
        "cdDiuz",
        "fsw",
        &[
            "count",
            "repeated",
            "all-repeated",
            "all-repeated=",
            "ignore-case",
            "unique",
            "zero-terminated",
            "skip-fields=",
            "skip-chars=",
            "check-chars=",
            "group",
            "group=",
        ],
        false,
    ),
    entry("uptime", ANY, "", &[], false),
    entry("users", ANY, "", &[], false),
    entry(
        "wc",
        "clmwL",
        "",
        &[
            "bytes",
            "chars",
            "lines",
            "words",
            "max-line-length",
            "total=",
        ],
        false,
    ),
    entry("whatis", ANY, "", &[], false),
    entry("whereis", ANY, "", &[], false),
    entry("which", ANY, "", &[], false),
    entry("who", ANY, "", &[], false),
    entry("whoami", ANY, "", &[], false),
    entry("xxd", "bCeEipu", "cglosR", &[], false),
    entry("xzcat", ANY, "", &[], false),
    entry("yes", ANY, "", &[], false),
    entry("zcat", ANY, "", &[], false),
    entry(
        "zgrep",
        "abcEFGHhIiLlnoqRrsTUVvwxyZz",
        "ABCDdefm",
        GREP_LONG,
        true,
    ),
];

/// The entry for `program`, if it has one.
pub(crate) fn safe_options(program: &str) -> Option<&'static SafeOptions> {
    TABLE
        .binary_search_by(|e| e.program.cmp(program))
        .ok()
        .map(|i| &TABLE[i])
}

/// Splits `args` of `program` into operands, or names the first option that
/// is not known to be safe for it. Without an entry, any option is unknown.
pub(crate) fn check_options<W: AsRef<str>>(
    program: &str,
    args: &[W],
) -> Result<Vec<usize>, String> {
    check(program, safe_options(program), args)
}

/// [`check_options`] with a table kept elsewhere (git's sub-commands, whose
/// tables live with the git rules); the error names `spec.program`.
pub(crate) fn check_spec<W: AsRef<str>>(
    spec: &SafeOptions,
    args: &[W],
) -> Result<Vec<usize>, String> {
    read_spec(spec, args).map(|reading| reading.operands)
}

/// One option as the program reads it: its name (the letter, or the long name
/// without dashes) and its value, when it took one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    /// `"n"`, `"dry-run"`.
    pub name: String,
    /// The value: attached (`-eX`, `--exclude=X`) or the next word.
    pub value: Option<String>,
    /// The index of the word the value was, when it was the next word.
    pub value_at: Option<usize>,
}

/// The options and operands of one command line, read as its program reads them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reading {
    /// The options, in order.
    pub opts: Vec<Given>,
    /// Indices of the operands, in order.
    pub operands: Vec<usize>,
    /// True when `--` ended the options.
    pub dash_dash: bool,
}

impl Reading {
    /// True when any of `names` (letters or long names) was given.
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|o| names.contains(&o.name.as_str()))
    }
}

/// Reads `args` by `spec`, as getopt does: short options cluster, a valued
/// short option takes the rest of its word or the next word (`-fen` is `-f -e
/// n`), a long option's value follows `=` or is the next word. An option not
/// listed is an error naming it (the caller asks).
pub(crate) fn read_spec<W: AsRef<str>>(spec: &SafeOptions, args: &[W]) -> Result<Reading, String> {
    read(spec.program, Some(spec), args)
}

fn check<W: AsRef<str>>(
    program: &str,
    spec: Option<&SafeOptions>,
    args: &[W],
) -> Result<Vec<usize>, String> {
    read(program, spec, args).map(|reading| reading.operands)
}

fn read<W: AsRef<str>>(
    program: &str,
    spec: Option<&SafeOptions>,
    args: &[W],
) -> Result<Reading, String> {
    let mut out = Reading::default();
    let mut index = 0;
    let mut only_operands = false;
    let given = |name: &str, value: Option<&str>, value_at: Option<usize>| Given {
        name: name.to_string(),
        value: value.map(str::to_string),
        value_at,
    };
    while index < args.len() {
        let text = args[index].as_ref();
        index += 1;
        if only_operands || !text.starts_with('-') || text == "-" {
            if spec.is_some_and(|s| s.numeric) && text.starts_with('+') && text.len() > 1 {
                continue;
            }
            out.operands.push(index - 1);
            continue;
        }
        if text == "--" {
            only_operands = true;
            out.dash_dash = true;
            continue;
        }
        let Some(spec) = spec else {
            return Err(format!(
                "no options of {program} are known to be safe; `{text}` is not analysed"
            ));
        };
        if spec.flags == ANY {
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let listed = |suffix: &str| {
                spec.long
                    .iter()
                    .any(|l| l.strip_suffix(suffix) == Some(name))
            };
            let (bare, one, two) = (spec.long.contains(&name), listed("="), listed("=="));
            let values = match (attached.is_some(), bare || listed("?"), one, two) {
                (true, _, true, _) | (true, _, _, true) | (false, true, _, _) => 0,
                (true, _, _, _) if listed("?") => 0,
                (false, false, true, _) => 1,
                (false, false, false, true) => 2,
                _ => return Err(format!("unknown option `--{name}` for {program}")),
            };
            let next = (values > 0).then_some(index);
            let value = attached.or_else(|| next.and_then(|i| args.get(i)).map(AsRef::as_ref));
            if values > 0 && value.is_none() {
                return Err(format!("`--{name}` of {program} lacks its value"));
            }
            out.opts.push(given(name, value, next));
            index += values;
            continue;
        }
        let short = &text[1..];
        if spec.numeric && short.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (offset, flag) in short.char_indices() {
            let rest = &short[offset + flag.len_utf8()..];
            let name = flag.encode_utf8(&mut [0; 4]).to_string();
            if spec.optional.contains(flag) {
                out.opts
                    .push(given(&name, (!rest.is_empty()).then_some(rest), None));
                break;
            }
            if spec.valued.contains(flag) {
                if rest.is_empty() {
                    let Some(value) = args.get(index) else {
                        return Err(format!("`-{flag}` of {program} lacks its value"));
                    };
                    out.opts
                        .push(given(&name, Some(value.as_ref()), Some(index)));
                    index += 1;
                } else {
                    out.opts.push(given(&name, Some(rest), None));
                }
                break;
            }
            if !spec.flags.contains(flag) {
                return Err(format!("unknown option `-{flag}` for {program}"));
            }
            out.opts.push(given(&name, None, None));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted() {
        assert!(TABLE.windows(2).all(|w| w[0].program < w[1].program));
    }

    #[test]
    fn unknown_options_are_named() {
        assert_eq!(
            check_options("rg", &["--pre", "cat", "x"]).unwrap_err(),
            "unknown option `--pre` for rg"
        );
        assert!(check_options("rg", &["--pre-glob=*.x", "x"]).is_err());
        assert!(check_options("fd", &["-x", "rm"]).is_err());
        assert!(check_options("tree", &["-o", "/tmp/x"]).is_err());
        assert!(check_options("date", &["-s", "now"]).is_err());
        assert!(check_options("man", &["-P", "sh -c id", "ls"]).is_err());
        assert_eq!(
            check_options("grep", &["-rn", "-A", "3", "--color=auto", "x", "src"]).unwrap(),
            vec![4, 5]
        );
        assert_eq!(check_options("head", &["-20", "f"]).unwrap(), vec![1]);
        assert_eq!(
            check_options("jq", &["--arg", "a", "b", ".x", "f"]).unwrap(),
            vec![3, 4]
        );
        assert!(check_options("frob", &["-x"]).is_err());
        assert_eq!(check_options("frob", &["x"]).unwrap(), vec![0]);
    }

    /// `name?` and optional short values are only ever attached: the next word is
    /// judged on its own, so an option hidden there is still named.
    #[test]
    fn optional_values_never_take_the_next_word() {
        let spec = SafeOptions {
            optional: "u",
            ..entry("prog", "s", "n", &["color?", "since?"], false)
        };
        assert_eq!(
            check_spec(&spec, &["--color", "--since=x", "-uno", "-n", "5", "rev"]).unwrap(),
            vec![5]
        );
        assert_eq!(check_spec(&spec, &["--since", "x"]).unwrap(), vec![1]);
        assert_eq!(
            check_spec(&spec, &["--since", "--output=x"]).unwrap_err(),
            "unknown option `--output` for prog"
        );
        assert!(check_spec(&spec, &["-u", "--output=x"]).is_err());
        assert!(check_spec(&spec, &["-su", "--output=x"]).is_err());
    }
}
