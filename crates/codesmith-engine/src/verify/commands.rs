//! Which shell commands count as verification: a test class and a build class, matched on
//! the leading words of each simple command.
//!
//! A command line is split into simple commands (`&&`, `||`, `;`, `|`, and
//! nested `bash -c`), each judged on its own, so `cd crate && cargo test`
//! qualifies. Leading `VAR=value` assignments and wrappers (`env`, `time`,
//! `nice`, …) are stripped first. Bare `make` and `cargo clippy` are
//! deliberately absent: the first also means `make install`/`make clean`,
//! the second is a lint, not a build.
//!
//! Besides the named test runners, projects test with ad-hoc entry points:
//! a script whose name marks it as a test (`test_*.py`, `*_test.go`,
//! `run_tests.sh`, `scripts/test.sh`, `test.js`, anything under `tests/`),
//! run by an interpreter (`python3 test_calc.py`, `bash run_tests.sh`,
//! `node test.js`) or directly (`./run_tests.sh`), and `make`/`just`/`task`
//! targets named `test`, `tests`, `check` or `test-…` (see
//! [`is_test_script`] and [`is_test_target`]). They count as tests.

use serde::Serialize;

/// The kind of verification a command performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandClass {
    /// Runs a test suite (`cargo test`, `pytest`, …).
    Test,
    /// Builds or type-checks without running tests (`cargo build`, `tsc`, …).
    Build,
}

impl CommandClass {
    /// `test` or `build`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandClass::Test => "test",
            CommandClass::Build => "build",
        }
    }
}

/// Test-class prefixes, as program words after normalisation (the program
/// is reduced to its file name; `python3.12` to `python`).
pub const TEST_PREFIXES: &[&str] = &[
    "cargo test",
    "cargo nextest",
    "pytest",
    "py.test",
    "python -m pytest",
    "python -m unittest",
    "go test",
    "npm test",
    "npm run test",
    "pnpm test",
    "pnpm run test",
    "yarn test",
    "yarn run test",
    "bun test",
    "deno test",
    "npx jest",
    "jest",
    "npx vitest",
    "vitest",
    "mvn test",
    "mvn verify",
    "gradle test",
    "gradlew test",
    "dotnet test",
    "ctest",
    "make test",
    "make check",
    "tox",
    "nox",
    "rspec",
    "bundle exec rspec",
    "mix test",
    "swift test",
    "phpunit",
    "cabal test",
    "stack test",
    "zig build test",
    "bazel test",
    "meson test",
];

/// Build-class prefixes, normalised like [`TEST_PREFIXES`].
pub const BUILD_PREFIXES: &[&str] = &[
    "cargo build",
    "cargo check",
    "go build",
    "npm run build",
    "pnpm build",
    "pnpm run build",
    "yarn build",
    "yarn run build",
    "tsc",
    "mvn package",
    "mvn compile",
    "gradle build",
    "gradlew build",
    "dotnet build",
    "cmake --build",
    "make all",
    "ninja",
    "msbuild",
    "swift build",
    "zig build",
    "bazel build",
    "cabal build",
    "stack build",
    "mix compile",
];

/// The class of `command`, or `None` when no simple command in it is a
/// verification command. A test segment anywhere makes the whole line
/// `Test`; otherwise a build segment makes it `Build`.
pub fn classify(command: &str) -> Option<CommandClass> {
    let mut found = None;
    for argv in segments(command) {
        match class_of_argv(&argv) {
            Some(CommandClass::Test) => return Some(CommandClass::Test),
            Some(CommandClass::Build) => found = Some(CommandClass::Build),
            None => {}
        }
    }
    found
}

/// True when `command` starts something in the background (a lone `&`,
/// `nohup`, `setsid`, `disown`): such a command is never replayed, since a
/// replay would launch another detached process. Conservative: a `&` inside
/// quotes also counts.
pub fn is_background(command: &str) -> bool {
    let cleaned = command
        .replace("&&", " ")
        .replace(">&", " ")
        .replace("&>", " ")
        .replace("|&", " ");
    cleaned.contains('&')
        || command
            .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')'))
            .any(|w| matches!(w, "nohup" | "setsid" | "disown"))
}

