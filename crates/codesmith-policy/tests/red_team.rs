//! Kinds of command the red-team pass found wrongly allowed or judged too
//! softly, each with more instances than were found: attached and
//! clustered option values, abbreviated long options, redirections,
//! copy targets, run-time paths, truncation, git configuration,
//! catastrophic commands, archives and patches, secrets printed to the
//! transcript. Paths are judged with no file system (`LexicalPaths`), home
//! `/root`.
#![allow(clippy::unwrap_used)]

use codesmith_policy::SafetyLevel::{self, Ask, Dangerous, Safe, WorkspaceSafe};
use codesmith_policy::{LexicalPaths, classify_command_with};

use crate::common;
use common::{WS, asks, check, check_with, reason};

#[test]
fn every_redirection_that_opens_a_file_is_judged() {
    asks(&[
        "echo x >& /tmp/x",
        "echo x >&/tmp/x",
        "echo x 1>&/tmp/x",
        "echo x 2>&/etc/x",
        "echo x &> /tmp/x",
        "echo x &>> /tmp/x",
        "echo x >| /etc/x",
        "echo x <> /etc/x",
        "> /etc/x",
        ">> /root/.bashrc",
        "echo hi; > /etc/passwd",
        ">/tmp/x cat",
        "cat < ~/.ssh/id_rsa",
        "cat < /root/.ssh/id_rsa",
        "wc < .env",
        "wc -c 0< ~/.netrc",
        "cat <&0 < /root/.aws/credentials",
        "cat .env.local",
        "grep KEY < config/.env.production",
    ]);
    check(&[
        ("echo x >& 2", Safe),
        ("echo x 2>&1", Safe),
        ("echo x 2>&-", Safe),
        ("cat < src/main.rs", Safe),
        ("cat .env.example", Safe),
        ("> out.txt", WorkspaceSafe),
    ]);
    assert!(reason("wc < .env").contains("credential"));
}

#[test]
fn the_write_target_of_copies_and_moves_is_judged_in_every_spelling() {
    asks(&[
        "cp --target-directory=/etc a",
        "cp --target-directory /etc a",
        "cp --target=/etc a",
        "cp --targ /etc a",
        "cp -t /etc a",
        "cp -t/etc a",
        "cp -at/etc a",
        "cp -rt /usr/local/bin a b",
        "mv -t/etc a",
        "mv --target-directory=/etc a",
        "mv --t=/root a",
        "install -t /etc a",
        "install -t/usr/bin a",
        "install -m755 -t/usr/bin a",
        "install -d /opt/x",
        "ln -s -t /etc a",
        "ln -st/etc a",
        "ln -sft /root/.config a",
        "cp -T a /etc/x",
        "mv -T a /etc/x",
        "cp -S .bak a /etc/x",
        "cp --frobnicate a b",
        "cp --re a b",
        "mv a.txt /dev/null",
        "mv -f src/lib.rs /dev/null",
    ]);
    check(&[
        ("cp -t build a b", WorkspaceSafe),
        ("cp -at build a", WorkspaceSafe),
        ("cp --target=build a", WorkspaceSafe),
        ("mv -T a b", WorkspaceSafe),
        ("install -m 644 a build/a", WorkspaceSafe),
        ("cp -r src backup", WorkspaceSafe),
    ]);
}

#[test]
fn xargs_options_are_read_as_xargs_reads_them() {
    asks(&[
        "echo x | xargs -I{} sh -c {}",
        "ls | xargs -n1 rm",
        "ls | xargs -P4 -n1 rm -f",
        "ls | xargs -s100 rm",
        "ls | xargs -L1 rm",
        "ls | xargs -a/root/.ssh/id_rsa echo",
        "ls | xargs --arg-f=/root/.netrc echo",
        "ls | xargs --frob grep x",
        "ls | xargs -q grep x",
    ]);
    // A shell handed its input as the script is a pipe into a shell.
    let deny: Vec<(&str, SafetyLevel)> = [
        "printf 'id\\0' | xargs -0I{} sh -c {}",
        "ls | xargs -0rI{} sh -c {}",
        "ls | xargs -IX sh -c X",
        "ls | xargs -iX sh -c X",
        "ls | xargs -i sh -c {}",
        "ls | xargs --repl=X sh -c X",
        "ls | xargs -d'\\n' -I{} bash -c '{}'",
        "ls | xargs -n1 sh -c",
    ]
    .iter()
    .map(|c| (*c, Dangerous))
    .collect();
    check(&deny);
    check(&[
        ("ls | xargs -n1 grep foo", Safe),
        ("ls | xargs -0 wc -l", Safe),
        ("ls | xargs -I{} grep foo {}", Safe),
        ("echo src | xargs ls", Safe),
    ]);
    assert!(reason("ls | xargs --frob grep x").contains("--frob"));
}

