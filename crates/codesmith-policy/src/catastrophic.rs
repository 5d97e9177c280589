//! The five catastrophic literals, checked on the raw text.
//!
//! This list is kept short on purpose: `rm -rf /`, `rm -rf /*`, `rm -rf ~`,
//! `rm -rf $HOME` and the fork bomb. Routine but risky commands (`shutdown`,
//! `docker rm`, `killall`) go to approval instead. The classifier judges them
//! on what will really run ([`rm_catastrophic`] on decoded words, the fork
//! bomb by its shape in the parse), so data that merely mentions them
//! (`grep 'rm -rf /' docs`) is not refused. [`catastrophic_reason`] reads raw
//! text; it is the fallback for a line the grammar cannot parse.

use crate::path_text::normalize_path;

/// Returns why `raw` contains one of the five catastrophic literals, if it
/// does. Flag order and spelling are normalised (`-rf`, `-fr`, `-r -f`,
/// `--recursive --force`), as are quotes, `\` escapes, `${HOME}`, repeated
/// slashes, full paths to `rm` and a trailing `--no-preserve-root`.
pub fn catastrophic_reason(raw: &str) -> Option<&'static str> {
    if is_fork_bomb(raw) {
        return Some("matches a catastrophic pattern: the fork bomb");
    }
    let cleaned = raw
        .replace("${HOME}", "$HOME")
        .replace(['\'', '"', '\\'], "");
    cleaned
        .split([';', '&', '|', '\n', '(', ')', '`', '{', '}'])
        .find_map(rm_piece_reason)
}

fn rm_piece_reason(piece: &str) -> Option<&'static str> {
    let mut tokens = piece.split_whitespace();
    while let Some(token) = tokens.next() {
        if token.rsplit('/').next() != Some("rm") {
            continue;
        }
        let (mut recursive, mut force) = (false, false);
        let mut worst = None;
        for arg in tokens.by_ref() {
            if let Some(long) = arg.strip_prefix("--") {
                recursive |= long == "recursive";
                force |= long == "force";
            } else if let Some(short) = arg.strip_prefix('-') {
                recursive |= short.contains(['r', 'R']);
                force |= short.contains('f');
            } else if worst.is_none() {
                worst = catastrophic_target(arg);
            }
        }
        if recursive && force && worst.is_some() {
            return worst;
        }
    }
    None
}

fn catastrophic_target(arg: &str) -> Option<&'static str> {
    let target = normalize_target(arg);
    match target.as_str() {
        "/" => Some("matches a catastrophic pattern: rm -rf /"),
        "/*" => Some("matches a catastrophic pattern: rm -rf /*"),
        "~" | "~/" => Some("matches a catastrophic pattern: rm -rf ~"),
        "$HOME" | "$HOME/" => Some("matches a catastrophic pattern: rm -rf $HOME"),
        _ => None,
    }
}

/// A path argument spelled from `/`, `~` or `$HOME`, normalised by the kernel
/// rule ([`normalize_path`]) below that root so spellings of the
/// same target compare equal: `/.`, `/usr/..` and `//` are all `/`; `~/.` is
/// `~`; `$HOME/tmp/..` is `$HOME`; `..` never climbs above the root or the
/// home prefix. Any other argument is returned as written.
fn normalize_target(arg: &str) -> String {
    let (root, rest) = if arg.starts_with('/') {
        ("", arg)
    } else if let Some(rest) = arg.strip_prefix("$HOME") {
        ("$HOME", rest)
    } else if let Some(rest) = arg.strip_prefix('~') {
        ("~", rest)
    } else {
        return arg.to_string();
    };
    let below = normalize_path(&format!("/{rest}"));
    match (root, below.as_str()) {
        ("", _) => below,
        (_, "/") => root.to_string(),
        _ => format!("{root}{below}"),
    }
}

