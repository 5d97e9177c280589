//! Archivers and compressors: `tar`, `zip`, `gzip`/`gunzip`, `bzip2`/
//! `bunzip2`, `xz`/`unxz`, `zstd`.
//!
//! Each is read by an allow-list of the options it understands; any other
//! option asks, naming it (an archiver's options can run programs: `tar -I`,
//! `--to-command`, `zip -TT`; or write elsewhere: `zip -O`, `-b`, `-lf`,
//! `tar -g`, `--index-file`). Deleting the inputs (`tar --remove-files`,
//! `zip -m`, a compressor without `-k`) is judged by the deletion rules:
//! on the deny floor for a system directory or the home directory
//! ([`crate::catastrophic::program_catastrophic`]), asked outside the
//! workspace or where no snapshot holds them.

use crate::SafetyLevel::{Ask, Safe, WorkspaceSafe};
use crate::getopt::{OptSpec, Parsed};
use crate::program_rules::{PathJudge, SegmentJudgement};
use crate::shell_parse::Word;

/// Why an option not on an archiver's allow-list asks, and what to do.
fn not_understood(program: &str, option: &str) -> String {
    format!(
        "{program} option `{option}` is not understood (it could run a program or write \
         elsewhere); run it without that option, or approve it"
    )
}

/// GNU tar options understood; anything else asks. The options that run
/// programs or write other files (`-I`, `--use-compress-program`, `-g`,
/// `--listed-incremental`, `--index-file`, `--rmt-command`,
/// `--rsh-command`, `--to-command`, `--checkpoint-action`, `-F`,
/// `--info-script`, `--new-volume-script`, `--volno-file`) are not here.
const TAR: OptSpec = OptSpec {
    flags: "AcdrtuxvzjJaOkphmoSWPlBiknsUwZ",
    valued: "fCbHKNTXV",
    optional: "",
    long: &[
        "absolute-names",
        "acls",
        "anchored",
        "append",
        "atime-preserve?",
        "auto-compress",
        "backup?",
        "block-number",
        "blocking-factor=",
        "bzip2",
        "catenate",
        "check-links",
        "checkpoint?",
        "compare",
        "concatenate",
        "create",
        "delay-directory-restore",
        "delete",
        "dereference",
        "diff",
        "directory=",
        "exclude-backups",
        "exclude-caches",
        "exclude-caches-all",
        "exclude-caches-under",
        "exclude-from=",
        "exclude-tag-all=",
        "exclude-tag-under=",
        "exclude-tag=",
        "exclude-vcs",
        "exclude-vcs-ignores",
        "exclude=",
        "extract",
        "file=",
        "files-from=",
        "force-local",
        "format=",
        "full-time",
        "get",
        "group=",
        "gunzip",
        "gzip",
        "hard-dereference",
        "help",
        "ignore-case",
        "ignore-failed-read",
        "ignore-zeros",
        "keep-directory-symlink",
        "keep-newer-files",
        "keep-old-files",
        "label=",
        "list",
        "lzip",
        "lzma",
        "lzop",
        "mode=",
        "mtime=",
        "newer-mtime=",
        "newer=",
        "no-acls",
        "no-anchored",
        "no-auto-compress",
        "no-delay-directory-restore",
        "no-ignore-case",
        "no-overwrite-dir",
        "no-recursion",
        "no-same-owner",
        "no-same-permissions",
        "no-selinux",
        "no-wildcards",
        "no-wildcards-match-slash",
        "no-xattrs",
        "null",
        "numeric-owner",
        "one-file-system",
        "one-top-level?",
        "overwrite",
        "overwrite-dir",
        "owner=",
        "posix",
        "preserve-order",
        "preserve-permissions",
        "read-full-records",
        "recursion",
        "remove-files",
        "same-owner",
        "same-permissions",
        "selinux",
        "show-transformed-names",
        "skip-old-files",
        "sort=",
        "sparse",
        "strip-components=",
        "suffix=",
        "to-stdout",
        "totals?",
        "touch",
        "transform=",
        "uncompress",
        "ungzip",
        "unlink-first",
        "update",
        "usage",
        "utc",
        "verbose",
        "verify",
        "version",
        "warning=",
        "wildcards",
        "wildcards-match-slash",
        "xattrs",
        "xform=",
        "xz",
        "zstd",
    ],
    stop_at_operand: false,
};