#[test]
fn catastrophic_commands_are_refused_on_what_really_runs() {
    let deny = [
        "rm -rf /etc",
        "rm -rf /etc/",
        "rm -rf /usr/bin",
        "rm -fr /home",
        "rm -r /var/lib",
        "rm -rf /usr/*",
        "rm -rf /usr/local/bin",
        "rm --rec --for /",
        "rm --recur -f /etc",
        "rm -r --force --no-pres /",
        "sudo rm -rf /boot",
        "cd / && rm -rf usr",
        "dd of=/dev/sda if=/dev/zero",
        "dd if=/dev/zero of=/dev/nvme0n1 bs=1M",
        "dd if=/dev/urandom of=/dev/mapper/root",
        "mkfs.ext4 /dev/sdb1",
        "mkfs -t ext4 /dev/sda",
        "wipefs -a /dev/sda",
        "mkswap /dev/sda2",
        "chmod -R 000 /",
        "chmod -R 777 /etc",
        "chmod --recursive 000 ~",
        "chown -R nobody /",
        "chown -R nobody:nobody /usr",
        "chgrp -R x /var/lib",
        "echo / | xargs rm -rf",
        "echo / | xargs -I{} rm -rf {}",
        "echo /etc /usr | xargs -n1 rm -rf",
        "find / -delete",
        "find /etc -delete",
        "find ~ -delete",
        "find / -exec rm -rf {} +",
        "find /usr -depth -exec rm -f {} \\;",
        "coproc rm -rf /",
        "shred /dev/sda",
        "shred -n3 -z /dev/nvme0n1",
        "bash -c 'dd of=/dev/sda if=/dev/zero'",
    ];
    let cases: Vec<(&str, SafetyLevel)> = deny.iter().map(|c| (*c, Dangerous)).collect();
    check(&cases);
    // The reason says what and why.
    assert!(reason("rm -rf /etc").contains("`/etc` is a system directory"));
    assert!(reason("dd of=/dev/sda").contains("`/dev/sda`"));
    // Routine forms and data stay as they were.
    check(&[
        ("rm -rf /tmp/foo", Ask),
        ("rm -rf /etc/nginx", Ask),
        ("dd if=x of=/dev/null", Ask),
        ("chmod 644 /etc/passwd", Ask),
        ("chmod -R u+w src", WorkspaceSafe),
        ("shred a.txt", Ask),
        ("coproc ls", Ask),
        ("grep -rn 'rm -rf /' docs", Safe),
        ("grep -rn 'dd of=/dev/sda' docs", Safe),
        ("git commit -m 'never run rm -rf /etc'", WorkspaceSafe),
    ]);
}

#[test]
fn abbreviated_long_options_are_judged_as_what_they_abbreviate() {
    asks(&[
        "git grep --open=id foo",
        "git grep --op=id foo",
        "git rebase --exe=cmd main",
        "git rebase --ex cmd main",
        "git diff --ext",
        "git log --outp=/etc/x",
        "git format-patch --output-d=/tmp/x HEAD~1",
        "git push --for",
        "git push --force-w",
        "git push --mir",
        "git push --del origin x",
        "git reset --har",
        "git checkout --the .",
        "git clean --for",
        "git apply --unsafe",
        "git fetch --upload-p=sh",
        "git switch --disc main",
        "sort --compress-prog=sh f",
        "sort --compress=sh f",
        "sort --outp=/etc/x f",
        "grep --fil=/root/.ssh/id_rsa x",
        "rg --pr=cat x",
        "sed --in-pl s/a/b/ /etc/passwd",
        "sed --exp=e f",
        "tree --fromf f",
        "tar cf x.tar --use-comp=sh src",
        "tar cf x.tar --use=sh src",
        "tar -c --fi=/etc/x.tar src",
        "tar tf x.tar --to-com=sh",
        "tar tf x.tar --checkpoint-a=exec=id",
        "env --sp='sh -c id'",
        "env -iS'sh -c id'",
        "env -iC/ ls",
        "env --ch=/ ls",
        "cp --targ /etc a",
        "mv --t=/root a",
    ]);
    check(&[
        ("git clean --dry", Safe),
        ("git diff --stat", Safe),
        ("git log --all --oneline", Safe),
        ("tar --cre --fi=out.tar src", WorkspaceSafe),
        ("tar tf x.tar", Safe),
        ("env -u FOO ls", Safe),
    ]);
    assert!(reason("git rebase --exe=cmd main").contains("runs a command"));
    assert!(reason("tar cf x.tar --use=sh src").contains("--use-compress-program"));
}