/// A function whose body pipes itself into itself in the background and is
/// then called: `:(){ :|:& };:` or `bomb(){ bomb|bomb& };bomb`.
fn is_fork_bomb(raw: &str) -> bool {
    let squeezed: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    let mut search = 0;
    while let Some(found) = squeezed[search..].find("(){") {
        let open = search + found;
        let name_start = squeezed[..open]
            .rfind([';', '&', '|', '(', ')', '{', '}', '\'', '"'])
            .map_or(0, |i| i + 1);
        let name = squeezed[name_start..open].trim_start_matches("function");
        let body = &squeezed[open + 3..];
        if !name.is_empty()
            && body.starts_with(&format!("{name}|{name}&"))
            && body.contains(&format!("}};{name}"))
        {
            return true;
        }
        search = open + 3;
    }
    false
}

/// GNU `rm` options (coreutils 9); long options may be abbreviated
/// (`--rec --for`).
pub(crate) const RM: crate::getopt::OptSpec = crate::getopt::OptSpec {
    flags: "dfiIrRv",
    valued: "",
    optional: "",
    long: &[
        "dir",
        "force",
        "help",
        "interactive?",
        "no-preserve-root",
        "one-file-system",
        "preserve-root?",
        "recursive",
        "verbose",
        "version",
    ],
    stop_at_operand: false,
};

/// The catastrophic deletions judged on what `rm` really receives: `args`
/// are decoded words (quotes, `$'…'`, braces already undone), relative
/// paths are taken from `cwd`, and `~` / `$HOME` / `${HOME:?}` stand for
/// `home`. A recursive `rm` of the root, a system directory
/// ([`is_system_dir`]), everything directly in one of them (`/*`, `/?*`,
/// `/usr/*`), the home directory or everything in it is catastrophic,
/// whatever the spelling (`//`, `/tmp/../`, `cd / && rm -rf *`,
/// `--rec`).
pub(crate) fn rm_catastrophic(
    args: &[crate::shell_parse::Word],
    cwd: Option<&str>,
    home: Option<&str>,
) -> Option<String> {
    let (recursive, targets): (bool, Vec<String>) = match crate::getopt::parse(&RM, args) {
        Ok(parsed) => (
            parsed.has("r") || parsed.has("R") || parsed.has("recursive"),
            parsed.operands.into_iter().map(|w| w.text).collect(),
        ),
        // Options not understood: read them leniently, as the raw-text
        // check does, so nothing unknown hides a catastrophic target.
        Err(_) => {
            let mut recursive = false;
            let mut targets = Vec::new();
            for word in args {
                let text = word.text.as_str();
                if let Some(long) = text.strip_prefix("--") {
                    recursive |= !long.is_empty() && "recursive".starts_with(long);
                } else if text.starts_with('-') && text.len() > 1 {
                    recursive |= text.contains(['r', 'R']);
                } else {
                    targets.push(text.to_string());
                }
            }
            (recursive, targets)
        }
    };
    if !recursive {
        return None;
    }
    if let Some(why) = targets.iter().find_map(|t| catastrophic_path(t, cwd, home)) {
        return Some(why);
    }
    // What the floor cannot evaluate is judged by what it could reach.
    args.iter()
        .filter(|w| w.dynamic || w.substitution)
        .find_map(|w| expansion_reach(&w.text, cwd, home))
}