/// GNU tar long options that run a program or write another file, the
/// more dangerous reading of a shared prefix first (tar accepts any
/// unique prefix: `--to-com=sh` is `--to-command=sh`).
const TAR_RUNS: &[&str] = &[
    "to-command",
    "checkpoint-action",
    "use-compress-program",
    "info-script",
    "new-volume-script",
    "rsh-command",
    "rmt-command",
    "index-file",
    "listed-incremental",
    "volno-file",
];

/// `tar ARGS` as tar reads them.
pub(crate) struct TarCall {
    /// `c`, `r`, `u`, `A` (writing an archive), `x`, `t`, `d`, or `D`
    /// (`--delete`); `None` when no mode was given.
    pub mode: Option<char>,
    pub archive: Option<Word>,
    pub dirs: Vec<Word>,
    pub inputs: Vec<Word>,
    pub remove_files: bool,
    pub to_stdout: bool,
    pub absolute: bool,
    /// Files tar reads names from (`-T`, `-X`).
    pub lists: Vec<Word>,
}

/// The words of `args` with tar's old-style first word (`czf out.tgz src`:
/// a bundle of letters without `-`, each valued letter taking the next
/// word in order) written as ordinary short options.
fn tar_args(args: &[Word]) -> Vec<Word> {
    let Some(first) = args.first() else {
        return Vec::new();
    };
    if first.text.starts_with('-') || first.dynamic || first.text.contains(['=', '/', '.']) {
        return args.to_vec();
    }
    let mut out = Vec::new();
    let mut rest = args[1..].iter();
    for letter in first.text.chars() {
        out.push(Word {
            text: format!("-{letter}"),
            ..first.clone()
        });
        if TAR.valued.contains(letter)
            && let Some(value) = rest.next()
        {
            out.push(value.clone());
        }
    }
    out.extend(rest.cloned());
    out
}

/// Reads `tar ARGS`; an error is the reason to ask (naming the option).
pub(crate) fn parse_tar(args: &[Word]) -> Result<TarCall, String> {
    // An abbreviation of a common option reads as it (`--fi=` is `--file=`).
    let args: Vec<Word> = tar_args(args)
        .into_iter()
        .map(|w| Word {
            text: crate::getopt::expand_long(
                &w.text,
                &[
                    "file",
                    "directory",
                    "extract",
                    "create",
                    "list",
                    "append",
                    "update",
                ],
                &[],
            )
            .into_owned(),
            ..w
        })
        .collect();
    for word in &args {
        let text = crate::getopt::expand_long(&word.text, TAR_RUNS, &["checkpoint"]);
        let name = text.split('=').next().unwrap_or("");
        if let Some(long) = name.strip_prefix("--")
            && TAR_RUNS.contains(&long)
        {
            return Err(format!(
                "tar option `{text}` runs a program or writes another file; run it without that \
                 option, or approve it"
            ));
        }
    }
    let parsed: Parsed = crate::getopt::parse(&TAR, &args).map_err(|why| {
        let option = why.split('`').nth(1).unwrap_or(&why).to_string();
        not_understood("tar", &option)
    })?;
    let mode = parsed
        .opts
        .iter()
        .rev()
        .find_map(|o| match o.name.as_str() {
            m @ ("c" | "r" | "u" | "A" | "x" | "t" | "d") => m.chars().next(),
            "create" => Some('c'),
            "append" => Some('r'),
            "update" => Some('u'),
            "catenate" | "concatenate" => Some('A'),
            "extract" | "get" => Some('x'),
            "list" => Some('t'),
            "diff" | "compare" => Some('d'),
            "delete" => Some('D'),
            _ => None,
        });
    Ok(TarCall {
        mode,
        archive: parsed.values(&["f", "file"]).last().cloned(),
        dirs: parsed.values(&["C", "directory"]).cloned().collect(),
        remove_files: parsed.has("remove-files"),
        to_stdout: parsed.has("O") || parsed.has("to-stdout"),
        absolute: parsed.has("P") || parsed.has("absolute-names"),
        lists: parsed
            .values(&["T", "X", "files-from", "exclude-from"])
            .cloned()
            .collect(),
        inputs: parsed.operands,
    })
}

/// The inputs of an archiver as the paths they name: relative inputs are
/// read from the last `-C DIR` before them (taken as the only one).
fn inputs_below(dirs: &[Word], inputs: &[Word]) -> Vec<Word> {
    match dirs.last() {
        Some(dir) => inputs
            .iter()
            .map(|input| {
                if input.text.starts_with(['/', '~', '$']) {
                    input.clone()
                } else {
                    Word {
                        text: format!("{}/{}", dir.text.trim_end_matches('/'), input.text),
                        dynamic: dir.dynamic || input.dynamic,
                        ..input.clone()
                    }
                }
            })
            .collect(),
        None => inputs.to_vec(),
    }
}

