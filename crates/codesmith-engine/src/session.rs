//! Sessions: the append-only transcript on disk.
//!
//! A session is one JSONL file, `$CODESMITH_HOME/sessions/<id>.jsonl`. Its
//! first line is a [`Record::Meta`]; each later line is a message or a note.
//! Every line is written whole and flushed to disk before the engine moves on,
//! so a crash loses at most the line being written; a torn last line is
//! skipped on load. The file is locked while a process holds the session.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use codesmith_protocol::Message;
use serde::{Deserialize, Serialize};

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The first line: what the session is.
    Meta {
        /// Session id.
        session_id: String,
        /// RFC 3339 UTC creation time.
        created_at: String,
        /// Canonical workspace path.
        workspace: String,
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
    },
    /// A transcript message.
    Message {
        /// The message.
        message: Message,
    },
    /// The transcript was rewritten to fit the context window: from here on,
    /// `messages` replaces everything before it (the old lines stay in the
    /// file, so nothing is lost).
    Compaction {
        /// Which recovery stage produced it (`clear_tool_results`, `summary`, `trim`).
        stage: String,
        /// The transcript after the rewrite.
        messages: Vec<Message>,
    },
    /// A non-message fact: a restore, a verdict.
    Note {
        /// What kind of note (`compaction`, `restore`, `verdict`, ...).
        kind: String,
        /// Its content.
        data: serde_json::Value,
    },
}

/// Errors of the session store.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The id is not a safe single path component.
    #[error(
        "invalid session id {0:?}: use the id printed when the session started (letters, digits, '.', '_', '-')"
    )]
    InvalidId(String),
    /// No session file with that id.
    #[error("no session {0:?} under {1}; list sessions with `codesmith sessions list`")]
    NotFound(String, String),
    /// Another process holds the session.
    #[error("session {0:?} is open in another codesmith process; close it first")]
    Busy(String),
    /// The file exists but has no meta line.
    #[error("session file {0} is not a CodeSmith session (no meta line)")]
    Corrupt(String),
    /// An I/O failure.
    #[error("session storage failed: {0}")]
    Io(#[from] std::io::Error),
}

/// An open session: its metadata, its messages, and the file they are appended to.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    file: File,
    meta: Record,
    messages: Vec<Message>,
}

/// The directory holding session files for `home`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

impl Session {
    /// Creates a new session under `home` and writes its meta line.
    ///
    /// # Errors
    /// [`SessionError::Io`] when the directory or file cannot be created.
    pub fn create(
        home: &Path,
        workspace: &Path,
        provider: &str,
        model: &str,
    ) -> Result<Self, SessionError> {
        let dir = sessions_dir(home);
        codesmith_tools::private::create_dir_all(&dir)?;
        let created_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let id = new_session_id();
        let path = dir.join(format!("{id}.jsonl"));
        let file = codesmith_tools::private::open_options()
            .create_new(true)
            .append(true)
            .open(&path)?;
        lock(&file, &id)?;
        let meta = Record::Meta {
            session_id: id.clone(),
            created_at,
            workspace: workspace.display().to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
        };
        let mut session = Session {
            id,
            path,
            file,
            meta: meta.clone(),
            messages: Vec::new(),
        };
        session.write(&meta)?;
        Ok(session)
    }

