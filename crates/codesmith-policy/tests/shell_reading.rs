//! The exec policy reads a line the way bash reads it: nested backticks, here-documents
//! whose lines bash joins, words the grammar files under a redirection, and shell options
//! that change what later words mean. Each kind once let any program run unasked in every
//! approval mode; here each is judged as what bash runs, or asks. Paths are judged with
//! no file system (`LexicalPaths`), home `/root`.

#![allow(clippy::unwrap_used)]

use codesmith_policy::ApprovalMode::{self, Auto, AutoEdit, ReadOnly, Suggest};
use codesmith_policy::Decision::{self, Allow, Ask, Deny};
use codesmith_policy::SafetyLevel::{Ask as Asks, Dangerous, Safe, WorkspaceSafe};
use codesmith_policy::{RuleSource, Rules, classify_command_with, decide_with, shell_input};

use crate::common::{WS, asks, check, facts, reason};

/// The argv of every simple command the policy found on `command`.
fn argvs(command: &str) -> Vec<Vec<String>> {
    classify_command_with(command, WS, &facts())
        .segments
        .into_iter()
        .map(|s| s.argv)
        .collect()
}

/// Asserts that the policy found a command whose argv is `argv` on `command`.
fn finds(command: &str, argv: &[&str]) {
    let found = argvs(command);
    assert!(
        found.iter().any(|a| a == argv),
        "{command:?}: no segment {argv:?} among {found:?}"
    );
}

/// The decision for `command` under `rules` in `mode` (no file system).
fn decision(command: &str, rules: &Rules, mode: ApprovalMode) -> (Decision, String) {
    let eval = decide_with(command, WS, rules, mode, &facts());
    (eval.decision, eval.reason)
}

/// Asserts `command` is not allowed in read-only and suggest mode.
fn never_allowed_read_only(command: &str) {
    for mode in [ReadOnly, Suggest] {
        let (got, why) = decision(command, &Rules::new(), mode);
        assert_ne!(got, Allow, "{command:?} in {mode:?}: {why}");
    }
}

fn deny_rules(patterns: &[&str]) -> Rules {
    let mut rules = Rules::new();
    for pattern in patterns {
        rules
            .add_toml(
                &format!("[[rule]]\npattern = {pattern:?}\ndecision = \"deny\"\n"),
                RuleSource::User,
            )
            .unwrap();
    }
    rules
}