pub(crate) fn tar_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    if let Some(judgement) = crate::program_rules::archived_secrets(args, judge) {
        return judgement;
    }
    let call = match parse_tar(args) {
        Ok(call) => call,
        Err(why) => return SegmentJudgement::owned(Ask, why),
    };
    let reads = judge.reads(call.lists.iter());
    if reads.level > Safe {
        return reads;
    }
    if call.absolute {
        return SegmentJudgement::new(Ask, "tar -P keeps absolute paths (extracting writes them)");
    }
    // GNU tar takes `HOST:FILE` (a colon before any slash) for a remote archive, reached
    // through a remote shell, unless `--force-local`.
    if let Some(a) = &call.archive
        && a.text
            .split('/')
            .next()
            .is_some_and(|head| head.contains(':'))
        && !args.iter().any(|w| w.text == "--force-local")
    {
        return SegmentJudgement::new(
            Ask,
            "tar's archive `HOST:FILE` is on another machine (tar runs a remote shell); \
             add --force-local for a local file",
        );
    }
    match call.mode {
        Some('t' | 'd') => match &call.archive {
            Some(a) => judge
                .reads([a])
                .max(SegmentJudgement::new(Safe, "lists an archive")),
            None => SegmentJudgement::new(Safe, "lists an archive"),
        },
        Some('x') if call.to_stdout => match &call.archive {
            Some(a) => judge.reads([a]).max(SegmentJudgement::new(
                Safe,
                "extracts to standard output (writes no file)",
            )),
            None => SegmentJudgement::new(Safe, "extracts to standard output (writes no file)"),
        },
        Some('x') => {
            let written = judge.writes(&call.dirs);
            if written.level > WorkspaceSafe {
                return written;
            }
            SegmentJudgement::new(Ask, crate::program_rules::WRITES_WHAT_IT_NAMES)
        }
        Some('c' | 'r' | 'u' | 'A' | 'D') => {
            let Some(archive) = &call.archive else {
                return SegmentJudgement::new(
                    Ask,
                    "tar without `-f` writes to a default device; name the archive with -f",
                );
            };
            let mut judgement = judge.writes([archive]);
            if call.remove_files {
                let inputs = inputs_below(&call.dirs, &call.inputs);
                let deleted = judge.deletes(&inputs);
                judgement = judgement.max(SegmentJudgement::owned(
                    deleted.level,
                    format!("tar --remove-files {}", deleted.reason),
                ));
            }
            judgement
        }
        _ => SegmentJudgement::new(
            Ask,
            "tar without a mode (-c, -x, -t, …) is not understood; name the mode",
        ),
    }
}

/// `zip ARGS` as zip reads them.
pub(crate) struct ZipCall {
    pub archive: Option<Word>,
    pub inputs: Vec<Word>,
    pub moves: bool,
    pub recursive: bool,
}

/// zip's one-letter options that take no value and neither run a program
/// nor write anywhere but the archive.
const ZIP_FLAGS: &str = "qvrRjD0123456789XyufFgoklmcSJAwez@$d";
/// zip options of more than one letter understood (each takes no value,
/// except `ds`, `tt`, `Z` and `n`/`P`/`t`, which take one).
const ZIP_MULTI: &[&str] = &[
    "FF", "db", "dc", "dd", "dg", "du", "dv", "sf", "so", "sc", "ll", "nw", "ws", "MM", "ic",
];
const ZIP_LONG: &[(&str, Option<char>)] = &[
    ("recurse-paths", Some('r')),
    ("recurse-patterns", Some('R')),
    ("quiet", Some('q')),
    ("verbose", Some('v')),
    ("move", Some('m')),
    ("junk-paths", Some('j')),
    ("symlinks", Some('y')),
    ("update", Some('u')),
    ("freshen", Some('f')),
    ("grow", Some('g')),
    ("no-dir-entries", Some('D')),
    ("no-extra", Some('X')),
    ("exclude", Some('x')),
    ("include", Some('i')),
    ("delete", Some('d')),
    ("encrypt", Some('e')),
];