/// The class of one simple command's words.
pub fn class_of_argv<S: AsRef<str>>(argv: &[S]) -> Option<CommandClass> {
    let words = normalized(argv);
    if words.is_empty() {
        return None;
    }
    if TEST_PREFIXES.iter().any(|p| starts_with(&words, p)) {
        return Some(CommandClass::Test);
    }
    if is_adhoc_test(argv, &words) {
        return Some(CommandClass::Test);
    }
    if BUILD_PREFIXES.iter().any(|p| starts_with(&words, p)) {
        return Some(CommandClass::Build);
    }
    None
}

/// Script interpreters whose first operand is the script they run.
const INTERPRETERS: &[&str] = &[
    "python", "node", "bash", "sh", "zsh", "dash", "ksh", "ruby", "perl", "php", "tsx", "ts-node",
    "deno", "bun", "pwsh", "lua", "Rscript", "julia",
];

/// Task runners whose operands are target names.
const TASK_RUNNERS: &[&str] = &["make", "gmake", "just", "task"];

/// Options of the interpreters and task runners that take a separate value,
/// so the value is not mistaken for the script or the target.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-f",
    "--file",
    "--directory",
    "--justfile",
    "--working-directory",
    "-d",
    "--dir",
    "-t",
    "--taskfile",
    "-I",
    "-o",
    "-W",
    "-X",
    "-r",
    "--require",
];

/// Extensions a test script may carry (an empty extension is a script too).
const SCRIPT_EXTENSIONS: &[&str] = &[
    "", "py", "sh", "bash", "zsh", "js", "mjs", "cjs", "ts", "mts", "rb", "pl", "t", "php", "go",
    "lua", "r", "jl", "ps1",
];

/// An ad-hoc test entry point: a test-named script run by an interpreter or
/// directly, or a task runner's test target. `raw` is the simple command as
/// typed (assignments included), `words` its normalised form.
fn is_adhoc_test<S: AsRef<str>>(raw: &[S], words: &[String]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    let operands = || operands(&words[1..]);
    if TASK_RUNNERS.contains(&program.as_str()) {
        return operands().any(|w| !w.contains('=') && is_test_target(w));
    }
    if INTERPRETERS.contains(&program.as_str()) {
        if program == "python"
            && let Some(i) = words.iter().position(|w| w == "-m")
        {
            return words.get(i + 1).is_some_and(|m| is_test_module(m));
        }
        return operands()
            .find(|w| !matches!(*w, "run" | "exec"))
            .is_some_and(is_test_script);
    }
    // Run directly: the program word as typed, so `tests/run.sh` keeps its
    // directory.
    raw.iter()
        .map(AsRef::as_ref)
        .find(|w| !is_assignment(w))
        .is_some_and(is_test_script)
}

/// The words of `args` that are not options nor option values.
fn operands(args: &[String]) -> impl Iterator<Item = &str> {
    let mut skip_next = false;
    args.iter().map(String::as_str).filter(move |w| {
        if std::mem::take(&mut skip_next) {
            return false;
        }
        if w.starts_with('-') {
            skip_next = OPTIONS_WITH_VALUE.contains(w);
            return false;
        }
        true
    })
}

/// True for a task-runner target that runs tests or checks: `test`,
/// `tests`, `check`, `unittest`, and `test-…`/`test_…`/`check-…` variants.
pub fn is_test_target(target: &str) -> bool {
    matches!(
        target,
        "test" | "tests" | "check" | "unittest" | "unittests"
    ) || ["test-", "test_", "tests-", "check-", "check_"]
        .iter()
        .any(|p| target.starts_with(p))
}