#[test]
fn a_backtick_body_is_judged_as_the_script_bash_runs() {
    // Inside backticks bash removes the `\` before `` ` ``, `$` and `\`: `` \` `` opens a
    // nested substitution, which runs.
    for (command, hidden) in [
        (
            r"echo `echo \`cp /etc/hostname PWN\``",
            &["cp", "/etc/hostname", "PWN"][..],
        ),
        (r"echo `echo \`touch PWN\``", &["touch", "PWN"]),
        (r#"echo "`echo \`touch PWN\``""#, &["touch", "PWN"]),
        (r#"cat <<< "`echo \`touch PWN\``""#, &["touch", "PWN"]),
        (r"x=`echo \`touch PWN\``", &["touch", "PWN"]),
        (
            r"case `echo \`touch PWN\`` in *) ;; esac",
            &["touch", "PWN"],
        ),
        (
            r"for f in `echo \`touch PWN\``; do :; done",
            &["touch", "PWN"],
        ),
        (r"echo `echo $(echo \`touch PWN\`)`", &["touch", "PWN"]),
        (r"echo `echo \`echo \\\`touch PWN\\\`\``", &["touch", "PWN"]),
    ] {
        finds(command, hidden);
        never_allowed_read_only(command);
    }
    check(&[
        (r"echo `echo \`rm -rf ~\``", Dangerous),
        (r"echo `echo \`touch PWN\``", WorkspaceSafe),
        // `\$` is an expansion inside backticks, `\\\`` an escaped backtick: only prints.
        (r"echo `echo \$HOME`", Safe),
        (r"echo `echo \\\`echo hi\\\``", Safe),
        ("echo `pwd`", Safe),
        // Inside `$(…)` a `\`` is a literal backtick, as in bash.
        (r"echo $(echo \`touch PWN\`)", Safe),
    ]);
    finds(r"echo `echo \$HOME`", &["echo", "$HOME"]);
    finds(r#"echo "`echo \"a b\"`""#, &["echo", "a b"]);
}

#[test]
fn backticks_bash_pairs_differently_from_the_grammar_leave_the_line_unparsed() {
    // A quote does not protect a backtick inside backticks: bash runs `id` here,
    // the grammar reads one `echo` of a quoted string.
    for command in [
        "echo `echo '``id``'`",
        "echo `echo '`'` x",
        "echo `echo \"``id``\"`",
    ] {
        asks(&[command]);
        never_allowed_read_only(command);
        assert!(
            !classify_command_with(command, WS, &facts()).parsed,
            "{command:?}"
        );
    }
}

#[test]
fn a_here_document_ends_where_bash_ends_it() {
    // Bash joins `tr\` and `ue` into the delimiter `true`, ends the here-document there
    // and runs the lines after it.
    let attack = "cat <<true\ntr\\\nue\nid > PWN_hd_id\ntouch PWN_hd\ntrue\n";
    finds(attack, &["id"]);
    finds(attack, &["touch", "PWN_hd"]);
    never_allowed_read_only(attack);
    for command in [
        "cat <<-true\n\ttr\\\nue\ntouch PWN\ntrue\n",
        "cat <<EOF\nE\\\nO\\\nF\ntouch PWN\nEOF\n",
        "x=$(cat <<true\ntr\\\nue\ntouch PWN\ntrue\n)",
    ] {
        finds(command, &["touch", "PWN"]);
        never_allowed_read_only(command);
    }
    // A line bash does not end the here-document with, though the grammar does (trailing
    // space, leading space or tab without `<<-`, a joined line): the readings differ, so
    // the line asks, whatever the grammar made of the rest.
    for command in [
        "cat <<EOF\nEOF \ncat <<'X'\nEOF\ntouch PWN\nX\n",
        "cat <<EOF\n\tEOF\ncat <<'X'\nEOF\ntouch PWN\nX\n",
        "cat <<EOF\n EOF\ncat <<'X'\nEOF\ntouch PWN\nX\n",
        "cat <<tr\"u\"e\nx\ntrue\ntouch PWN\n",
        "cat <<A <<B\na\nA\nb\nB\ntouch PWN\n",
        "cat <<EOF; echo \"a\nb\"\nbody\nEOF\n",
    ] {
        asks(&[command]);
        never_allowed_read_only(command);
    }
    // Where both read the same, nothing changes: a `\` line end in a body that does not
    // form the delimiter, an even run of `\`, a quoted delimiter (no joins), `<<-` tabs.
    check(&[
        (
            "cat <<EOF > run.sh\ncargo build \\\n  --release\nEOF\n",
            WorkspaceSafe,
        ),
        ("cat <<true\ntr\\\\\nue\necho x\ntrue\n", Safe),
        ("cat <<'true'\ntr\\\nue\ntrue\n", Safe),
        ("cat <<true\nfoo\\\ntrue\necho x\ntrue\n", Safe),
        ("cat <<-EOF\n\tx\n\tEOF\n", Safe),
        ("cat <<EOF | grep x\nhi\nEOF\n", Safe),
    ]);
    // `foo\` joins the next line, so `true` there is body text and not the end.
    assert_eq!(argvs("cat <<true\nfoo\\\ntrue\necho x\ntrue\n"), [["cat"]]);
}

#[test]
fn typed_input_ends_a_here_document_where_bash_does() {
    // A shell in a terminal runs `cat` once the joined line `true` arrives.
    let input = shell_input("cat <<true\ntr\\\nue\nid > PWN\n");
    assert_eq!(input.complete, "cat <<true\ntr\\\nue\nid > PWN\n");
    assert!(input.open.is_empty());
    let first = shell_input("cat <<true\ntr\\\nue\n");
    assert_eq!(first.complete, "cat <<true\ntr\\\nue\n");
    // `foo\` + `true` is `footrue`: the shell still waits.
    let waits = shell_input("cat <<true\nfoo\\\ntrue\n");
    assert!(waits.complete.is_empty(), "{waits:?}");
    assert!(waits.why.is_some());
    let waits = shell_input("cat <<EOF\nx\nEOF \nid\n");
    assert!(waits.complete.is_empty(), "{waits:?}");
}

#[test]
fn every_word_after_a_redirection_reaches_argv() {
    for (command, argv) in [
        ("tee {fd}</dev/null ~/.bashrc", &["tee", "~/.bashrc"][..]),
        ("tee </dev/null ~/.bashrc", &["tee", "~/.bashrc"]),
        ("chmod {fd}</dev/null 777 ~", &["chmod", "777", "~"]),
        ("cp {fd}</dev/null .env /tmp/x", &["cp", ".env", "/tmp/x"]),
        ("grep -r {fd}</dev/null KEY ~", &["grep", "-r", "KEY", "~"]),
        ("cat {fd}</dev/null .env", &["cat", ".env"]),
        ("cat 2>&1 .env", &["cat", ".env"]),
        ("cat {fd}>&- .env", &["cat", ".env"]),
        ("cat {out}>>log .env", &["cat", ".env"]),
        ("cat 3<<<x .env", &["cat", ".env"]),
        ("cat {fd}<<<x .env", &["cat", ".env"]),
        (
            "echo x | tee {fd}</dev/null ~/.bashrc",
            &["tee", "~/.bashrc"],
        ),
        ("a | b >/dev/null ~/.bashrc", &["b", "~/.bashrc"]),
        ("cat <<EOF >/dev/null .env\nx\nEOF\n", &["cat", ".env"]),
    ] {
        finds(command, argv);
        never_allowed_read_only(command);
    }
    finds("ls >/dev/null x y 2>&1 z", &["ls", "x", "y", "z"]);
    check(&[
        ("ls >/dev/null x y 2>&1 z", Safe),
        ("echo {a,b}>x y", WorkspaceSafe),
        ("cat {fd}</dev/null README.md", Safe),
    ]);
    // A descriptor stored in an array element evaluates its subscript; bash refuses words
    // after a compound command's redirection.
    asks(&[
        "cat {a[$(id)]}</dev/null x",
        "{ ls; } >/dev/null ~/.ssh",
        "{ ls; } >/dev/null x",
    ]);
    assert!(reason("{ ls; } >/dev/null x").contains("compound command"));
}

#[test]
fn a_descriptor_redirection_does_not_hide_a_denied_command() {
    let rules = deny_rules(&["git push", "touch"]);
    for command in [
        "git {fd}</dev/null push r.git HEAD:refs/heads/pwnfd",
        "git </dev/null push r.git",
        "env {fd}</dev/null touch PWN",
        "touch {fd}</dev/null PWN",
    ] {
        for mode in [Auto, AutoEdit] {
            let (got, why) = decision(command, &rules, mode);
            assert_eq!(got, Deny, "{command:?} in {mode:?}: {why}");
        }
    }
}

#[test]
fn set_allows_only_options_that_leave_later_commands_as_judged() {
    let attack = "set -k; git diff GIT_EXTERNAL_DIFF='id > PWN_id;:'";
    for mode in [ReadOnly, Suggest, AutoEdit] {
        for command in [attack, "set -k; echo GIT_EXTERNAL_DIFF=x"] {
            let (got, why) = decision(command, &Rules::new(), mode);
            assert_ne!(got, Allow, "{command:?} in {mode:?}: {why}");
            assert!(why.contains("keyword"), "{why}");
        }
    }
    let (got, _) = decision("set -k; echo A=b", &Rules::new(), Suggest);
    assert_eq!(got, Ask);
    for command in [
        "set -k",
        "set -o keyword",
        "set -ek",
        "set -e -o keyword",
        "set -a",
        "set -o allexport",
        "set +B",
        "set +o braceexpand",
        "set -H",
        "set -o histexpand",
        "set -P",
        "set -o physical",
        "set -o posix",
        "set +o posix",
        "set -p",
        "set +o interactive-comments",
        "set -o frobnicate",
        "set -o $OPT",
        "set -q",
        "set",
        "set $OPTS",
        "set \"$@\"",
        "set -e $X",
    ] {
        asks(&[command]);
    }
    assert!(reason("set -o posix").contains("posix"));
    assert!(reason("set +B").contains("braceexpand"));
    check(&[
        ("set -e", Safe),
        ("set -euo pipefail", Safe),
        ("set -Eeuxo pipefail", Safe),
        ("set +x", Safe),
        ("set +a", Safe),
        ("set +H", Safe),
        ("set -B", Safe),
        ("set -f", Safe),
        ("set -o", Safe),
        ("set +o", Safe),
        ("set -o vi", Safe),
        ("set -- a b", Safe),
        ("set -e -- -k", Safe),
        ("set -- \"$@\"", Safe),
    ]);
    // A shell started with such an option reads its script the same way.
    for command in [
        "bash -k -c \"git diff GIT_EXTERNAL_DIFF='id > PWN;:'\"",
        "sh -k -c 'echo A=b'",
        "bash -o keyword -c 'echo A=b'",
        "bash -ek -c 'echo A=b'",
        "bash -O expand_aliases -c 'echo a'",
        "bash --posix -c 'echo a'",
        "bash +B -c 'echo {a,b}'",
    ] {
        asks(&[command]);
        never_allowed_read_only(command);
    }
    check(&[
        ("bash -k -c 'rm -rf /'", Dangerous),
        ("bash -c 'echo A=b'", Safe),
        ("bash -e -c 'echo a'", Safe),
        ("bash -euo pipefail -c 'echo a'", Safe),
        ("bash -c 'echo a' -k", Safe),
    ]);
    // `shopt` changes how later lines are read (aliases, extended globs, …): it asks.
    asks(&[
        "shopt -s expand_aliases",
        "shopt -s extdebug",
        "shopt -s sourcepath",
        "shopt -u interactive_comments",
    ]);
    assert_eq!(
        classify_command_with("set -k", WS, &facts()).level,
        Asks,
        "set -k"
    );
}

#[test]
fn every_redirection_is_judged_whatever_it_is_attached_to() {
    // A test, a declaration, a `case` or a group opens its redirections' files too.
    for command in [
        "[[ -f x ]] > ~/.bashrc",
        "[ -f x ] > ~/.bashrc",
        "case x in esac > ~/.bashrc",
        "{ [ -f x ]; } > ~/.bashrc",
        "unset A > ~/.bashrc",
        "export LANG=C > ~/.bashrc",
        "echo a | [ -f x ] > ~/.bashrc",
        // In `[ … ]` an unescaped `>` is a redirection, not a comparison.
        "[ x > ~/.bashrc ]",
        "[ \"$a\" < /etc/shadow ]",
    ] {
        asks(&[command]);
        never_allowed_read_only(command);
    }
    check(&[
        ("[[ -f x ]] > out.txt", WorkspaceSafe),
        ("[[ x > y ]]", Safe),
        ("while read l; do echo \"$l\"; done < in.txt", Safe),
        ("if [ -f x ]; then echo y; fi > /dev/null", Safe),
        ("cat x | sort | uniq -c > out.txt 2>&1", WorkspaceSafe),
    ]);
}

/// Asserts `command` (which hides `rm -rf ~` from a grammar that misreads the line) is
/// allowed in no approval mode.
fn never_allowed_anywhere(command: &str) {
    for mode in [ReadOnly, Suggest, AutoEdit, Auto] {
        let (got, why) = decision(command, &Rules::new(), mode);
        assert_ne!(got, Allow, "{command:?} in {mode:?}: {why}");
    }
}

/// Runs `f` on a thread with a 256 KiB stack: a recursion without bound overflows it.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn deep_nesting_leaves_the_line_unparsed_instead_of_overflowing_the_stack() {
    on_small_stack(|| {
        let n = 10_000;
        for (open, close) in [
            ("$(", ")"),
            ("\"$(", ")\""),
            ("(", ")"),
            ("{ ", "; }"),
            ("${x:-", "}"),
            ("$((", "))"),
            ("<(", ")"),
            ("`", "`"),
        ] {
            let command = format!("echo {}ls{}", open.repeat(n), close.repeat(n));
            let (got, why) = decision(&command, &Rules::new(), ReadOnly);
            assert_ne!(got, Allow, "{open:?} x{n}: {why}");
        }
        for (open, close) in [("$(", ")"), ("(", ")"), ("{ ", "; }")] {
            let command = format!("{}rm -rf ~{}", open.repeat(n), close.repeat(n));
            let (got, _) = decision(&command, &Rules::new(), Auto);
            assert_ne!(got, Allow, "{open:?} x{n} around rm -rf ~");
        }
    });
    // Ordinary nesting is still read: the hidden `touch` is found 20 levels down.
    let command = format!("echo {}touch PWN{}", "$(".repeat(20), ")".repeat(20));
    finds(&command, &["touch", "PWN"]);
}

#[test]
fn a_newline_bash_ends_a_command_at_ends_it_for_the_policy() {
    for command in [
        // A comment ends at the newline whatever it ends with.
        "ls #\\\nid > PWN_comment",
        "git status # see\\\ntouch PWN_comment2",
        "ls # a\\\n# b\\\ntouch x",
        // `\` before CR LF escapes the CR; the LF ends the command.
        "git log --oneline \\\r\npython3 -c \"open('PWN_crlf_py','w').write('x')\"",
        "ls \\\r\ntouch x",
        // A line starting with `\` is a command of its own.
        "ls -la\n\\rm -rf keep",
        "echo copying:\n\\cp /etc/hostname PWN_bsword",
        "echo status:\n\\\npython3 -c \"import os; os.system('id')\"",
        "( ls\n\\rm -rf keep )",
        "{ ls\n\\rm -rf keep; }",
        "echo $(ls\n\\rm -rf keep)",
        "echo `ls\n\\rm -rf keep`",
        "case x in x) ls\n\\rm -rf keep ;; esac",
        "ls\n\n\n\\rm -rf keep",
        // A word ending the line that the grammar reads as an operator.
        "echo ==\nrm -rf keep",
        "echo =~\npython3 -c \"import os; os.system('id')\"",
        "cat README.md ==\ntouch x",
        "echo !=\ntouch x",
        // A redirection target that is a bare `$`.
        "echo <$\npython3 -c \"import os\"",
        "cat <<< $ \ntouch x",
        "cat <&$\ntouch x",
        "cat 3<$\ntouch x",
    ] {
        never_allowed_read_only(command);
    }
    for command in [
        "echo ==\nrm -rf ~",
        "ls\n\\rm -rf ~",
        "ls #\\\nrm -rf ~",
        "git status \\\r\nrm -rf ~",
        "echo <$\nrm -rf ~",
    ] {
        never_allowed_anywhere(command);
    }
    // What bash reads as one command stays one; separate lines stay separate.
    finds("ls \\\n-la", &["ls", "-la"]);
    finds("ls # note\npwd", &["pwd"]);
    finds("echo 'a\nb'\npwd", &["pwd"]);
    check(&[
        ("ls\npwd", Safe),
        ("echo \"a\nb\"", Safe),
        ("cat <<EOF\nx\\\ny\nEOF\nls", Safe),
        ("if true\nthen\n  ls\nfi", Safe),
        ("ls &&\npwd", Safe),
        ("ls |\nwc -l", Safe),
    ]);
}

#[test]
fn form_feed_vertical_tab_or_carriage_return_is_no_blank() {
    for command in [
        "ls -la \x0c# list files; rm -rf keep; id > PWN_ff",
        "git status\x0b# vt; touch PWN_vt",
        "echo a\r#; touch x",
        "echo a\x0ctouch x",
        "a\x0c=b ls",
        "ls\r\n",
    ] {
        never_allowed_read_only(command);
    }
    never_allowed_anywhere("ls \x0c#; rm -rf ~");
    never_allowed_anywhere("ls \x0b#; rm -rf ~");
    never_allowed_anywhere("ls \r#; rm -rf ~");
    // Inside quotes they are text.
    check(&[("echo 'a\x0cb'", Safe), ("echo \"a\rb\"", Safe)]);
}

#[test]
fn an_ansi_c_string_ends_where_bash_ends_it() {
    for command in [
        "echo $'path\\\\' ; rm -rf keep ; id > PWN_ansi #'",
        "ls | cat | wc -l; echo $'\\\\' ; touch x #'",
        "echo $'a\\\\\\\\' ; touch x #'",
        "echo `echo $'\\\\' ; touch x #'`",
    ] {
        never_allowed_read_only(command);
    }
    never_allowed_anywhere("echo $'path\\\\' ; rm -rf ~ #'");
    // `\'` inside `$'…'` is a quote, `\\` a backslash: these read as bash reads them.
    finds("echo $'it\\'s' ; ls", &["ls"]);
    finds("echo $'a\\\\' ; ls", &["ls"]);
    finds("echo $'a\\\\'", &["echo", "a\\"]);
}

#[test]
fn a_substitution_inside_a_regex_is_walked_or_asks() {
    for command in [
        "ls; [[ x =~ (`id > PWN_regex_bt`) ]]",
        "[[ a =~ (<(touch PWN_regex_ps)) ]] || ls",
        "[[ a =~ (a|`touch x`) ]]",
        "[[ a =~ (\"`touch x`\") ]]",
        "[[ a =~ (${x:-`touch x`}) ]]",
        "[[ a =~ (x)(`touch x`) ]]",
        "[[ a =~ ($[`touch x`]) ]]",
        "[[ a =~ x<(touch x) ]]",
        "[[ a =~ x>(touch x) ]]",
        "[[ a =~ x\\ (`touch x`) ]]",
    ] {
        never_allowed_read_only(command);
    }
    never_allowed_anywhere("[[ a =~ (`rm -rf ~`) ]]");
    never_allowed_anywhere("[[ a =~ (<(rm -rf ~)) ]]");
    finds("[[ a =~ ^$(touch PWN)$ ]]", &["touch", "PWN"]);
}

#[test]
fn a_denied_command_hidden_where_bash_and_the_grammar_disagree_is_never_allowed() {
    let rules = deny_rules(&["git push", "touch"]);
    for command in [
        "echo ==\ntouch PWN_deny_eqeq",
        "bash -c 'git status =~\ngit push r.git HEAD:refs/heads/pwn_eq'",
        "git log -1 \\\r\ngit push r.git HEAD:refs/heads/pwn_crlf",
        "git status\n\\git push r.git HEAD:refs/heads/pwn_bs",
        "ls #\\\ntouch PWN",
        "ls \x0c# x; touch PWN",
        "echo $'\\\\' ; touch PWN #'",
        "[[ a =~ (`touch PWN`) ]]",
    ] {
        for mode in [Auto, AutoEdit] {
            let (got, why) = decision(command, &rules, mode);
            assert_ne!(got, Allow, "{command:?} in {mode:?}: {why}");
        }
    }
}

/// A `#` the grammar reads as a comment where bash reads a word (glued to a `}`, after an
/// escaped blank) hides the rest of the line from the policy while bash runs it; and a
/// `case` inside `$(…)`, whose `)` may close a pattern or the substitution, is not guessed.
#[test]
fn a_comment_starts_only_where_bash_starts_one() {
    for command in [
        "{ ls; }# ; touch PWN_g1; }",
        "{ ls ;}#;touch x;}",
        "{ ls; }# | touch x; }",
        "{ ls; }#>PWN; }",
        "ls | { cat; }# ; rm -rf keep; }",
        "ls \\ #; touch x",
        "echo a \\ # note ; touch x",
        "ls \t\\ #; touch x",
        "git log --oneline \\ # show history; rm -rf keep",
        "echo \"$(echo case)\"; ls\n\\touch PWN_e1 #\" esac)\"",
        "{ ls; }# ; rm -rf ~; }",
        "ls \\ # ; rm -rf ~",
    ] {
        never_allowed_read_only(command);
    }
    for command in ["{ ls; }# ; rm -rf ~; }", "ls \\ # ; rm -rf ~"] {
        never_allowed_anywhere(command);
    }
    // Ordinary comments still read as comments.
    for command in [
        "ls # a comment",
        "ls; echo hi # comment here",
        "git log --oneline # show history",
        "ls \\\\ #; touch x",
        "for f in *.rs; do wc -l \"$f\"; done # count",
    ] {
        let (got, why) = decision(command, &Rules::new(), ReadOnly);
        assert_eq!(got, Allow, "{command:?}: {why}");
    }
}

/// `$$` is the shell's process id: its second `$` opens no `${…}` or `$'…'`, so the
/// newline check stays in step with bash; and thousands of here-documents are read in
/// time proportional to the line.
#[test]
fn the_process_id_opens_nothing_and_many_here_documents_are_read_in_time() {
    for command in [
        "echo $${ # '\nls\n\\touch x #' }",
        "echo $$'\\'\nls\n\\touch x #'",
    ] {
        never_allowed_read_only(command);
    }
    let (got, why) = decision("echo $$ $${#x}", &Rules::new(), ReadOnly);
    assert_eq!(got, Allow, "{why}");
    let many = "cat <<E\nE\n".repeat(6500);
    let started = std::time::Instant::now();
    let _ = decision(&many, &Rules::new(), ReadOnly);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?} for 6,500 here-documents",
        started.elapsed()
    );
}