/// Reads `zip ARGS`; an error is the reason to ask (naming the option).
pub(crate) fn parse_zip(args: &[Word]) -> Result<ZipCall, String> {
    let mut call = ZipCall {
        archive: None,
        inputs: Vec::new(),
        moves: false,
        recursive: false,
    };
    let mut patterns = false;
    let mut iter = args.iter();
    let runs = |option: &str, why: &str| {
        format!("zip option `{option}` {why}; run it without that option, or approve it")
    };
    while let Some(word) = iter.next() {
        let text = word.text.as_str();
        if !text.starts_with('-') || text == "-" {
            if patterns {
                continue;
            }
            if call.archive.is_none() {
                call.archive = Some(word.clone());
            } else {
                call.inputs.push(word.clone());
            }
            continue;
        }
        if word.dynamic {
            return Err(format!("zip option `{text}` is only known at run time"));
        }
        patterns = false;
        let letters: String = if let Some(long) = text.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            match ZIP_LONG.iter().find(|(l, _)| *l == name) {
                Some((_, Some(c))) => c.to_string(),
                _ => {
                    return Err(match name {
                        "output-file" => runs(text, "writes the archive to another file"),
                        "temp-path" => runs(text, "writes temporary files to another directory"),
                        "logfile-path" | "log-append" => runs(text, "writes a log file"),
                        "test" | "unzip-command" => runs(text, "runs a test command"),
                        _ => not_understood("zip", text),
                    });
                }
            }
        } else {
            text[1..].to_string()
        };
        match letters.as_str() {
            "O" => return Err(runs(text, "writes the archive to another file")),
            "b" => return Err(runs(text, "writes temporary files to another directory")),
            "lf" | "la" | "li" => return Err(runs(text, "writes a log file")),
            "T" | "TT" => return Err(runs(text, "runs a test command")),
            "ds" | "tt" | "Z" => {
                iter.next();
                continue;
            }
            m if ZIP_MULTI.contains(&m) => continue,
            _ => {}
        }
        for (offset, flag) in letters.char_indices() {
            match flag {
                'x' | 'i' => patterns = true,
                'n' | 'P' | 't' => {
                    if offset + 1 == letters.len() {
                        iter.next();
                    }
                    break;
                }
                'O' => return Err(runs(text, "writes the archive to another file")),
                'b' => return Err(runs(text, "writes temporary files to another directory")),
                'T' => return Err(runs(text, "runs a test command")),
                'm' => call.moves = true,
                'r' | 'R' => call.recursive = true,
                f if ZIP_FLAGS.contains(f) => {}
                other => return Err(not_understood("zip", &format!("-{other}"))),
            }
        }
    }
    Ok(call)
}

pub(crate) fn zip_judgement(args: &[Word], judge: PathJudge<'_>) -> SegmentJudgement {
    if let Some(judgement) = crate::program_rules::archived_secrets(args, judge) {
        return judgement;
    }
    let call = match parse_zip(args) {
        Ok(call) => call,
        Err(why) => return SegmentJudgement::owned(Ask, why),
    };
    let Some(archive) = &call.archive else {
        return SegmentJudgement::new(Safe, "prints zip's usage");
    };
    let mut judgement = judge.writes([archive]);
    if call.moves {
        let deleted = judge.deletes(&call.inputs);
        judgement = judgement.max(SegmentJudgement::owned(
            deleted.level,
            format!("zip -m {}", deleted.reason),
        ));
    }
    judgement
}

/// What a compressor call does with its operands.
pub(crate) struct CompressCall {
    /// Writes only to standard output, or only tests or lists.
    pub no_files: bool,
    /// Deletes each input after writing its (de)compressed twin.
    pub deletes_inputs: bool,
    pub recursive: bool,
    pub operands: Vec<Word>,
    /// Where output goes when named (`zstd -o FILE`, `--output-dir-*`).
    pub outputs: Vec<Word>,
}