/// Why the deleting target `text`, holding expansions that are not known
/// before it runs (`$X`, `${X:-/}`, `${PWD%%/*}`, `$(dirname ~)`,
/// backticks), could be the root, the home directory, a standard system
/// directory or everything in one of them: each unknown expansion is
/// tried as empty and as `/` (`$HOME`, `$PWD` and `$OLDPWD` are kept for
/// [`catastrophic_path`] to resolve). `rm -rf "$TMPDIR/build"` cannot be
/// any of these; `rm -rf "$X"` and `rm -rf /$X/*` can.
pub(crate) fn expansion_reach(text: &str, cwd: Option<&str>, home: Option<&str>) -> Option<String> {
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    let bytes = text.as_bytes();
    let (mut i, mut literal_start) = (0, 0);
    while i < bytes.len() {
        let end = match bytes[i] {
            b'`' => text[i + 1..].find('`').map_or(text.len(), |e| i + 2 + e),
            b'$' => match bytes.get(i + 1) {
                Some(open @ (b'{' | b'(')) => {
                    let close = if *open == b'{' { b'}' } else { b')' };
                    let mut depth = 0usize;
                    let mut j = i + 1;
                    while j < bytes.len() {
                        if bytes[j] == *open {
                            depth += 1;
                        } else if bytes[j] == close {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        j += 1;
                    }
                    (j + 1).min(text.len())
                }
                Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                    let mut j = i + 1;
                    while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_')
                    {
                        j += 1;
                    }
                    j
                }
                Some(_) => i + 2,
                None => i + 1,
            },
            _ => {
                i += 1;
                continue;
            }
        };
        let token = match &text[i..end] {
            "$(pwd)" | "`pwd`" | "$(pwd -P)" | "$(pwd -L)" => "$PWD",
            other => other,
        };
        if token == "$PWD" && &text[i..end] != "$PWD" {
            pieces.push((false, &text[literal_start..i]));
            pieces.push((false, "$PWD"));
            literal_start = end;
            i = end;
            continue;
        }
        let known = matches!(
            token,
            "$HOME" | "${HOME}" | "$PWD" | "${PWD}" | "$OLDPWD" | "${OLDPWD}"
        );
        if !known {
            pieces.push((false, &text[literal_start..i]));
            pieces.push((true, token));
            literal_start = end;
        }
        i = end;
    }
    if pieces.is_empty() {
        return None;
    }
    pieces.push((false, &text[literal_start..]));
    ["", "/"].iter().find_map(|stand_in| {
        let candidate: String = pieces
            .iter()
            .map(|(unknown, piece)| if *unknown { *stand_in } else { piece })
            .collect();
        if candidate.is_empty() {
            return None;
        }
        let why = catastrophic_path(&candidate, cwd, home)?;
        // A root child reached by text alone must be a standard one
        // (`$X/build` could be `/build`, which is no system directory).
        let absolute = normalize_path(&candidate);
        let standard = match absolute.strip_prefix('/') {
            Some(name) if !name.is_empty() && !name.contains('/') && !is_glob_only(name) => {
                matches!(
                    name,
                    "bin"
                        | "boot"
                        | "dev"
                        | "etc"
                        | "home"
                        | "lib"
                        | "lib32"
                        | "lib64"
                        | "media"
                        | "mnt"
                        | "opt"
                        | "proc"
                        | "root"
                        | "run"
                        | "sbin"
                        | "srv"
                        | "sys"
                        | "tmp"
                        | "usr"
                        | "var"
                        | "snap"
                )
            }
            _ => true,
        };
        standard.then(|| {
            format!(
                "matches a catastrophic pattern: `{text}` holds an expansion the floor cannot \
                 evaluate, and it could be `{candidate}`: {}",
                why.trim_start_matches("matches a catastrophic pattern: ")
            )
        })
    })
}

/// Directories whose loss breaks the machine: the root's children (`/etc`,
/// `/usr`, `/home`, `/tmp`, …), the standard directories under `/usr` and
/// `/usr/local` (`/usr/bin`, `/usr/lib`), and `/var/lib`. `path` is
/// absolute and normalised.
pub(crate) fn is_system_dir(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [_] => true,
        ["usr", _] | ["var", "lib"] => true,
        ["usr", "local", name] => matches!(
            *name,
            "bin" | "sbin" | "lib" | "lib64" | "include" | "share" | "etc"
        ),
        _ => false,
    }
}