/// A quote inside a `[[ … ]]` regex or pattern, or a `case` pattern, opens a quoted
/// string to bash while the grammar keeps it as text; a `#` bash reads as a comment where
/// the grammar does not puts the readings out of step; and a brace sequence at the ends of
/// the 64-bit range is judged, not a panic.
#[test]
fn quotes_in_patterns_comments_both_ways_and_wide_sequences() {
    for command in [
        "[[ x =~ a\" ]]; echo \" ]]; touch PWN; # \"",
        "[[ x == @(') ]]; echo ' ]]; touch x",
        "[[ x != a\\\\' ]]; echo ' ]]; touch x",
        "case x in *a') echo; esac; touch x; #'",
        "[[ x =~ ( #\" ) ]]\necho \" ) ]]\ntouch PWN\n# \"",
        "[[ x =~ a\" ]]; echo \" ]]; rm -rf ~ # \"",
    ] {
        never_allowed_read_only(command);
    }
    never_allowed_anywhere("[[ x =~ a\" ]]; echo \" ]]; rm -rf ~ # \"");
    for (open, inner) in [(32000, ""), (20000, "a,b")] {
        let command = format!("echo {}{inner}{}", "{".repeat(open), "}".repeat(open));
        let started = std::time::Instant::now();
        let _ = decision(&command, &Rules::new(), ReadOnly);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    // Each word within the per-word bound, many words: the line's total is bounded too.
    let many = format!("ls {}", "{1..256} ".repeat(7000));
    let started = std::time::Instant::now();
    let (got, why) = decision(&many, &Rules::new(), ReadOnly);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{why}"
    );
    assert_ne!(got, Allow, "{why}");
    for command in [
        "echo {-9223372036854775808..9223372036854775807}",
        "echo {0..-9223372036854775808}",
        "echo {9223372036854775807..0..-9223372036854775808}",
    ] {
        let _ = decision(command, &Rules::new(), ReadOnly);
    }
    for command in [
        "[[ $x =~ ^[0-9]+$ ]] && echo num",
        "[[ $f == *.rs ]] && echo rust",
        "case $x in \"a\") echo a;; *) echo b;; esac",
        "echo \"it's\" 'a \"b\"'",
    ] {
        let (got, why) = decision(command, &Rules::new(), ReadOnly);
        assert_eq!(got, Allow, "{command:?}: {why}");
    }
}