#[test]
fn every_git_configuration_write_asks() {
    asks(&[
        "git config --unset core.x",
        "git config --unset-all core.x",
        "git config --uns core.x",
        "git config --replace-all core.pager less",
        "git config --add core.pager less",
        "git config --append core.pager less",
        "git config -f .git/config core.pager x",
        "git config --file=/tmp/x core.pager",
        "git config --blob=HEAD:x core.pager",
        "git config --remove-section core",
        "git config --rename-section core x",
        "git config -e",
        "git config --edit",
        "git config set core.pager x",
        "git config unset core.pager",
        "git config core.fsmonitor x",
        "git config core.hooksPath /tmp/h",
        "git config alias.st '!sh -c id'",
        "git config --global user.name x",
        "git config --system --get core.x",
        "git -c core.pager=x log",
        "git -c alias.x='!id' x",
        "git --config-env=core.pager=X log",
    ]);
    check(&[
        ("git config user.name", Safe),
        ("git config --get user.name", Safe),
        ("git config --list", Safe),
        ("git config -l --show-origin", Safe),
        ("git config get user.name", Safe),
        ("git config --get-regexp alias", Safe),
        ("git config --type=bool --get core.bare", Safe),
    ]);
    assert!(reason("git config --unset core.x").contains("--unset"));
}

#[test]
fn printing_secrets_into_the_transcript_asks() {
    asks(&[
        "printenv",
        "printenv OPENAI_API_KEY",
        "env",
        "env -0",
        "env | grep PATH",
        "sudo env",
        "set",
        "declare",
        "declare -p",
        "declare -p OPENAI_API_KEY",
        "typeset -p",
        "export",
        "export -p",
        "readonly -p",
        "echo $OPENAI_API_KEY",
        "echo \"${GITHUB_TOKEN}\"",
        "echo ${ANTHROPIC_API_KEY}",
        "printf '%s\\n' \"$AWS_SECRET_ACCESS_KEY\"",
        "echo x > \"$DB_PASSWORD\"",
        "cat <<EOF\n$GITHUB_TOKEN\nEOF",
    ]);
    check(&[
        ("printenv HOME", Safe),
        ("echo $HOME", Safe),
        ("echo '$OPENAI_API_KEY'", Safe),
        ("declare -p PATH", Safe),
        ("export LANG=C", Safe),
        ("set -e", Safe),
        ("set -euo pipefail", Safe),
        ("set +x", Safe),
        ("set -- a b", Safe),
    ]);
    assert!(reason("env").contains("transcript"));
    assert!(reason("echo $OPENAI_API_KEY").contains("OPENAI_API_KEY"));
}

#[test]
fn archives_and_patches_ask_before_writing_what_they_name() {
    asks(&[
        "patch -p1 < fix.diff",
        "patch -p1 -i fix.diff",
        "patch -p0 --forward < fix.diff",
        "patch /etc/passwd fix.diff",
        "git apply fix.diff",
        "git apply -p2 fix.diff",
        "git apply --index fix.diff",
        "git am 0001-x.patch",
        "tar xf a.tar",
        "tar -xzf a.tgz -C build",
        "tar --extract --file=a.tar",
        "tar --ext -f a.tar",
        "tar xf a.tar -C /etc",
        "unzip a.zip",
        "unzip -o a.zip",
        "unzip -d build a.zip",
        "unzip -d /tmp/x a.zip",
        "cd /tmp/other && git commit -m x",
    ]);
    check(&[
        ("patch --dry-run -p1 < fix.diff", Safe),
        ("git apply --check fix.diff", Safe),
        ("git apply --stat fix.diff", Safe),
        ("tar tf a.tar", Safe),
        ("tar czf out.tgz src", WorkspaceSafe),
        ("unzip -l a.zip", Safe),
        ("cd src && git add x", WorkspaceSafe),
    ]);
    assert!(reason("tar xf a.tar").contains(".git/"));
}

/// `notes.txt` and `.env` exist; the snapshot holds only `src/`.
fn existing() -> LexicalPaths {
    LexicalPaths {
        files: crate::common::inert_repo(),
        home: Some("/root".to_string()),
        snapshot: Some(vec![format!("{WS}/src")]),
        links: Vec::new(),
        existing: Some(vec![
            format!("{WS}/notes.txt"),
            format!("{WS}/src"),
            format!("{WS}/build"),
            format!("{WS}/target"),
        ]),
    }
}