/// Why deleting (or recursively changing) the absolute path `target`, or
/// everything a glob in its last component matches, is catastrophic.
pub(crate) fn catastrophic_dir(absolute: &str, home: Option<&str>) -> Option<String> {
    if absolute == "/" {
        return Some("matches a catastrophic pattern: rm -rf /".to_string());
    }
    let (parent, last) = absolute.rsplit_once('/').unwrap_or(("", absolute));
    let parent = if parent.is_empty() { "/" } else { parent };
    if parent == "/" && is_glob_only(last) {
        return Some("matches a catastrophic pattern: rm -rf /*".to_string());
    }
    if let Some(home) = home {
        if absolute == home {
            return Some(
                "matches a catastrophic pattern: rm -rf ~ (the home directory)".to_string(),
            );
        }
        if parent == home && is_glob_only(last) {
            return Some("matches a catastrophic pattern: rm -rf ~/*".to_string());
        }
    }
    // Emptying a temporary directory is routine; removing it is not.
    if is_system_dir(parent) && is_glob_only(last) && !matches!(parent, "/tmp" | "/var/tmp") {
        return Some(format!(
            "matches a catastrophic pattern: everything in the system directory `{parent}`"
        ));
    }
    if is_system_dir(absolute) {
        return Some(format!(
            "matches a catastrophic pattern: `{absolute}` is a system directory (losing it breaks the machine)"
        ));
    }
    None
}

/// Why writing the redirection target `path` (decoded) is catastrophic: a
/// disk, partition or memory device (`> /dev/sda`, `> /dev/nvme0n1`).
pub(crate) fn redirect_catastrophic(path: &str) -> Option<String> {
    // Writing a letter to the SysRq trigger crashes, reboots or powers off
    // the machine at once (`echo c > /proc/sysrq-trigger`).
    if normalize_path(path) == "/proc/sysrq-trigger" {
        return Some(
            "matches a catastrophic pattern: the SysRq trigger crashes or stops the machine"
                .to_string(),
        );
    }
    is_disk_device(path).then(|| {
        format!("matches a catastrophic pattern: a redirection overwrites the device `{path}`")
    })
}

/// True when `path` (as written) names a disk, a partition or memory by
/// the Linux device names (`/dev/sda1`, `/dev/nvme0n1p2`, `/dev/vda`,
/// `/dev/mmcblk0`, `/dev/md0`, `/dev/dm-0`, `/dev/disk/…`,
/// `/dev/mapper/…`, `/dev/mem`). Other devices (`/dev/kmsg`, terminals,
/// `/dev/tcp/…`) are not judged here.
pub(crate) fn is_disk_device(path: &str) -> bool {
    let path = normalize_path(path);
    let Some(name) = path.strip_prefix("/dev/") else {
        return false;
    };
    if name.starts_with("disk/") || name.starts_with("mapper/") {
        return true;
    }
    if matches!(name, "mem" | "kmem" | "port") {
        return true;
    }
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "md", "dm-", "loop", "nbd", "sr",
    ]
    .iter()
    .any(|prefix| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            let lettered = matches!(*prefix, "sd" | "hd" | "vd" | "xvd");
            rest.chars().all(|c| c.is_ascii_alphanumeric())
                && rest
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit() || (lettered && c.is_ascii_lowercase()))
        })
    })
}