/// True when `path` names a test script: a file name like `test_*.py`,
/// `*_test.go`, `*.test.js`, `run_tests.sh`, `test.js` or Perl's `*.t`, or any script
/// under a `tests/`, `test/`, `spec/` or `__tests__/` directory. A bare word
/// such as `test` (the shell builtin) is not a script: without a directory
/// it needs an extension.
pub fn is_test_script(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let Some(base) = parts.pop() else {
        return false;
    };
    let (stem, ext) = match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, ext),
        _ => (base, ""),
    };
    if !SCRIPT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
        return false;
    }
    if ext.is_empty() && !path.contains('/') {
        return false;
    }
    let stem = stem.to_ascii_lowercase();
    let named = ext == "t"
        || matches!(
            stem.as_str(),
            "test" | "tests" | "run_tests" | "run-tests" | "runtests" | "run_test" | "test_all"
        )
        || stem.starts_with("test_")
        || stem.starts_with("test-")
        || stem.ends_with("_test")
        || stem.ends_with("-test")
        || stem.ends_with("_tests")
        || stem.ends_with(".test")
        || stem.ends_with(".spec");
    named
        || parts
            .iter()
            .any(|d| matches!(*d, "tests" | "test" | "spec" | "__tests__"))
}

/// True for a Python module run with `-m` that is a test: `test_x`,
/// `tests.test_parser`, `tests`.
fn is_test_module(module: &str) -> bool {
    let mut parts = module.split('.');
    let first = parts.next().unwrap_or_default();
    let last = module.rsplit('.').next().unwrap_or_default();
    matches!(first, "tests" | "test")
        || last.starts_with("test_")
        || last.ends_with("_test")
        || last == "runtests"
}