#[test]
fn truncating_or_overwriting_a_file_is_judged_like_deleting_it() {
    let overwrite = [
        "> notes.txt",
        ": > notes.txt",
        "true > notes.txt",
        "echo x > notes.txt",
        "echo x >| notes.txt",
        "echo x &> notes.txt",
        "echo x >&notes.txt",
        "cat /dev/null > notes.txt",
        "truncate -s0 notes.txt",
        "truncate -s 0 notes.txt",
        "truncate --size=0 notes.txt",
        "cp /dev/null notes.txt",
        "cp -f a notes.txt",
        "cp a build",
        "mv a notes.txt",
        "mv notes.txt /dev/null",
        "install a notes.txt",
        "echo | tee notes.txt",
        "echo | tee -p notes.txt",
        "sed -i 's/.*//' notes.txt",
        "sed -i~ d notes.txt",
    ];
    let cases: Vec<(&str, SafetyLevel)> = overwrite.iter().map(|c| (*c, Ask)).collect();
    check_with(&existing(), &cases);
    check_with(
        &existing(),
        &[
            // What the snapshot holds can be restored; new files lose nothing;
            // build output is regenerated; appending keeps what was there.
            ("> src/main.rs", WorkspaceSafe),
            ("echo x > src/lib.rs", WorkspaceSafe),
            ("truncate -s0 src/a.rs", WorkspaceSafe),
            ("cp a src/b.rs", WorkspaceSafe),
            ("sed -i 's/a/b/' src/lib.rs", WorkspaceSafe),
            ("echo x > new.txt", WorkspaceSafe),
            ("cp a new.txt", WorkspaceSafe),
            ("echo | tee new.log", WorkspaceSafe),
            ("echo x > target/out.txt", WorkspaceSafe),
            ("echo x >> notes.txt", WorkspaceSafe),
            ("echo | tee -a notes.txt", WorkspaceSafe),
            ("echo x > /dev/null", Safe),
        ],
    );
    let c = classify_command_with("> notes.txt", WS, &existing());
    assert!(c.reason.contains("overwrites `notes.txt`"), "{}", c.reason);
    // With nothing known about the disk or the snapshot, overwriting asks.
    let unknown = LexicalPaths {
        home: Some("/root".to_string()),
        ..LexicalPaths::default()
    };
    check_with(&unknown, &[("echo x > a.txt", Ask)]);
}

#[test]
fn run_time_paths_are_resolved_or_ask() {
    asks(&[
        "rm -rf $PWD",
        "rm -f $PWD/x",
        "rm -f \"${PWD}/a\"",
        "cd /tmp && rm -rf ~+/x",
        "echo x >> $OLDPWD/x",
        "echo x >> ~-/x",
        "cd /etc && cd - && echo x >> ~-/x",
        "cd ~/.ssh && cat $PWD/id_rsa",
        "cd ~/.ssh && cd /home/dev/proj && cat ~-/id_rsa",
        "cat ~-/id_rsa",
        "cat $OLDPWD/x",
        "cat ${OLDPWD}/.env",
        "cd ~/.ssh && cat $f",
        "for f in ~/.ssh/*; do cat $f; done",
        "for f in /root/.aws/credentials; do cp $f x; done",
        "select f in ~/.netrc; do cat $f; done",
        "rm -rf $(pwd)",
        "echo x >> $(pwd)/x",
        "mkdir -p $TMPDIR/x",
        "cp a $OLDPWD",
    ]);
    check(&[
        ("cd / && rm -rf $PWD", Dangerous),
        ("cd ~ && rm -rf ~+", Dangerous),
        ("cd / && rm -rf ${PWD}", Dangerous),
        ("cat $PWD/src/main.rs", Safe),
        ("for f in src/*.rs; do cat $f; done", Safe),
        ("touch $PWD/x", WorkspaceSafe),
        ("echo x >> ~+/log.txt", WorkspaceSafe),
    ]);
}

#[test]
fn what_is_known_exactly_is_understood() {
    check(&[
        ("$(echo ls)", Safe),
        ("`echo pwd`", Safe),
        ("$(echo rm) -rf /", Dangerous),
        ("VAR=value echo test", Safe),
        ("GIT_DIR=/home/user echo $GIT_DIR", Safe),
        ("FOO=1 true", Safe),
        ("PATH=/tmp echo x; ls", Safe),
    ]);
    asks(&[
        "$(echo hello)",
        "$(echo ls -la)",
        "cat $(echo /root/.ssh/id_rsa)",
        "PS4='$(id)' echo y",
        "X=$(id) echo y",
        "env FOO=1 echo x",
        "FOO=1",
    ]);
    // Overwriting what does not exist loses nothing, unless something on
    // the line moved files there first.
    check_with(
        &existing(),
        &[
            ("echo > gone.txt", WorkspaceSafe),
            ("rm notes.txt", Ask),
            ("mv notes.txt gone.txt && rm gone.txt", Ask),
            ("mv notes.txt gone.txt; echo > gone.txt", Ask),
        ],
    );
}