fn compressor_spec(program: &str) -> OptSpec {
    match program {
        // pigz reads gzip's options; the ones of its own (`-p N`, `-b N`,
        // `-i`, `-z`, `-K`) are not understood and ask.
        "gzip" | "gunzip" | "pigz" | "unpigz" => OptSpec {
            flags: "cdfhklLnNqrtvV123456789",
            valued: "",
            optional: "",
            long: &[
                "best",
                "decompress",
                "fast",
                "force",
                "help",
                "keep",
                "license",
                "list",
                "name",
                "no-name",
                "quiet",
                "recursive",
                "rsyncable",
                "stdout",
                "synchronous",
                "test",
                "to-stdout",
                "uncompress",
                "verbose",
                "version",
            ],
            stop_at_operand: false,
        },
        "bzip2" | "bunzip2" => OptSpec {
            flags: "cdzkftsqvLV123456789",
            valued: "",
            optional: "",
            long: &[
                "best",
                "compress",
                "decompress",
                "fast",
                "force",
                "help",
                "keep",
                "license",
                "quiet",
                "small",
                "stdout",
                "test",
                "verbose",
                "version",
            ],
            stop_at_operand: false,
        },
        "xz" | "unxz" => OptSpec {
            flags: "zdtlkfcqvehHV0123456789",
            valued: "TFCM",
            optional: "",
            long: &[
                "best",
                "check=",
                "compress",
                "decompress",
                "extreme",
                "fast",
                "force",
                "format=",
                "help",
                "keep",
                "list",
                "memlimit=",
                "no-sparse",
                "quiet",
                "single-stream",
                "stdout",
                "test",
                "threads=",
                "to-stdout",
                "uncompress",
                "verbose",
                "version",
            ],
            stop_at_operand: false,
        },
        _ => OptSpec {
            flags: "zdtlkfcqvrhHV0123456789",
            valued: "oTD",
            optional: "",
            long: &[
                "adapt?",
                "check",
                "compress",
                "content-size",
                "decompress",
                "exclude-compressed",
                "fast?",
                "force",
                "format=",
                "help",
                "keep",
                "list",
                "long?",
                "no-check",
                "no-content-size",
                "no-progress",
                "output-dir-flat=",
                "output-dir-mirror=",
                "quiet",
                "rm",
                "rsyncable",
                "single-thread",
                "sparse",
                "stdout",
                "test",
                "threads=",
                "ultra",
                "uncompress",
                "verbose",
                "version",
            ],
            stop_at_operand: false,
        },
    }
}

/// Reads a compressor's arguments; an error is the reason to ask.
pub(crate) fn parse_compressor(program: &str, args: &[Word]) -> Result<CompressCall, String> {
    // zstd's numeric options (`-19`, `-T0`, `-M10MB`, `--fast=3`) and the
    // levels of the others are plain digits: the spec lists them as flags.
    let parsed = crate::getopt::parse(&compressor_spec(program), args).map_err(|why| {
        let option = why.split('`').nth(1).unwrap_or(&why).to_string();
        not_understood(program, &option)
    })?;
    let any = |names: &[&str]| names.iter().any(|n| parsed.has(n));
    let no_files = any(&["c", "stdout", "to-stdout", "t", "test", "l", "list"]);
    let zstd = program == "zstd";
    let deletes_inputs = !no_files
        && if zstd {
            parsed.has("rm")
        } else {
            !any(&["k", "keep"])
        };
    Ok(CompressCall {
        no_files,
        deletes_inputs,
        recursive: any(&["r", "recursive"]),
        outputs: parsed
            .values(&["o", "output-dir-flat", "output-dir-mirror"])
            .cloned()
            .collect(),
        operands: parsed.operands,
    })
}

/// `gzip`, `bzip2`, `xz`, `zstd` and their `un…` names: to standard
/// output (or testing, listing) they only read; otherwise they write each
/// (de)compressed file beside its input, and delete the input unless kept.
pub(crate) fn compressor_judgement(
    program: &str,
    args: &[Word],
    judge: PathJudge<'_>,
) -> SegmentJudgement {
    let call = match parse_compressor(program, args) {
        Ok(call) => call,
        Err(why) => return SegmentJudgement::owned(Ask, why),
    };
    let reads = judge.reads(call.operands.iter().filter(|w| w.text != "-"));
    if reads.level > Safe {
        return reads;
    }
    let files: Vec<&Word> = call.operands.iter().filter(|w| w.text != "-").collect();
    if call.no_files || (files.is_empty() && call.outputs.is_empty()) {
        return SegmentJudgement::new(Safe, "only reads or prints");
    }
    let mut judgement = if call.outputs.is_empty() {
        judge.writes(files.iter().copied())
    } else {
        judge.writes(&call.outputs)
    };
    if call.deletes_inputs {
        let deleted = judge.deletes(files.iter().copied());
        judgement = judgement.max(SegmentJudgement::owned(
            deleted.level,
            format!("{program} replaces its inputs: it {}", deleted.reason),
        ));
    }
    judgement
}