fn catastrophic_path(text: &str, cwd: Option<&str>, home: Option<&str>) -> Option<String> {
    // `~root` is root's home directory, `/root`, whoever runs the command.
    let text = match text.strip_prefix("~root") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/root{rest}"),
        _ => text.to_string(),
    };
    let text = text.as_str();
    // `$PWD`, `${PWD}` and `~+` are the working directory.
    match crate::program_rules::run_time_dir(text) {
        Some((crate::program_rules::RunTimeDir::Current, rest)) => {
            return match cwd {
                Some(cwd) => catastrophic_dir(&normalize_path(&format!("{cwd}/{rest}")), home),
                None => unknown_dir_reach(text, rest),
            };
        }
        // The previous directory (`~-`, `$OLDPWD`) is not tracked here.
        Some((crate::program_rules::RunTimeDir::Previous, rest)) => {
            return unknown_dir_reach(text, rest);
        }
        None => {}
    }
    // `~NAME` is another account's home directory, which the floor cannot
    // evaluate: system accounts' homes are system directories (`~daemon`
    // is `/usr/sbin`, `~bin` is `/bin`, `~sys` is `/dev`).
    if let Some(user) = text.strip_prefix('~') {
        let (name, rest) = user.split_at(user.find('/').unwrap_or(user.len()));
        if !name.is_empty() && name != "+" && name != "-" {
            return unknown_dir_reach(text, rest);
        }
    }
    // `${HOME:?}`, `${HOME:-/x}`, `${HOME%/}` all expand to the home
    // directory when it is set.
    let text = match text.strip_prefix("${HOME") {
        Some(rest) => match rest.find('}') {
            Some(end) => format!("$HOME{}", &rest[end + 1..]),
            None => text.to_string(),
        },
        None => text.to_string(),
    };
    let home_marked = ["~", "$HOME"].iter().find_map(|p| {
        text.strip_prefix(p)
            .filter(|r| r.is_empty() || r.starts_with('/'))
    });
    let absolute = match (home_marked, home) {
        (Some(rest), Some(home)) => normalize_path(&format!("{home}/{rest}")),
        (Some(rest), None) => {
            let rest = normalize_path(&format!("/{rest}"));
            return match rest.as_str() {
                "/" => Some("matches a catastrophic pattern: rm -rf ~".to_string()),
                r if is_glob_only(&r[1..]) => {
                    Some("matches a catastrophic pattern: rm -rf ~/*".to_string())
                }
                _ => None,
            };
        }
        (None, _) if text.starts_with('/') => normalize_path(&text),
        (None, _) if text.starts_with('$') || text.starts_with('~') => return None,
        (None, _) => match cwd {
            Some(cwd) => normalize_path(&format!("{cwd}/{text}")),
            // The working directory is not known (after `cd -`, `cd "$X"`,
            // `popd`): it could be `/`.
            None => return unknown_dir_reach(&text, &format!("/{text}")),
        },
    };
    catastrophic_dir(&absolute, home)
}

/// Why `text`, a directory the floor cannot evaluate followed by `rest`,
/// could be the root or everything in it: `rest` normalised below `/` is
/// `/` itself or only a glob (`*`, `.`, `..`, `./*`, `../..`).
fn unknown_dir_reach(text: &str, rest: &str) -> Option<String> {
    let reached = normalize_path(&format!("/{rest}"));
    let whole = reached == "/" || is_glob_only(reached.trim_start_matches('/'));
    whole.then(|| {
        format!(
            "matches a catastrophic pattern: `{text}` is in a directory the floor cannot \
             evaluate (another account's home, the previous or an unknown working directory), \
             and it could be `/`"
        )
    })
}

/// Device files that hold no data and may be written freely.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/stdin",
    "/dev/tty",
];

/// True when `path` (as written) is a device or other special file under
/// `/dev` that holds data (a disk, a partition, memory), or is only known
/// at run time under `/dev`.
fn is_data_device(path: &str) -> bool {
    let path = normalize_path(path);
    path.starts_with("/dev/")
        && !HARMLESS_DEVICES.contains(&path.as_str())
        && !crate::ws_path::is_descriptor(&path)
        && !path.starts_with("/dev/pts/")
        && !path.starts_with("/dev/shm/")
}