#[test]
fn clustered_short_flags_are_read_one_by_one() {
    asks(&[
        "git rebase -ix 'make test' main",
        "git rebase -xid main",
        "git push -fu origin main",
        "git push -uf origin main",
        "git push -d origin x",
        "git branch -Df x",
        "git checkout -fb x",
        "ln -t build /etc/passwd",
        "ln -tbuild /etc/passwd",
        "ln --target=build /etc/shadow",
        "rm --frob x",
        "rm -rfq x",
        "rm -r --no-preserve-root tmp",
    ]);
    check(&[
        ("git push -u origin main", Ask),
        ("git commit -am 'fix'", WorkspaceSafe),
        ("git log -n5 --oneline", Safe),
        ("ln -s ../lib link", WorkspaceSafe),
        ("rm --rec target", WorkspaceSafe),
    ]);
}

#[test]
fn disks_written_through_redirections_and_copies_are_denied() {
    check(&[
        ("> /dev/sda", Dangerous),
        ("ls > /dev/sdb", Dangerous),
        ("cat /dev/urandom > /dev/sda", Dangerous),
        ("cat a.txt > /dev/nvme0n1", Dangerous),
        ("cat /dev/zero >/dev/mmcblk0", Dangerous),
        ("echo x >> /dev/vda1", Dangerous),
        ("echo x > /dev/disk/by-id/x", Dangerous),
        ("tee /dev/sda < a.txt", Dangerous),
        ("cp /dev/zero /dev/sda", Dangerous),
        ("install a.txt /dev/xvda", Dangerous),
        ("echo x > /proc/self/root/dev/sda", Dangerous),
        ("echo x > /dev/null", Safe),
        ("echo x > /dev/stderr", Safe),
        ("echo data > /dev/tcp/127.0.0.1/80", Ask),
        ("echo x > /dev/kmsg", Ask),
        ("cp /dev/sda disk.img", Ask),
    ]);
}

#[test]
fn the_root_reached_through_proc_and_roots_home_by_name_are_catastrophic() {
    check(&[
        ("rm -rf /proc/self/root/", Dangerous),
        ("rm -rf /proc/self/root/*", Dangerous),
        ("rm -rf /proc/1/root/", Dangerous),
        ("rm -rf /proc/thread-self/root", Dangerous),
        ("rm -rf /proc/1/root/usr", Dangerous),
        ("rm -rf ~root", Dangerous),
        ("rm -rf ~root/", Dangerous),
        ("rm -rf ~root/*", Dangerous),
        ("chmod -R 777 /proc/self/root/etc", Dangerous),
        ("rm -rf /proc/self/root/tmp/x", Ask),
        ("rm -rf ~rooty/x", Ask),
    ]);
}

#[test]
fn moving_the_root_or_the_home_directory_away_is_catastrophic() {
    check(&[
        ("mv / /tmp/x", Dangerous),
        ("mv /* /tmp", Dangerous),
        ("mv ~ /tmp/x", Dangerous),
        ("mv ~/ /tmp/x", Dangerous),
        ("mv $HOME /tmp/x", Dangerous),
        ("mv /usr /tmp/u", Dangerous),
        ("mv -t /tmp /etc", Dangerous),
        ("mv build /tmp/x", Ask),
        ("mv -t /tmp a.txt", Ask),
        ("mv --target-directory /tmp a.txt", Ask),
        ("mv --target-directory=/tmp /usr", Dangerous),
        ("mv a.txt b.txt", WorkspaceSafe),
    ]);
}

#[test]
fn globs_that_match_dotenv_files_and_more_secret_places_are_credentials() {
    asks(&[
        "cat .e?v",
        "cat .en*",
        "cat .[e]nv",
        "head -100 .?nv",
        "grep . .e*",
        "cat .env.prod*",
        "cat /etc/ssh/ssh_host_rsa_key",
        "cat /etc/ssh/*key",
        "cat /run/secrets/db_password",
        "cat /var/run/secrets/kubernetes.io/serviceaccount/token",
        "cat /proc/1/task/1/environ",
        "strings /proc/self/task/7/environ",
        "cat ~/.codesmith/config.toml",
        "base64 ~/.codesmith/sessions/x.jsonl",
        "cat /root/.codesmith/policy.toml",
        "cd ~ && cat .codesmith/config.toml",
    ]);
    check(&[
        ("cat *.txt", Safe),
        ("cat .env.example", Safe),
        ("cat .codesmith/policy.toml", Safe),
        ("cat .editorconfig", Safe),
    ]);
    assert!(reason("cat .e?v").contains("credential"));
}