/// The simple commands of `command` as word lists: the command policy's
/// parse when it succeeds, else a plain split on `&&`, `||`, `;` and `|`.
fn segments(command: &str) -> Vec<Vec<String>> {
    let parsed = codesmith_policy::classify_command(command, "/");
    if parsed.parsed && !parsed.segments.is_empty() {
        return parsed.segments.into_iter().map(|s| s.argv).collect();
    }
    command
        .split(['&', '|', ';', '\n'])
        .map(|seg| seg.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Drops leading `VAR=value` words, reduces the program to its file name
/// and versioned Python names to `python`.
fn normalized<S: AsRef<str>>(argv: &[S]) -> Vec<String> {
    let mut words: Vec<String> = argv
        .iter()
        .map(|w| w.as_ref().to_string())
        .skip_while(|w| is_assignment(w))
        .collect();
    if let Some(first) = words.first_mut() {
        let base = first.rsplit('/').next().unwrap_or(first).to_string();
        *first = if is_python(&base) {
            "python".to_string()
        } else {
            base
        };
    }
    words
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn is_python(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

fn starts_with(words: &[String], prefix: &str) -> bool {
    let mut n = 0;
    for (i, p) in prefix.split(' ').enumerate() {
        if words.get(i).map(String::as_str) != Some(p) {
            return false;
        }
        n = i + 1;
    }
    n > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_are_large_enough() {
        assert!(TEST_PREFIXES.len() >= 20, "{}", TEST_PREFIXES.len());
        assert!(BUILD_PREFIXES.len() >= 14, "{}", BUILD_PREFIXES.len());
    }

    #[test]
    fn test_commands_are_recognised() {
        for cmd in [
            "cargo test",
            "cargo test -p core -- --nocapture",
            "cargo nextest run",
            "pytest -q tests/",
            "python -m pytest",
            "python3 -m pytest -x",
            "/usr/bin/python3.12 -m unittest discover",
            "go test ./...",
            "npm test",
            "pnpm test",
            "yarn test",
            "npx jest src",
            "npx vitest run",
            "mvn test",
            "gradle test",
            "./gradlew test",
            "dotnet test",
            "ctest --output-on-failure",
            "make test",
            "tox -e py311",
            "rspec spec/",
            "bundle exec rspec",
            "mix test",
            "swift test",
            "vendor/bin/phpunit",
            "zig build test",
        ] {
            assert_eq!(classify(cmd), Some(CommandClass::Test), "{cmd}");
        }
    }

    #[test]
    fn build_commands_are_recognised() {
        for cmd in [
            "cargo build --release",
            "cargo check --all-targets",
            "go build ./...",
            "npm run build",
            "tsc --noEmit",
            "mvn package -DskipTests",
            "gradle build",
            "dotnet build",
            "cmake --build build",
            "make all",
            "ninja -C out",
            "swift build",
            "zig build",
        ] {
            assert_eq!(classify(cmd), Some(CommandClass::Build), "{cmd}");
        }
    }

    #[test]
    fn other_commands_are_not_verification() {
        for cmd in [
            "make",
            "make install",
            "make clean",
            "cargo clippy --all-targets",
            "cargo fmt",
            "ls -la",
            "echo cargo test",
            "python3 -c 'print(1)'",
            "python3 calc.py",
            "python3 -m http.server",
            "node server.js",
            "bash build.sh",
            "./configure",
            "test -f Cargo.toml",
            "[ -f x ]",
            "cat tests/test_calc.py",
            "vim test_calc.py",
            "make -C test all",
            "just build",
            "task lint",
            "git status",
            "npm install",
            "",
        ] {
            assert_eq!(classify(cmd), None, "{cmd:?}");
        }
    }

    #[test]
    fn compound_commands_are_judged_by_segment() {
        assert_eq!(
            classify("cd crates/core && cargo test"),
            Some(CommandClass::Test)
        );
        assert_eq!(
            classify("cargo build; cargo test 2>&1 | tail -50"),
            Some(CommandClass::Test)
        );
        assert_eq!(
            classify("cargo fmt && cargo check"),
            Some(CommandClass::Build)
        );
        assert_eq!(
            classify("bash -c 'go test ./...'"),
            Some(CommandClass::Test)
        );
    }

    #[test]
    fn ad_hoc_test_entry_points_are_tests() {
        for cmd in [
            "python3 test_calc.py",
            "python test_calc.py -v",
            "/usr/bin/python3.11 -u tests/check_parser.py",
            "python3 -m tests.test_parser",
            "python3 -m test_calc",
            "./run_tests.sh",
            "bash run_tests.sh",
            "sh -e scripts/test.sh",
            "scripts/test.sh --fast",
            "./test_calc.py",
            "tests/run.sh",
            "node test.js",
            "node tests/parser.js",
            "node src/parse.test.js",
            "deno run -A test.ts",
            "bun run app.spec.ts",
            "ruby test/test_parser.rb",
            "perl t/basic.t",
            "make -C crates/core test",
            "make -j4 check",
            "make test-unit",
            "make VERBOSE=1 tests",
            "just test",
            "task check",
            "cd calc && python3 test_calc.py 2>&1 | tail -20",
            "CI=1 ./run_tests.sh",
        ] {
            assert_eq!(classify(cmd), Some(CommandClass::Test), "{cmd}");
        }
    }

    #[test]
    fn test_script_names() {
        for path in [
            "test_calc.py",
            "calc_test.go",
            "run_tests.sh",
            "scripts/test.sh",
            "test.js",
            "tests/anything.py",
            "a.spec.ts",
            "./test",
        ] {
            assert!(is_test_script(path), "{path}");
        }
        for path in [
            "test",
            "calc.py",
            "testing.py",
            "contest.py",
            "tests.txt",
            "tests/data.json",
            "latest.sh",
        ] {
            assert!(!is_test_script(path), "{path}");
        }
    }

    #[test]
    fn background_commands_are_recognised() {
        for cmd in [
            "cargo test &",
            "nohup cargo test > log 2>&1",
            "cargo test & sleep 1",
            "setsid make test",
        ] {
            assert!(is_background(cmd), "{cmd}");
        }
        for cmd in [
            "cargo test 2>&1 | tail",
            "cd a && cargo test",
            "make test &> log",
            "cargo test |& tee log",
        ] {
            assert!(!is_background(cmd), "{cmd}");
        }
    }

    #[test]
    fn leading_assignments_are_stripped() {
        assert_eq!(
            classify("RUST_BACKTRACE=1 cargo test"),
            Some(CommandClass::Test)
        );
        assert_eq!(
            classify("CI=1 NODE_ENV=test npm test"),
            Some(CommandClass::Test)
        );
        assert_eq!(
            class_of_argv(&["FOO=bar", "cargo", "build"]),
            Some(CommandClass::Build)
        );
    }
}