    /// Opens an existing session for appending, loading its messages.
    ///
    /// # Errors
    /// [`SessionError::InvalidId`], [`SessionError::NotFound`], [`SessionError::Busy`],
    /// [`SessionError::Corrupt`] or [`SessionError::Io`].
    pub fn open(home: &Path, id: &str) -> Result<Self, SessionError> {
        if !codesmith_policy::is_safe_name(id) {
            return Err(SessionError::InvalidId(id.to_string()));
        }
        let dir = sessions_dir(home);
        let path = dir.join(format!("{id}.jsonl"));
        if !path.is_file() {
            return Err(SessionError::NotFound(
                id.to_string(),
                dir.display().to_string(),
            ));
        }
        let file = OpenOptions::new().read(true).append(true).open(&path)?;
        lock(&file, id)?;
        let records = read_records(&path)?;
        let meta = records
            .iter()
            .find(|r| matches!(r, Record::Meta { .. }))
            .cloned()
            .ok_or_else(|| SessionError::Corrupt(path.display().to_string()))?;
        let mut messages = Vec::new();
        for record in records {
            match record {
                Record::Message { message } => messages.push(message),
                Record::Compaction {
                    messages: replaced, ..
                } => messages = replaced,
                Record::Meta { .. } | Record::Note { .. } => {}
            }
        }
        Ok(Session {
            id: id.to_string(),
            path,
            file,
            meta,
            messages,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The meta record.
    pub fn meta(&self) -> &Record {
        &self.meta
    }

    /// The transcript so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Appends a message to the file (flushed and synced) and to memory.
    ///
    /// # Errors
    /// [`SessionError::Io`]; the message is then not added in memory either.
    pub fn push(&mut self, message: Message) -> Result<(), SessionError> {
        let record = Record::Message { message };
        self.write(&record)?;
        if let Record::Message { message } = record {
            self.messages.push(message);
        }
        Ok(())
    }

    /// Replaces the transcript after a context recovery, recording what
    /// replaced it; the earlier lines stay in the file.
    ///
    /// # Errors
    /// [`SessionError::Io`]; the transcript in memory is then unchanged.
    pub fn replace_messages(
        &mut self,
        stage: &str,
        messages: Vec<Message>,
    ) -> Result<(), SessionError> {
        let record = Record::Compaction {
            stage: stage.to_string(),
            messages,
        };
        self.write(&record)?;
        if let Record::Compaction { messages, .. } = record {
            self.messages = messages;
        }
        Ok(())
    }

    /// Appends a note (not part of the transcript the model sees).
    ///
    /// # Errors
    /// [`SessionError::Io`].
    pub fn note(&mut self, kind: &str, data: serde_json::Value) -> Result<(), SessionError> {
        self.write(&Record::Note {
            kind: kind.to_string(),
            data,
        })
    }

    fn write(&mut self, record: &Record) -> Result<(), SessionError> {
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()?;
        Ok(())
    }
}

/// The id of the most recently modified session whose workspace is `workspace`.
pub fn latest_session_for(home: &Path, workspace: &Path) -> Option<String> {
    let want = workspace.display().to_string();
    let mut best: Option<(SystemTime, String)> = None;
    for entry in fs::read_dir(sessions_dir(home)).ok()?.flatten() {
        let path = entry.path();
        let Some(id) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if best.as_ref().is_some_and(|(t, _)| *t >= modified) {
            continue;
        }
        if first_record(&path)
            .is_some_and(|r| matches!(r, Record::Meta { workspace, .. } if workspace == want))
        {
            best = Some((modified, id));
        }
    }
    best.map(|(_, id)| id)
}

/// The provider and model a session was created with, read from its meta
/// line without opening (or locking) it; `None` for an unknown or unsafe id.
pub fn session_model(home: &Path, id: &str) -> Option<(String, String)> {
    if !codesmith_policy::is_safe_name(id) {
        return None;
    }
    match first_record(&sessions_dir(home).join(format!("{id}.jsonl")))? {
        Record::Meta {
            provider, model, ..
        } => Some((provider, model)),
        _ => None,
    }
}

fn first_record(path: &Path) -> Option<Record> {
    let mut line = String::new();
    BufReader::new(File::open(path).ok()?)
        .read_line(&mut line)
        .ok()?;
    serde_json::from_str(&line).ok()
}

/// Reads every parseable record; a torn or malformed line is skipped.
fn read_records(path: &Path) -> Result<Vec<Record>, SessionError> {
    let reader = BufReader::new(File::open(path)?);
    let mut out = Vec::new();
    for line in reader.lines() {
        let line = line?;
        if let Ok(record) = serde_json::from_str(&line) {
            out.push(record);
        }
    }
    Ok(out)
}

fn lock(file: &File, id: &str) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(SessionError::Busy(id.to_string())),
        Err(fs::TryLockError::Error(e)) => Err(SessionError::Io(e)),
    }
}

/// `YYYYMMDD-HHMMSS-xxxxxx`: sortable by time, unique per process and moment.
fn new_session_id() -> String {
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_seconds(now).to_string();
    let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
    let nanos = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let salt = (nanos ^ std::process::id().rotate_left(16)) & 0xff_ffff;
    format!("{}-{}-{salt:06x}", &digits[..8], &digits[8..14])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn session_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let ch = home.path().join("csh");
        let s = Session::create(&ch, Path::new("/work/ws"), "openai", "m").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&ch), 0o700);
        assert_eq!(mode(&sessions_dir(&ch)), 0o700);
        assert_eq!(mode(s.path()), 0o600);
    }

    #[test]
    fn a_session_round_trips_and_survives_a_torn_line() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/work/ws");
        let mut s = Session::create(home.path(), ws, "openai", "m").unwrap();
        s.push(Message::user_text("hello")).unwrap();
        s.push(Message::assistant_text("hi")).unwrap();
        let id = s.id().to_string();
        let path = s.path().to_path_buf();
        drop(s);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"type\":\"message\",\"mess").unwrap();
        let s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages().len(), 2);
        assert_eq!(s.messages()[1].text(), "hi");
        assert_eq!(
            latest_session_for(home.path(), ws).as_deref(),
            Some(id.as_str())
        );
        assert_eq!(latest_session_for(home.path(), Path::new("/other")), None);
    }

    #[test]
    fn a_compaction_replaces_the_transcript_on_load() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        s.push(Message::user_text("old")).unwrap();
        s.replace_messages("summary", vec![Message::user_text("summary")])
            .unwrap();
        s.push(Message::assistant_text("new")).unwrap();
        let id = s.id().to_string();
        drop(s);
        let s = Session::open(home.path(), &id).unwrap();
        let texts: Vec<String> = s.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["summary", "new"]);
    }

    #[test]
    fn an_open_session_cannot_be_opened_twice() {
        let home = tempfile::tempdir().unwrap();
        let s = Session::create(home.path(), Path::new("/w"), "local", "m").unwrap();
        assert!(matches!(
            Session::open(home.path(), s.id()),
            Err(SessionError::Busy(_))
        ));
    }

    #[test]
    fn unsafe_ids_are_refused() {
        let home = tempfile::tempdir().unwrap();
        for id in ["../x", "a/b", ".hidden", ""] {
            assert!(
                matches!(
                    Session::open(home.path(), id),
                    Err(SessionError::InvalidId(_))
                ),
                "{id}"
            );
        }
    }
}