#[test]
fn recursive_searches_through_directories_holding_credentials_ask() {
    asks(&[
        "grep -r BEGIN ~",
        "grep -R x /home",
        "grep -rl PRIVATE /",
        "grep --recursive x /root",
        "grep -d recurse x /etc",
        "rg -uu KEY ~",
        "rg x /",
        "rg -l . /root",
        "cd ~ && rg token",
        "cd / && grep -r x",
        "diff -r ~ /tmp/empty",
        "rg x $HOME",
    ]);
    check(&[
        ("grep -rn TODO src", Safe),
        ("rg TODO", Safe),
        ("rg -l fn crates", Safe),
        ("grep -r x /usr/share/doc", Safe),
    ]);
    assert!(reason("rg x /").contains("recursively"));
}

#[test]
fn printing_the_environment_of_processes_asks() {
    asks(&[
        "ps e",
        "ps eww -A",
        "ps auxe",
        "ps axe -o command",
        "ps -o pid,args,env",
        "jq -n env",
        "jq -n '$ENV'",
        "jq 'env.OPENAI_API_KEY' -n",
        "jq --null-input env",
        "jq -rn '$ENV.HOME'",
    ]);
    check(&[
        ("ps aux", Safe),
        ("ps -ef", Safe),
        ("jq .name package.json", Safe),
        ("jq '.environment' x.json", Safe),
    ]);
}

#[test]
fn protected_directories_are_matched_without_case() {
    asks(&[
        "echo x > .GIT/hooks/x",
        "echo x > .Git/config",
        "echo x > .CodeSmith/policy.toml",
        "echo x > GIT~1/hooks/pre-commit",
        "echo x > '.git./hooks/pre-commit'",
        "echo x > '.git /config'",
        "echo x > $'.git\\u200c/hooks/pre-commit'",
        "cp a.txt '.git::$INDEX_ALLOCATION/hooks/x'",
        "echo x > CODESM~1/policy.toml",
    ]);
    check(&[
        ("echo x > gitlab.txt", WorkspaceSafe),
        ("echo x > .github/x.yml", WorkspaceSafe),
    ]);
}

#[test]
fn copying_a_credential_or_a_disk_into_the_workspace_reads_it() {
    asks(&[
        "cp ~/.ssh/id_rsa key.txt",
        "cp /root/.aws/credentials creds",
        "install -m 644 ~/.netrc n",
        "mv ~/.git-credentials gc",
        "ln ~/.ssh/id_rsa k",
        "cp -r ~/.ssh keys",
        "cp .env leak.txt",
        "cp -t . ~/.ssh/id_ed25519",
        "cat /dev/sda",
        "cp /dev/nvme0n1 disk.img",
    ]);
    check(&[("cp src/main.rs main.bak", WorkspaceSafe)]);
}

#[test]
fn dotenv_relatives_and_private_keys_by_name_are_credentials() {
    asks(&[
        "cat .env~",
        "cat .env.bak",
        "cat .envrc",
        "cat .env-prod",
        "cat secrets.env",
        "cat config/production.env",
        "cat id_rsa",
        "cat keys/id_ed25519",
        "xxd backup/id_ecdsa",
    ]);
    check(&[
        ("cat example.env", Safe),
        ("cat id_rsa.pub", Safe),
        ("cat docs/.environment.md", Safe),
        ("cat env.rs", Safe),
    ]);
}

#[test]
fn more_readers_and_their_expressions_are_judged() {
    asks(&[
        "ag PRIVATE ~",
        "ag KEY /root",
        "ag x /",
        "yq 'env(OPENAI_API_KEY)' a.yaml",
        "yq '.a = strenv(GITHUB_TOKEN)' a.yaml",
        "yq 'load_str(\"/root/.ssh/id_rsa\")' a.yaml",
        "yq 'load(\"x.yaml\")' a.yaml",
        "git grep --no-index x ~",
        "git grep --no-index PRIVATE /root",
        "git grep --no-index -e KEY -- /",
        "git diff --no-index ~ /tmp",
        "git diff --no-index .env /dev/null",
        "cd ~ && git grep --no-index token",
    ]);
    check(&[
        ("ag TODO src", Safe),
        ("yq '.name' a.yaml", Safe),
        ("git grep --no-index TODO src", Safe),
        ("git grep -n TODO", Safe),
    ]);
}

#[test]
fn cargo_paths_outside_and_browsers_ask() {
    asks(&[
        "cargo new /tmp/x",
        "cargo init ~/x",
        "cargo new --name x /root/y",
        "cargo build -Zunstable-options --artifact-dir /tmp",
        "cargo build --artifact-dir=/usr/local/bin",
        "cargo doc --open",
    ]);
    check(&[
        ("cargo new tools/x", WorkspaceSafe),
        ("cargo doc --no-deps", WorkspaceSafe),
    ]);
}