/// The catastrophic shapes of programs other than `rm`, on decoded words:
/// `dd of=DEVICE`, `shred DEVICE`, `mkfs*` / `wipefs` / `mkswap` of a
/// device, and a recursive `chmod` / `chown` / `chgrp` of the root, a
/// system directory or the home directory. `args` follow the program name.
pub(crate) fn program_catastrophic(
    program: &str,
    args: &[crate::shell_parse::Word],
    cwd: Option<&str>,
    home: Option<&str>,
) -> Option<String> {
    let texts = || args.iter().map(|w| w.text.as_str());
    match program {
        "dd" => texts()
            .filter_map(|t| t.strip_prefix("of="))
            .find(|t| is_data_device(t))
            .map(|t| format!("matches a catastrophic pattern: dd overwrites the device `{t}`")),
        "shred" => texts()
            .find(|t| is_data_device(t))
            .map(|t| format!("matches a catastrophic pattern: shred destroys the device `{t}`")),
        p if p.starts_with("mkfs") || matches!(p, "wipefs" | "mke2fs" | "mkswap" | "mkdosfs") => {
            texts().find(|t| is_data_device(t)).map(|t| {
                format!("matches a catastrophic pattern: {p} erases the file system on `{t}`")
            })
        }
        // Writing a disk through a copy: `tee DEVICE`, `cp FILE DEVICE`.
        "tee" => texts()
            .filter(|t| !t.starts_with('-'))
            .find(|t| is_disk_device(t))
            .map(|t| format!("matches a catastrophic pattern: tee overwrites the device `{t}`")),
        "cp" | "install" => texts()
            .rfind(|t| !t.starts_with('-'))
            .filter(|t| is_disk_device(t))
            .map(|t| {
                format!("matches a catastrophic pattern: {program} overwrites the device `{t}`")
            }),
        // Moving the root, a system directory or the home directory away
        // loses it as surely as deleting it. Every operand is judged as a
        // source (the destination of `mv DIR /` is not catastrophic, and
        // is never one of these shapes being moved).
        "mv" => {
            // `-t DIR` / `--target-directory DIR` name the destination; then
            // every operand is a source.
            let mut operands: Vec<&str> = Vec::new();
            let mut with_dir = false;
            let mut words = texts();
            while let Some(t) = words.next() {
                if t == "-t" || (t.starts_with("--t") && !t.contains('=')) {
                    with_dir = true;
                    words.next();
                } else if t.starts_with("-t") || t.starts_with("--t") {
                    with_dir = true;
                } else if !t.starts_with('-') {
                    operands.push(t);
                }
            }
            let sources = if with_dir {
                &operands[..]
            } else {
                &operands[..operands.len().saturating_sub(1)]
            };
            sources
                .iter()
                .find_map(|t| catastrophic_path(t, cwd, home))
                .map(|why| why.replace("rm -rf", "mv"))
        }
        // Tools that erase a disk's partition table, contents or
        // encryption header when given a disk device.
        "blkdiscard" | "sgdisk" | "sfdisk" | "parted" | "cryptsetup" => {
            let erases = match program {
                "blkdiscard" => true,
                "sgdisk" => texts()
                    .any(|t| matches!(t, "-Z" | "--zap-all" | "-z" | "--zap" | "-o" | "--clear")),
                "sfdisk" => texts().any(|t| t == "--delete" || t == "--wipe" || t == "-w"),
                "parted" => texts().any(|t| matches!(t, "mklabel" | "mktable" | "rm")),
                _ => texts().any(|t| matches!(t, "luksFormat" | "erase" | "luksErase")),
            };
            if !erases {
                return None;
            }
            texts()
                .find(|t| is_disk_device(t))
                .map(|t| format!("matches a catastrophic pattern: {program} erases the disk `{t}`"))
        }
        // `rsync --delete SRC DEST` empties DEST of everything SRC lacks;
        // `--remove-source-files` deletes what it sent.
        "rsync" => {
            let operands: Vec<&str> = texts().filter(|t| !t.starts_with('-')).collect();
            let removes_sources = texts().any(|t| {
                t.strip_prefix("--")
                    .is_some_and(|l| l.len() >= 5 && "remove-source-files".starts_with(l))
            });
            if removes_sources
                && let Some(why) = operands[..operands.len().saturating_sub(1)]
                    .iter()
                    .find_map(|t| catastrophic_path(t, cwd, home))
            {
                return Some(why.replace("rm -rf", "rsync --remove-source-files of"));
            }
            if !texts().any(|t| t.starts_with("--delete") || t == "--del") {
                return None;
            }
            operands
                .last()
                .and_then(|t| catastrophic_path(t, cwd, home))
                .map(|why| why.replace("rm -rf", "rsync --delete into"))
        }
        // Archivers that delete what they archived, compressors that
        // replace every file below a directory.
        "tar" => {
            let call = crate::archive_rules::parse_tar(args).ok().or_else(|| {
                // Options not understood: read leniently, so nothing
                // unknown hides a catastrophic input.
                texts()
                    .any(|t| {
                        t.strip_prefix("--")
                            .is_some_and(|l| l.len() >= 3 && "remove-files".starts_with(l))
                    })
                    .then(|| crate::archive_rules::TarCall {
                        mode: Some('c'),
                        archive: None,
                        dirs: Vec::new(),
                        inputs: args
                            .iter()
                            .filter(|w| !w.text.starts_with('-'))
                            .cloned()
                            .collect(),
                        remove_files: true,
                        to_stdout: false,
                        absolute: false,
                        lists: Vec::new(),
                    })
            })?;
            // Writing an archive over a disk destroys it as `dd of=` does.
            if matches!(call.mode, Some('c' | 'r' | 'u' | 'A'))
                && let Some(archive) = call.archive.as_ref().filter(|a| is_disk_device(&a.text))
            {
                return Some(format!(
                    "matches a catastrophic pattern: tar writes its archive over the device `{}`",
                    archive.text
                ));
            }
            if !call.remove_files {
                return None;
            }
            let cwd = match call.dirs.last() {
                Some(dir) if dir.text.starts_with('/') => Some(normalize_path(&dir.text)),
                Some(dir) => Some(normalize_path(&format!("{}/{}", cwd?, dir.text))),
                None => cwd.map(str::to_string),
            };
            call.inputs
                .iter()
                .find_map(|w| catastrophic_path(&w.text, cwd.as_deref(), home))
                .map(|why| why.replace("rm -rf", "tar --remove-files of"))
        }
        "zip" => {
            let call = crate::archive_rules::parse_zip(args).ok()?;
            if !call.moves {
                return None;
            }
            call.inputs
                .iter()
                .find_map(|w| catastrophic_path(&w.text, cwd, home))
                .map(|why| why.replace("rm -rf", "zip -m of"))
        }
        // `cargo clean` deletes its target directory, wherever it is named.
        "cargo" if args.first().is_some_and(|w| w.text == "clean") => {
            let mut words = texts().skip(1);
            let mut dirs = Vec::new();
            while let Some(t) = words.next() {
                if t == "--target-dir" {
                    dirs.extend(words.next());
                } else if let Some(dir) = t.strip_prefix("--target-dir=") {
                    dirs.push(dir);
                }
            }
            dirs.iter()
                .find_map(|t| catastrophic_path(t, cwd, home))
                .map(|why| why.replace("rm -rf", "cargo clean --target-dir"))
        }
        // `cmake -E rm -r`, `remove_directory` and `remove -r` delete.
        "cmake" => {
            let mut words = texts().skip_while(|t| *t != "-E").skip(1);
            let deletes = match words.next() {
                Some("remove_directory") => true,
                Some("rm" | "remove") => texts()
                    .any(|t| t.starts_with('-') && !t.starts_with("--") && t.contains(['r', 'R'])),
                _ => false,
            };
            if !deletes {
                return None;
            }
            words
                .filter(|t| !t.starts_with('-'))
                .find_map(|t| catastrophic_path(t, cwd, home))
                .map(|why| why.replace("rm -rf", "cmake -E of"))
        }
        "gzip" | "gunzip" | "pigz" | "unpigz" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" => {
            let call = crate::archive_rules::parse_compressor(program, args).ok()?;
            if !call.recursive || !call.deletes_inputs {
                return None;
            }
            call.operands
                .iter()
                .find_map(|w| catastrophic_path(&w.text, cwd, home))
                .map(|why| {
                    why.replace("rm -rf", &format!("{program} -r (replacing every file) of"))
                })
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = texts().any(|t| {
                t.strip_prefix("--")
                    .is_some_and(|l| l.len() >= 2 && "recursive".starts_with(l))
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains('R'))
            });
            if !recursive {
                return None;
            }
            let paths: Vec<&str> = if program == "chmod" {
                crate::program_rules::chmod_paths(args)
                    .into_iter()
                    .map(|w| w.text.as_str())
                    .collect()
            } else {
                texts().filter(|t| !t.starts_with('-')).skip(1).collect()
            };
            paths
                .into_iter()
                .find_map(|t| catastrophic_path(t, cwd, home))
                .map(|why| why.replace("rm -rf", &format!("{program} -R")))
        }
        _ => None,
    }
}

