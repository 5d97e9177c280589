//! Trusted outside paths end to end: `[trust] read` in the user config lets the file tools
//! read a directory outside the workspace (and shell commands see it read-only in the
//! sandbox), while writing there stays refused and other outside paths stay closed.

#![allow(clippy::unwrap_used)]

use crate::common::{Sandbox, codesmith};
use crate::interactive::{call, exec_json, results};

use codesmith_testkit::{Scripted, ScriptedServer};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_directory_is_readable_and_never_writable() {
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let sdk = outside.path().join("sdk");
    std::fs::create_dir(&sdk).unwrap();
    std::fs::write(sdk.join("api.txt"), "fn sdk_entry_point()\n").unwrap();
    let other = outside.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("secret.txt"), "not for the model\n").unwrap();
    std::fs::write(
        sb.home().join("config.toml"),
        format!("[trust]\nread = [{:?}]\n", sdk.to_str().unwrap()),
    )
    .unwrap();
    let api = sdk.join("api.txt");
    let api = api.to_str().unwrap();
    let server = ScriptedServer::start().await;
    server
        .push(call("c1", "read_file", json!({"path": api})))
        .push(call(
            "c2",
            "write_file",
            json!({"path": sdk.join("new.txt").to_str().unwrap(), "content": "x\n"}),
        ))
        .push(call(
            "c3",
            "read_file",
            json!({"path": other.join("secret.txt").to_str().unwrap()}),
        ))
        .push(call(
            "c4",
            "exec_shell",
            json!({"command": format!("cat {api}")}),
        ))
        .push(Scripted::text("Read the SDK."));
    let events = exec_json(&sb, &server, "read the sdk").await;
    let r = results(&events);
    assert_eq!(r.len(), 4, "{events:?}");
    assert_eq!(r[0]["ok"], true, "{}", r[0]);
    assert!(r[0]["output"].as_str().unwrap().contains("sdk_entry_point"));
    assert_eq!(r[1]["error"]["code"], "OUTSIDE_WORKSPACE", "{}", r[1]);
    assert!(!sdk.join("new.txt").exists());
    assert_eq!(r[2]["error"]["code"], "OUTSIDE_WORKSPACE", "{}", r[2]);
    assert!(
        !r[2]["output"]
            .as_str()
            .unwrap()
            .contains("not for the model"),
        "{}",
        r[2]
    );
    // The sandbox's read list follows the same directories.
    assert_eq!(r[3]["ok"], true, "{}", r[3]);
    assert!(
        r[3]["output"].as_str().unwrap().contains("sdk_entry_point"),
        "{}",
        r[3]
    );

    // `config show` names the list and where it came from.
    let ws = sb.ws();
    let out = codesmith(
        &sb.home(),
        &["config", "show", "--json", "-w", ws.to_str().unwrap()],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = shown["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "trust.read")
        .cloned()
        .unwrap();
    assert_eq!(row["origin"], "user", "{row}");
    assert!(row["value"].to_string().contains("sdk"), "{row}");
}