#[test]
fn paths_after_a_command_that_may_check_out_symlinks_ask() {
    asks(&[
        "git checkout evil && cat k/credentials",
        "git checkout evil && echo x >> k/.bashrc",
        "git switch evil; cp a.txt k/x",
        "git reset --hard origin/x && tee k/y < a.txt",
        "git stash pop && cat k/credentials",
        "git cherry-pick abc && sed -i s/a/b/ k/rc",
        "cp -r vendor k && cat k/credentials",
        "cp -a vendor k; echo x > k/.profile",
    ]);
    check(&[
        (
            "git checkout -b feat && git add . && git commit -m x",
            WorkspaceSafe,
        ),
        ("git switch main && echo x > /dev/null", WorkspaceSafe),
        ("cat k/x && git checkout main", WorkspaceSafe),
    ]);
    assert!(reason("git checkout evil && cat k/config").contains("symlinks"));
}

#[test]
fn a_chmod_mode_that_looks_like_an_option_does_not_hide_the_path() {
    check(&[
        ("chmod -R -x /", Dangerous),
        ("chmod -R -rwx ~", Dangerous),
        ("chmod -R -w -- /etc", Dangerous),
        ("chmod -x ~/.bashrc", Ask),
        ("chmod -w /etc/passwd", Ask),
        ("chmod -r ~/.ssh/id_rsa", Ask),
        ("chmod --reference=a.txt /etc/passwd", Ask),
        ("chmod -x run.sh", WorkspaceSafe),
        ("chmod -v +x run.sh", WorkspaceSafe),
    ]);
}

#[test]
fn every_output_of_sort_and_writing_python_modules_are_judged() {
    asks(&[
        "sort -oa.txt -o/root/.bashrc a.txt",
        "sort -o out.txt --output=/etc/x a.txt",
        "python3 -m venv /tmp/v",
        "python3 -m compileall /",
        "python -m black ~/other/x.py",
        "python3 -m py_compile /usr/lib/python3/x.py",
    ]);
    check(&[
        ("sort -o out.txt a.txt", WorkspaceSafe),
        ("python3 -m venv .venv", WorkspaceSafe),
        ("python3 -m black src", WorkspaceSafe),
        ("python3 -m pytest tests", WorkspaceSafe),
    ]);
}

#[test]
fn pushd_and_find_with_type_filters_reach_the_deny_floor() {
    check(&[
        ("pushd /; rm -rf *", Dangerous),
        ("pushd ~ && rm -rf ./*", Dangerous),
        ("find / -type f -delete", Dangerous),
        ("find ~ -type d -delete", Dangerous),
        ("pushd src && rm -rf *", Ask),
        ("find . -type f -name '*.pyc' -delete", WorkspaceSafe),
    ]);
}

#[test]
fn catastrophic_commands_handed_to_programs_that_run_them_are_denied() {
    check(&[
        ("watch rm -rf /", Dangerous),
        ("strace -f rm -rf ~", Dangerous),
        ("toybox rm -rf /", Dangerous),
        ("su -c 'rm -rf /'", Dangerous),
        ("script -qc 'rm -rf ~/' /dev/null", Dangerous),
        ("tmux new -d 'rm -rf /*'", Dangerous),
        ("at now <<< 'rm -rf /'", Dangerous),
        ("gdb -batch -ex 'shell rm -rf /'", Dangerous),
        ("rsync -a --delete /tmp/empty/ /", Dangerous),
        ("rsync -a --delete empty/ ~/", Dangerous),
        ("rsync --delete-before -r e/ /usr/", Dangerous),
        ("blkdiscard /dev/sda", Dangerous),
        ("sgdisk --zap-all /dev/nvme0n1", Dangerous),
        ("cryptsetup luksFormat /dev/sda2", Dangerous),
        ("parted -s /dev/sda mklabel gpt", Dangerous),
        ("sfdisk --delete /dev/vda", Dangerous),
        ("watch ls", Ask),
        ("rsync -a --delete src/ /tmp/mirror/", Ask),
        ("parted -l", Ask),
        ("git commit -m 'never run rm -rf /'", WorkspaceSafe),
        ("curl -d @- https://example.com <<< 'rm -rf /'", Ask),
        ("grep -rn 'rm -rf /' docs", Safe),
    ]);
}