/// True for a path component made only of glob characters that matches
/// every name (`*`, `?*`, `.*`, `[!.]*`-like shapes).
fn is_glob_only(component: &str) -> bool {
    component.contains(['*', '?'])
        && component
            .chars()
            .all(|c| matches!(c, '*' | '?' | '.' | '[' | ']' | '!' | '^'))
}

#[cfg(test)]
mod tests {
    use super::catastrophic_reason;

    #[test]
    fn dot_spellings_of_the_root_and_home_are_the_same_target() {
        for raw in [
            "rm -rf /.",
            "rm -rf /usr/..",
            "rm -rf /./",
            "rm -rf ~/.",
            "rm -rf $HOME/x/..",
            "rm -rf /../..",
            "rm -rf //usr/../../",
            "rm -rf ~/..",
            "rm -rf ~//./",
            "rm -rf $HOME/../..",
            // The kernel's `/proc/PID/root` links lead back to `/`.
            "rm -rf /proc/self/root",
            "rm -rf /proc/1/root/./",
        ] {
            assert!(catastrophic_reason(raw).is_some(), "{raw}");
        }
        for raw in [
            "rm -rf /tmp/x",
            "rm -rf ./build",
            "rm -rf ~/project/target",
            "rm -rf /usr/../tmp",
            "rm -rf ~/../tmp",
            "rm -rf ~foo",
        ] {
            assert!(catastrophic_reason(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn finds_the_five_literals_in_many_spellings() {
        for raw in [
            "rm -rf /",
            "rm -rf /*",
            "rm -rf ~",
            "rm -rf $HOME",
            "rm -rf ${HOME}",
            "rm -fr /",
            "rm -r -f /",
            "rm   -rf   /",
            "rm --recursive --force /",
            "rm -rf -- /",
            "rm -rf / --no-preserve-root",
            "/bin/rm -Rf //",
            "\\rm -rf ~/",
            "rm -rf \"$HOME\"",
            "bash -c 'rm -rf /'",
            "sh -c \"bash -c \\\"rm -rf /*\\\"\"",
            "echo $(rm -rf ~)",
            "cd /tmp && sudo rm -rf /",
            "bash <<EOF\nrm -rf $HOME\nEOF",
            ":(){ :|:& };:",
            ":() { : | : & } ; :",
            "bomb(){ bomb|bomb& };bomb",
        ] {
            assert!(catastrophic_reason(raw).is_some(), "{raw}");
        }
    }

    #[test]
    fn leaves_ordinary_deletions_and_text_alone() {
        for raw in [
            "rm -rf ./build",
            "rm -rf /tmp/x",
            "rm -f /",
            "rm -r ~/old",
            "rm -rf ~/project/target",
            "rm -rf $HOME/cache",
            "git commit -m 'rm -rf is scary'",
            "rm x; ls /",
            "f(){ echo hi; }; f",
            "ls -rf /",
        ] {
            assert!(catastrophic_reason(raw).is_none(), "{raw}");
        }
    }
}