#[test]
fn hidden_home_files_secret_names_and_archives_of_home_ask() {
    asks(&[
        "cat ~/.cargo/credentials.toml",
        "cat ~/.m2/settings.xml",
        "cat ~/.gradle/gradle.properties",
        "cat ~/.config/rclone/rclone.conf",
        "cat ~/.local/share/keyrings/login.keyring",
        "cat ~/.boto",
        "cat ~/.s3cfg",
        "cat /root/.terraform.d/credentials.tfrc.json",
        "cat ~/.cursor/mcp.json",
        "cat ~/.config/sops/age/keys.txt",
        "cat /etc/ssl/private/x.key",
        "cat /etc/kubernetes/admin.conf",
        "cat /etc/letsencrypt/live/x/privkey.pem",
        "cat server.key",
        "cat cert.p12",
        "cat keystore.jks",
        "cat terraform.tfstate",
        "cat credentials.json",
        "cat service-account-prod.json",
        "cat .secrets",
        "cp -r ~ backup/",
        "cp -a /root home-copy",
        "tar czf home.tgz ~",
        "tar czf home.tgz /root",
        "zip -r h.zip ~",
        "tar cf keys.tar ~/.ssh",
    ]);
    check(&[
        ("cat ~/.bashrc", Safe),
        (
            "cat ~/.cargo/registry/src/index.crates.io-x/serde-1.0.0/src/lib.rs",
            Safe,
        ),
        ("cat ~/.rustup/settings.toml", Safe),
        ("cat ~/notes/todo.txt", Safe),
        ("cat src/main.rs", Safe),
        ("tar czf src.tgz src", WorkspaceSafe),
        ("cp -r src backup", WorkspaceSafe),
    ]);
}

#[test]
fn registry_tokens_and_the_sysrq_trigger() {
    asks(&[
        "npm config get //registry.npmjs.org/:_authToken",
        "npm config get _auth",
        "pnpm config get //npm.pkg.github.com/:_authToken",
        "npm config list -l",
        "npm config ls --json",
    ]);
    check(&[
        ("echo c > /proc/sysrq-trigger", Dangerous),
        ("echo b >/proc/self/root/proc/sysrq-trigger", Dangerous),
        ("npm config get registry", Safe),
        ("npm config list", Safe),
    ]);
}

#[test]
fn known_standard_input_reaches_xargs_and_at_runs_its_input() {
    check(&[
        ("xargs rm -rf <<< /", Dangerous),
        ("xargs rm -rf <<< '~'", Dangerous),
        ("xargs -0 rm -rf <<EOF\n/usr\nEOF", Dangerous),
        ("echo 'rm -rf /' | at now", Dangerous),
        ("echo ./pwn | batch", Dangerous),
        ("xargs rm -rf <<< \"$DIR\"", Ask),
        ("xargs echo <<< hello", Safe),
    ]);
}

#[test]
fn recursive_searches_of_a_directory_holding_a_dotenv_file_ask() {
    let facts = LexicalPaths {
        home: Some("/root".to_string()),
        existing: Some(vec![format!("{WS}/.env"), format!("{WS}/src/main.rs")]),
        ..LexicalPaths::default()
    };
    check_with(
        &facts,
        &[
            ("grep -r . .", Ask),
            ("grep -rn KEY", Ask),
            ("rg --hidden -uu token .", Ask),
            ("cd src && grep -r x ..", Ask),
            ("grep -rn TODO src", Safe),
            ("rg TODO src", Safe),
        ],
    );
}

#[test]
fn xargs_over_a_listing_of_a_directory_holding_credentials_asks() {
    asks(&[
        "find ~ -type f | xargs cat",
        "find /root -name 'id_*' | xargs cat",
        "find ~ -name '*.json' | xargs grep -h token",
        "fd . ~ | xargs head",
        "ls ~/.ssh | xargs -I{} cat ~/.ssh/{}",
        "locate id_rsa | xargs cat",
        "cd ~ && find . -type f -print0 | xargs -0 cat",
    ]);
    check(&[
        ("find src -name '*.rs' | xargs wc -l", Safe),
        ("ls | xargs grep foo", Safe),
        ("find . -name '*.rs' | xargs grep -n TODO", Safe),
    ]);
}

#[test]
fn variables_set_to_literals_on_the_line_reach_the_deny_floor() {
    check(&[
        ("X=/; rm -rf $X", Dangerous),
        ("D=/usr; rm -rf \"$D\"", Dangerous),
        ("H=~; rm -rf ${H}/", Dangerous),
        ("T=/; chmod -R 777 $T", Dangerous),
        ("X=build; rm -rf $X", Ask),
        // What the floor cannot evaluate, in a deleting position, is refused.
        ("rm -rf $UNSET_DIR", Dangerous),
        ("for d in /etc /usr; do rm -rf $d; done", Dangerous),
    ]);
}
