//! Sessions: the append-only transcript on disk.
//!
//! A session is one JSONL file, `$CODESMITH_HOME/sessions/<id>.jsonl`. Its
//! first line is a [`Record::Meta`]; each later line is a message or a note.
//!
//! Crash safety: every record is one `write(2)` of the whole line (so a killed
//! process leaves at most one torn line, at the end), and the file is fsynced
//! at the end of every model round ([`Session::sync`]) and when the session is
//! dropped. Opening a session repairs what a crash can leave behind before
//! anything is appended: a torn tail (no final newline, or unparseable last
//! lines) is cut back to the last complete record and the cut bytes are kept
//! beside the session as `ID.jsonl.torn`; a line in the middle that is not
//! UTF-8 or not a record is skipped; a whole last record without its newline
//! (an editor's save) is kept, and a byte order mark is ignored. The transcript
//! read back is then mended into one the providers accept (see `well_formed`),
//! so a skipped or repeated line never makes the session impossible to resume;
//! the file itself is not rewritten. Each repair leaves a notice
//! ([`Session::take_notices`]). The file is locked while a process holds the
//! session.
//!
//! A new session is written only when it gets its first message or note: opening a
//! session and leaving without a word leaves no file behind.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use codesmith_protocol::{ContentBlock, Message, Role, ToolResult, Usage};
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
        /// For a subagent's session: the session and the `agent` call that started it;
        /// omitted for a session a person started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<ParentLink>,
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
    /// A non-message fact the model does not see: a task's start, a restore,
    /// a round's usage, a subagent's outcome, an interrupted response.
    Note {
        /// What kind of note.
        kind: NoteKind,
        /// Its content (shape per kind, see [`NoteKind`]).
        data: serde_json::Value,
    },
}

/// What a [`Record::Note`] records. On disk it is the plain string of
/// [`NoteKind::as_str`], as older versions wrote it (only a task start changed its name,
/// and the old name is still read);
/// a kind this version does not know (written by a newer one) reads as
/// [`NoteKind::Other`] and is kept and ignored, never an unreadable line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum NoteKind {
    /// The start of a user task: `{"task": N}`, the task's number in the
    /// session (what `sessions restore` and `/restore` name). Written as `"task"`;
    /// the `"turn"` notes (`{"turn": N}`) of sessions written before tasks had their own
    /// name read as the same kind.
    TaskStart,
    /// A task's snapshot was restored into the workspace: the restore report
    /// plus `at` (RFC 3339) and `workspace`.
    Restore,
    /// One model round's usage: `{"turn", "usage"}`, with `"child_calls": true`
    /// for model requests the tools made; an auxiliary call's (a compaction summary, by the
    /// utility model or the session's) is `{"usage", "utility": true, "model", "purpose"}`.
    Usage,
    /// A subagent the session started: `{"call_id", "agent_id", "agent_type",
    /// "status", "turns", "usage"}`.
    Subagent,
    /// The model's response was cut off: `{"message"}`, the provider's reason.
    ResponseInterrupted,
    /// The model changed its plan: the whole plan, `{"explanation"?, "plan": [{"step",
    /// "status"}]}` (see [`crate::plan::Plan`]); the last one is the session's plan.
    Plan,
    /// What a front end showed that the messages do not hold, so a resumed session shows
    /// it again (see [`crate::replay`]): `{"event": E}`, E a protocol event: a tool
    /// result's typed fields (`summary`, `changes`, `error`; its `output` left empty, as
    /// the result message holds it) or a claim verifier's verdict.
    Shown,
    /// A kind this version does not know, kept as read.
    Other(String),
}

impl NoteKind {
    /// The on-disk string of [`NoteKind::TaskStart`].
    pub const TASK_START: &str = "task";
    /// What sessions written before tasks had their own name called [`NoteKind::TaskStart`]
    /// (`{"turn": N}`): still read as a task's start, so those sessions restore as before.
    pub const LEGACY_TASK_START: &str = "turn";
    /// The on-disk string of [`NoteKind::Restore`].
    pub const RESTORE: &str = "restore";
    /// The on-disk string of [`NoteKind::Usage`].
    pub const USAGE: &str = "usage";
    /// The on-disk string of [`NoteKind::Subagent`].
    pub const SUBAGENT: &str = "subagent";
    /// The on-disk string of [`NoteKind::ResponseInterrupted`].
    pub const RESPONSE_INTERRUPTED: &str = "response_interrupted";
    /// The on-disk string of [`NoteKind::Plan`].
    pub const PLAN: &str = "plan";
    /// The on-disk string of [`NoteKind::Shown`].
    pub const SHOWN: &str = "shown";

    /// The string written to the session file.
    pub fn as_str(&self) -> &str {
        match self {
            NoteKind::TaskStart => Self::TASK_START,
            NoteKind::Restore => Self::RESTORE,
            NoteKind::Usage => Self::USAGE,
            NoteKind::Subagent => Self::SUBAGENT,
            NoteKind::ResponseInterrupted => Self::RESPONSE_INTERRUPTED,
            NoteKind::Plan => Self::PLAN,
            NoteKind::Shown => Self::SHOWN,
            NoteKind::Other(kind) => kind,
        }
    }
}

impl From<String> for NoteKind {
    fn from(kind: String) -> Self {
        match kind.as_str() {
            Self::TASK_START | Self::LEGACY_TASK_START => NoteKind::TaskStart,
            Self::RESTORE => NoteKind::Restore,
            Self::USAGE => NoteKind::Usage,
            Self::SUBAGENT => NoteKind::Subagent,
            Self::RESPONSE_INTERRUPTED => NoteKind::ResponseInterrupted,
            Self::PLAN => NoteKind::Plan,
            Self::SHOWN => NoteKind::Shown,
            _ => NoteKind::Other(kind),
        }
    }
}

impl From<NoteKind> for String {
    fn from(kind: NoteKind) -> Self {
        match kind {
            NoteKind::Other(kind) => kind,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for NoteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a subagent's session came from: the header of a child's session file names its
/// parent, and the parent's transcript names the child (the `agent` result's `agent_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentLink {
    /// The parent's session id.
    pub session_id: String,
    /// The parent's `agent` tool call.
    pub call_id: String,
    /// The subagent type (`general`, `explore`, `plan`, `review`).
    pub agent_type: String,
    /// Depth below the foreground session (1 for its direct child).
    pub depth: u32,
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
    /// A directory, symlink, FIFO or device stands where the session file should be.
    #[error(
        "{0} is not a regular file (a directory, symlink, FIFO or device), so it is not \
         read; if it stands for a session file, put the file itself in its place"
    )]
    NotRegular(String),
    /// The file exists but has no meta line.
    #[error("session file {0} is not a CodeSmith session (no meta line)")]
    Corrupt(String),
    /// A record could not be appended (a full disk, a file size limit); the file was
    /// put back as it was before the attempt.
    #[error(
        "could not append to the session file {path} ({reason}); what was being recorded is \
         not saved there. Free disk space (or raise the file size limit, `ulimit -f`), then \
         resume with --resume: everything recorded before is kept"
    )]
    Unsaved {
        /// The session file.
        path: String,
        /// What the write returned.
        reason: String,
    },
    /// The session is a subagent's: it is continued through its parent (whose transcript
    /// holds the subagent's answer), never resumed as a conversation of its own, which
    /// would run it with the whole tool surface at the top of a new tree.
    #[error(
        "session {id:?} is the session of a {agent_type} subagent started by session \
         {parent:?}: resume {parent} instead (its transcript holds the subagent's answer); the \
         subagent's own transcript can still be read in {path}"
    )]
    Subagent {
        /// The subagent's session id.
        id: String,
        /// Its parent's session id.
        parent: String,
        /// Its type.
        agent_type: String,
        /// Its session file.
        path: String,
    },
    /// An I/O failure.
    #[error("session storage failed: {0}")]
    Io(#[from] std::io::Error),
}

/// An open session: its metadata, its messages, and the file they are appended to.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    /// The open, locked file; `None` for a new session nothing was written to yet.
    file: Option<File>,
    meta: Record,
    messages: Vec<Message>,
    notices: Vec<String>,
    /// The highest task number its task-start notes recorded (0 for a new session).
    tasks: u32,
    /// The plan its last readable plan note recorded.
    plan: Option<crate::plan::Plan>,
}

/// The directory holding session files for `home`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

impl Session {
    /// Creates a new session under `home`, in memory only: the file (with its meta
    /// line) is written when the first message or note arrives
    /// ([`Session::is_saved`]).
    ///
    /// # Errors
    /// None today; the signature keeps [`SessionError`] for the callers' sake.
    pub fn create(
        home: &Path,
        workspace: &Path,
        provider: &str,
        model: &str,
    ) -> Result<Self, SessionError> {
        Self::create_linked(home, workspace, provider, model, None)
    }

    /// [`Session::create`] for a subagent: the header records `parent`.
    ///
    /// # Errors
    /// None today, as [`Session::create`].
    pub fn create_linked(
        home: &Path,
        workspace: &Path,
        provider: &str,
        model: &str,
        parent: Option<ParentLink>,
    ) -> Result<Self, SessionError> {
        let created_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let id = new_session_id();
        let path = sessions_dir(home).join(format!("{id}.jsonl"));
        let meta = Record::Meta {
            session_id: id.clone(),
            created_at,
            workspace: workspace.display().to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            parent,
        };
        Ok(Session {
            id,
            path,
            file: None,
            meta,
            messages: Vec::new(),
            notices: Vec::new(),
            tasks: 0,
            plan: None,
        })
    }

    /// Whether the session is on disk (it has had a message or a note).
    pub fn is_saved(&self) -> bool {
        self.file.is_some()
    }

    /// Creates the session file with its meta line. The meta line is written under a
    /// temporary name, synced, and the file renamed into place, so a session file never
    /// exists without its meta line (a process killed in between leaves only the
    /// temporary file).
    fn create_file(&self) -> Result<File, SessionError> {
        // `path` is always `<sessions dir>/<id>.jsonl`.
        let dir = self.path.parent().unwrap_or(Path::new("."));
        codesmith_tools::private::create_dir_all(dir)?;
        let staging = dir.join(format!(".{}.jsonl.new", self.id));
        let mut file = codesmith_tools::private::open_options()
            .create_new(true)
            .read(true)
            .append(true)
            .open(&staging)?;
        lock(&file, &self.id)?;
        let written =
            write_record(&mut file, &self.path, &self.meta).and_then(|()| Ok(file.sync_data()?));
        if let Err(e) = written {
            let _ = fs::remove_file(&staging);
            return Err(e);
        }
        if self.path.exists() {
            let _ = fs::remove_file(&staging);
            return Err(SessionError::Io(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("session file {} exists already", self.path.display()),
            )));
        }
        fs::rename(&staging, &self.path)?;
        Ok(file)
    }

    /// [`Session::open`] for a front end resuming a conversation (`--resume`, `/resume`):
    /// a subagent's session is refused before anything in its file is touched.
    ///
    /// # Errors
    /// [`SessionError::Subagent`], or as [`Session::open`].
    pub fn resume(home: &Path, id: &str) -> Result<Self, SessionError> {
        if codesmith_policy::is_safe_name(id) {
            let path = sessions_dir(home).join(format!("{id}.jsonl"));
            if let Some(Record::Meta {
                parent: Some(link), ..
            }) = first_record(&path)
            {
                return Err(SessionError::Subagent {
                    id: id.to_string(),
                    parent: link.session_id,
                    agent_type: link.agent_type,
                    path: path.display().to_string(),
                });
            }
        }
        Self::open(home, id)
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
        match fs::symlink_metadata(&path) {
            Err(_) => {
                return Err(SessionError::NotFound(
                    id.to_string(),
                    dir.display().to_string(),
                ));
            }
            Ok(m) if !m.file_type().is_file() => {
                return Err(SessionError::NotRegular(path.display().to_string()));
            }
            Ok(_) => {}
        }
        let mut file = OpenOptions::new().read(true).append(true).open(&path)?;
        lock(&file, id)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let scan = scan_records(&bytes);
        let mut notices = Vec::new();
        if scan.complete_len < bytes.len() {
            let torn = &bytes[scan.complete_len..];
            let torn_path = dir.join(format!("{id}.jsonl.torn"));
            let mut keep = codesmith_tools::private::open_options()
                .create(true)
                .append(true)
                .open(&torn_path)?;
            keep.write_all(torn)?;
            keep.sync_data()?;
            file.set_len(scan.complete_len as u64)?;
            file.seek(SeekFrom::End(0))?;
            file.sync_data()?;
            notices.push(format!(
                "The session file ended in an incomplete record ({} bytes, likely from a crash); \
                 it was cut back to the last complete record and the cut bytes were kept in {}.",
                torn.len(),
                torn_path.display()
            ));
        }
        if scan.unterminated {
            // The next record must start on a line of its own.
            file.write_all(b"\n")?;
            file.sync_data()?;
        }
        if !scan.skipped_lines.is_empty() {
            let lines: Vec<String> = scan.skipped_lines.iter().map(usize::to_string).collect();
            notices.push(format!(
                "Skipped {} unreadable line(s) of the session file (not UTF-8 or not a record): line {}.",
                lines.len(),
                lines.join(", ")
            ));
        }
        let records = scan.records;
        let meta = header(&records, id)
            .ok_or_else(|| SessionError::Corrupt(path.display().to_string()))?;
        if !records.iter().any(|r| matches!(r, Record::Meta { .. })) {
            notices.push(
                "The session file's header line cannot be read, so its workspace, provider and \
                 model are unknown; the messages after it are resumed (pass --workspace, \
                 --provider and --model to choose them)."
                    .to_string(),
            );
        }
        let tasks = records.iter().filter_map(task_number).max().unwrap_or(0);
        let plan = records.iter().rev().find_map(recorded_plan);
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
        let (messages, repairs) = well_formed(messages);
        if repairs > 0 {
            notices.push(format!(
                "The transcript read from the session file was not one the model accepts \
                 (skipped, duplicated or edited lines); {repairs} place(s) were mended in what \
                 is sent (tool results without their call dropped, calls without a result \
                 answered as unknown, answers of the model in a row joined). The file itself \
                 is unchanged."
            ));
        }
        Ok(Session {
            id: id.to_string(),
            path,
            file: Some(file),
            meta,
            messages,
            notices,
            tasks,
            plan,
        })
    }

    /// What opening the session repaired (a torn tail cut, unreadable lines
    /// skipped), as sentences for the user; empty afterwards.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// Answers every tool call of the last message that has no result with an error
    /// result saying `why` (the process that ran it was killed, the turn was
    /// interrupted), so the next request is one the providers accept. Returns true when
    /// it wrote anything.
    ///
    /// # Errors
    /// [`SessionError::Io`].
    pub fn answer_open_calls(&mut self, why: &str) -> Result<bool, SessionError> {
        let dangling: Vec<String> = match self.messages.last() {
            Some(m) if m.role == Role::Assistant => m.tool_calls().map(|c| c.id.clone()).collect(),
            _ => Vec::new(),
        };
        if dangling.is_empty() {
            return Ok(false);
        }
        let content = dangling
            .into_iter()
            .map(|call_id| {
                ContentBlock::ToolResult(ToolResult {
                    call_id,
                    content: format!(
                        "{why} before this tool call finished; it may or may not have run. \
                         Check its effect before repeating it."
                    ),
                    is_error: true,
                })
            })
            .collect();
        self.push(Message {
            role: Role::User,
            content,
        })?;
        Ok(true)
    }

    /// Closes a turn that was interrupted: [`Session::answer_open_calls`], then, when
    /// the transcript ends on a user message, an assistant note saying `why`, so the
    /// interruption is on record. Does nothing on a closed turn. Returns true when it
    /// wrote anything.
    ///
    /// # Errors
    /// [`SessionError::Io`].
    pub fn close_open_turn(&mut self, why: &str) -> Result<bool, SessionError> {
        let mut wrote = self.answer_open_calls(why)?;
        if self.messages.last().is_some_and(|m| m.role == Role::User) {
            self.push(Message::assistant_text(format!(
                "({why} before the model answered this turn.)"
            )))?;
            wrote = true;
        }
        Ok(wrote)
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
    pub fn note(&mut self, kind: NoteKind, data: serde_json::Value) -> Result<(), SessionError> {
        let record = Record::Note { kind, data };
        self.write(&record)?;
        if let Some(task) = task_number(&record) {
            self.tasks = self.tasks.max(task);
        }
        Ok(())
    }

    /// The plan the model last set (`None` before its first `update_plan`); read back from
    /// the session file on resume.
    pub fn plan(&self) -> Option<&crate::plan::Plan> {
        self.plan.as_ref()
    }

    /// Records `plan` as the session's plan (a [`NoteKind::Plan`] note).
    ///
    /// # Errors
    /// [`SessionError::Io`]; the plan in memory is then unchanged.
    pub fn set_plan(&mut self, plan: crate::plan::Plan) -> Result<(), SessionError> {
        let data = serde_json::to_value(&plan).map_err(std::io::Error::other)?;
        self.note(NoteKind::Plan, data)?;
        self.plan = Some(plan);
        Ok(())
    }

    /// The highest task number this session has recorded (its task-start notes, read
    /// when it was opened and written since; 0 for a new session): what numbers the next
    /// task, without reading the file again.
    pub fn recorded_tasks(&self) -> u32 {
        self.tasks
    }

    /// Flushes the file to stable storage (`fsync`). The engine calls it at
    /// the end of every model round; dropping the session calls it too.
    ///
    /// # Errors
    /// [`SessionError::Io`].
    pub fn sync(&mut self) -> Result<(), SessionError> {
        if let Some(file) = &self.file {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Appends one record (see [`write_record`]); the first record of a new session
    /// creates its file first.
    fn write(&mut self, record: &Record) -> Result<(), SessionError> {
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let file = self.create_file()?;
                self.file.insert(file)
            }
        };
        write_record(file, &self.path, record)
    }
}

/// Appends one record as one `write(2)` of the whole line, so a process killed at any
/// moment leaves either the whole line or a torn tail that the next open cuts off. A
/// short write is undone before the error is returned.
fn write_record(file: &mut File, path: &Path, record: &Record) -> Result<(), SessionError> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let before = file.metadata()?.len();
    let reason = match file.write(&line) {
        Ok(written) if written == line.len() => return Ok(()),
        Ok(written) => format!("only {written} of {} bytes were written", line.len()),
        Err(e) => e.to_string(),
    };
    let _ = file.set_len(before);
    Err(SessionError::Unsaved {
        path: path.display().to_string(),
        reason,
    })
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = file.sync_data();
        }
    }
}

/// What [`scan_records`] found in a session file.
#[derive(Debug, Default)]
struct Scan {
    /// Every readable record, in order.
    records: Vec<Record>,
    /// Bytes up to and including the newline of the last readable record.
    complete_len: usize,
    /// 1-based numbers of unreadable lines before that point.
    skipped_lines: Vec<usize>,
    /// The last record has no newline after it (one must be written before the next).
    unterminated: bool,
}

/// One line as a record: UTF-8 JSON of a [`Record`], a leading byte order mark (which
/// some editors add when they save the file) ignored. `None` when it is not one.
fn parse_line(line: &[u8]) -> Option<Record> {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let text = std::str::from_utf8(line).ok()?;
    serde_json::from_str::<Record>(text).ok()
}

/// Splits `bytes` into records (see [`scan_lines`]).
fn scan_records(bytes: &[u8]) -> Scan {
    let mut records = Vec::new();
    let mut reader = bytes;
    // Reading from memory cannot fail.
    let tally =
        scan_lines(&mut reader, usize::MAX, &mut |record| records.push(record)).unwrap_or_default();
    Scan {
        records,
        complete_len: tally.complete_len,
        skipped_lines: tally.skipped_lines,
        unterminated: tally.unterminated,
    }
}

/// What [`scan_lines`] counted besides the records it handed on.
#[derive(Debug, Default)]
struct Tally {
    /// Bytes up to and including the newline of the last readable record.
    complete_len: usize,
    /// 1-based numbers of unreadable lines before that point.
    skipped_lines: Vec<usize>,
    /// The last record has no newline after it.
    unterminated: bool,
    /// Bytes read in all.
    total_len: usize,
}

/// Reads a session file's lines from `reader` one at a time (memory bounded by the
/// longest line, and by `max_line` bytes: a longer line is passed over unread and
/// counts as neither a record nor unreadable) and hands each readable record to
/// `on_record`. Lines after the
/// last readable record (and a last line without its newline) form the torn tail,
/// which lies beyond `complete_len`; unreadable lines before it are listed as
/// skipped. A last line without its newline that is a whole record (a file an
/// editor saved without a final newline) is kept.
fn scan_lines(
    reader: &mut impl BufRead,
    max_line: usize,
    on_record: &mut dyn FnMut(Record),
) -> std::io::Result<Tally> {
    let mut tally = Tally::default();
    let mut unreadable = Vec::new();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        let (read, whole) = read_line_bounded(reader, &mut line, max_line)?;
        if read == 0 {
            break;
        }
        number += 1;
        let end = tally.total_len + read;
        tally.total_len = end;
        let terminated = line.last() == Some(&b'\n');
        let text = if terminated {
            &line[..line.len() - 1]
        } else {
            &line[..]
        };
        if !whole {
            if terminated {
                tally.skipped_lines.append(&mut unreadable);
                tally.complete_len = end;
                continue;
            }
            break;
        }
        match parse_line(text) {
            Some(record) => {
                on_record(record);
                tally.skipped_lines.append(&mut unreadable);
                tally.complete_len = end;
                tally.unterminated = !terminated;
            }
            None if terminated && text.iter().all(u8::is_ascii_whitespace) => {}
            None if terminated => unreadable.push(number),
            None => {}
        }
        if !terminated {
            break;
        }
    }
    Ok(tally)
}

/// The longest line a listing or a count reads from a session file (a
/// [`SessionCatalog`] entry, [`check_session_file`], [`recorded_tasks`],
/// [`recorded_usage`], `--continue`'s search): a longer line (a file grown to a
/// gigabyte without a newline) is passed over without being held in memory.
pub const LISTED_LINE_BYTES: usize = 16 << 20;

/// Reads one line (with its newline, if any) from `reader` into `line`,
/// keeping at most `max` bytes of it; the rest of a longer line is consumed
/// and dropped, so memory stays bounded by `max` whatever the file holds.
/// Returns the bytes consumed (0 at the end) and whether the line was kept
/// whole (a line cut short leaves `line` ending in its newline if it had one).
fn read_line_bounded(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    line.clear();
    let (mut consumed, mut whole) = (0, true);
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((consumed, whole));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        let room = max.saturating_sub(line.len());
        if take <= room {
            line.extend_from_slice(&buf[..take]);
        } else {
            whole = false;
            if done {
                line.push(b'\n');
            }
        }
        reader.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, whole));
        }
    }
}

/// The whole lines of at most [`LISTED_LINE_BYTES`] in a session file, as
/// text; longer lines and lines that are not UTF-8 are passed over (never
/// ending the walk early). A read error ends it.
pub(crate) fn listed_lines(file: File) -> impl Iterator<Item = String> {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    std::iter::from_fn(move || {
        loop {
            let (read, whole) =
                read_line_bounded(&mut reader, &mut line, LISTED_LINE_BYTES).ok()?;
            if read == 0 {
                return None;
            }
            if whole && let Ok(text) = std::str::from_utf8(&line) {
                return Some(text.trim_end_matches('\n').to_string());
            }
        }
    })
}

/// The result given to a tool call whose result is missing from the session file.
const RESULT_UNREADABLE: &str = "The result of this tool call could not be read back from the \
     session file; it may or may not have run. Check its effect before repeating it.";

/// The user message put before a transcript that starts with the model's answer (its
/// first user message could not be read).
const TASK_UNREADABLE: &str =
    "[The beginning of this session could not be read back from the session file.]";

/// Mends a transcript read back from a session file into one the providers accept, and
/// counts the places it changed: skipped, duplicated or hand-edited lines can leave tool
/// results whose call is gone, calls whose results are gone, two answers of the model in
/// a row, or an answer with no question before it, and the providers refuse such a
/// request (so the session could never be resumed). A tool result is kept only in the
/// user message right after the call's assistant message, once; a call left without a
/// result gets an error result saying so (except in the last message, which
/// [`Session::answer_open_calls`] closes); answers of the model in a row are joined; a
/// transcript that starts with the model gets a user message saying its start was lost.
/// User messages in a row stay as they are (the engine writes them itself: a runtime
/// event before the next task). Nothing the user wrote is dropped.
fn well_formed(messages: Vec<Message>) -> (Vec<Message>, usize) {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut repairs = 0;
    for mut message in messages {
        let open: Vec<String> = match out.last() {
            Some(prev) if prev.role == Role::Assistant => {
                prev.tool_calls().map(|c| c.id.clone()).collect()
            }
            _ => Vec::new(),
        };
        match message.role {
            Role::User => {
                let mut answered = std::collections::HashSet::new();
                let before = message.content.len();
                message.content.retain(|block| match block {
                    ContentBlock::ToolResult(r) => {
                        open.contains(&r.call_id) && answered.insert(r.call_id.clone())
                    }
                    _ => true,
                });
                if message.content.len() != before {
                    repairs += 1;
                }
                let missing: Vec<ContentBlock> = open
                    .iter()
                    .filter(|id| !answered.contains(*id))
                    .map(|id| unreadable_result(id))
                    .collect();
                if !missing.is_empty() {
                    repairs += 1;
                    message.content.splice(0..0, missing);
                }
                if !message.content.is_empty() {
                    out.push(message);
                }
            }
            Role::Assistant => {
                if !open.is_empty() {
                    repairs += 1;
                    out.push(Message {
                        role: Role::User,
                        content: open.iter().map(|id| unreadable_result(id)).collect(),
                    });
                    out.push(message);
                    continue;
                }
                match out.last_mut() {
                    Some(prev) if prev.role == Role::Assistant => {
                        repairs += 1;
                        prev.content.append(&mut message.content);
                    }
                    Some(_) => out.push(message),
                    None => {
                        repairs += 1;
                        out.push(Message::user_text(TASK_UNREADABLE));
                        out.push(message);
                    }
                }
            }
        }
    }
    (out, repairs)
}

fn unreadable_result(call_id: &str) -> ContentBlock {
    ContentBlock::ToolResult(ToolResult {
        call_id: call_id.to_string(),
        content: RESULT_UNREADABLE.to_string(),
        is_error: true,
    })
}

/// How much of a session file the catalogue reads to describe it: the header
/// line and the first user message must lie within this many bytes, so listing
/// a directory of huge sessions reads a bounded amount of each.
pub const CATALOG_PREFIX_BYTES: u64 = 64 * 1024;

/// A session's header (its [`Record::Meta`]) as the catalogue reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionMeta {
    /// Session id (the file name without `.jsonl`).
    pub id: String,
    /// RFC 3339 UTC creation time; empty when the header line cannot be read.
    pub created_at: String,
    /// Canonical workspace path; empty when unknown.
    pub workspace: String,
    /// Provider name; empty when unknown.
    pub provider: String,
    /// Model name; empty when unknown.
    pub model: String,
    /// For a subagent's session: the session and the call that started it.
    pub parent: Option<ParentLink>,
}

impl SessionMeta {
    fn from_record(id: &str, record: Record) -> Option<Self> {
        match record {
            Record::Meta {
                created_at,
                workspace,
                provider,
                model,
                parent,
                ..
            } => Some(SessionMeta {
                id: id.to_string(),
                created_at,
                workspace,
                provider,
                model,
                parent,
            }),
            _ => None,
        }
    }

    /// True for a session a person started (not a subagent's).
    pub fn is_foreground(&self) -> bool {
        self.parent.is_none()
    }
}

/// One session file the catalogue found, described from the first
/// [`CATALOG_PREFIX_BYTES`] of the file and its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    /// The header. When the header line cannot be read but a message within the
    /// prefix can, a stand-in with the id and empty strings (the session can still
    /// be resumed, see [`Session::open`]).
    pub meta: SessionMeta,
    /// The session file.
    pub path: PathBuf,
    /// When the file was last written (the file system's modification time).
    pub updated: Option<SystemTime>,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The first line of the first user message, when it lies within the prefix.
    pub first_line: Option<String>,
}

/// A `.jsonl` file in the sessions directory that the catalogue cannot list, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The file name.
    pub file: String,
    /// Why it cannot be listed (nor resumed).
    pub reason: String,
}

/// What [`SessionCatalog::list`] found: the sessions, newest first (by creation
/// time, then id), and the files that could not be read. Nothing in the
/// directory is dropped without a word.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    /// The sessions, newest first.
    pub sessions: Vec<CatalogEntry>,
    /// Session files that could not be read, by file name.
    pub unreadable: Vec<Unreadable>,
}

/// The sessions under a CodeSmith home, read without opening, locking or
/// repairing them: the one place that lists session files, finds the latest
/// one for a workspace and reads a session's header. Only `*.jsonl` files are
/// session files (a kept `ID.jsonl.torn` is not). A file that is not a regular
/// file, has an unsafe name or no readable header is reported as
/// [`Unreadable`], never a failure of the listing.
#[derive(Debug, Clone)]
pub struct SessionCatalog {
    dir: PathBuf,
}

impl SessionCatalog {
    /// The catalogue of `home`'s sessions directory ([`sessions_dir`]).
    pub fn new(home: &Path) -> Self {
        SessionCatalog {
            dir: sessions_dir(home),
        }
    }

    /// The sessions directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every session file, newest first, and the files that could not be read.
    /// A missing directory is an empty catalogue.
    pub fn list(&self) -> Catalog {
        let mut catalog = Catalog::default();
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return catalog;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            match describe(&path) {
                Ok(found) => catalog.sessions.push(found),
                Err(reason) => catalog.unreadable.push(Unreadable {
                    file: entry.file_name().to_string_lossy().into_owned(),
                    reason,
                }),
            }
        }
        catalog.sessions.sort_by(|a, b| {
            b.meta
                .created_at
                .cmp(&a.meta.created_at)
                .then_with(|| b.meta.id.cmp(&a.meta.id))
        });
        catalog.unreadable.sort_by(|a, b| a.file.cmp(&b.file));
        catalog
    }

    /// The header of session `id`, read from its first line without opening
    /// (or locking) the session; `None` for an unknown or unsafe id or a file
    /// without a readable header line.
    pub fn meta(&self, id: &str) -> Option<SessionMeta> {
        if !codesmith_policy::is_safe_name(id) {
            return None;
        }
        let record = first_record(&self.dir.join(format!("{id}.jsonl")))?;
        SessionMeta::from_record(id, record)
    }

    /// The id of the most recently modified session whose workspace is
    /// `workspace` and that holds a conversation (at least one message); sessions
    /// left empty and subagents' sessions (their header names a parent) are
    /// skipped.
    pub fn latest_for(&self, workspace: &Path) -> Option<String> {
        let want = workspace.display().to_string();
        let mut candidates: Vec<CatalogEntry> = self
            .list()
            .sessions
            .into_iter()
            .filter(|s| s.meta.workspace == want && s.meta.is_foreground())
            .collect();
        candidates.sort_by(|a, b| {
            b.updated
                .cmp(&a.updated)
                .then_with(|| b.meta.id.cmp(&a.meta.id))
        });
        candidates
            .into_iter()
            .find(|s| has_conversation(&s.path))
            .map(|s| s.meta.id)
    }
}

/// A catalogue entry for the file at `path`, or why it cannot be listed.
fn describe(path: &Path) -> Result<CatalogEntry, String> {
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|id| codesmith_policy::is_safe_name(id))
        .ok_or("the name is not a session id (letters, digits, '-', '_' and '.')")?;
    let file = open_session_file(path).ok_or_else(|| FileProblem::NotRegular.to_string())?;
    let stat = file
        .metadata()
        .map_err(|e| FileProblem::Io(e).to_string())?;
    let mut prefix = Vec::new();
    file.take(CATALOG_PREFIX_BYTES)
        .read_to_end(&mut prefix)
        .map_err(|e| FileProblem::Io(e).to_string())?;
    // Only whole lines count: the prefix may end in the middle of one.
    let whole = if (prefix.len() as u64) < CATALOG_PREFIX_BYTES {
        prefix.len()
    } else {
        prefix
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |nl| nl + 1)
    };
    let records: Vec<Record> = prefix[..whole]
        .split(|&b| b == b'\n')
        .filter_map(parse_line)
        .collect();
    let meta = header(&records, id)
        .and_then(|record| SessionMeta::from_record(id, record))
        .ok_or_else(|| FileProblem::NoHeader.to_string())?;
    let first_line = records.iter().find_map(|r| match r {
        Record::Message { message } if message.role == Role::User => {
            message.text().lines().next().map(str::to_string)
        }
        _ => None,
    });
    Ok(CatalogEntry {
        meta,
        path: path.to_path_buf(),
        updated: stat.modified().ok(),
        bytes: stat.len(),
        first_line,
    })
}

/// The highest task number recorded in a session file by
/// [`NoteKind::TaskStart`] notes (0 when none). The file is streamed line by
/// line (only lines naming a note are parsed); unreadable lines are skipped.
pub fn recorded_tasks(session_file: &Path) -> u32 {
    let Some(file) = open_session_file(session_file) else {
        return 0;
    };
    listed_lines(file)
        .filter(|line| line.contains("\"note\""))
        .filter_map(|line| serde_json::from_str::<Record>(&line).ok())
        .filter_map(|record| task_number(&record))
        .max()
        .unwrap_or(0)
}

/// The task number a [`NoteKind::TaskStart`] note records (`{"task": N}`, or older
/// sessions' `{"turn": N}`); `None` for any other record. A number no task can have is
/// unreadable too: taken as the highest, it would restart the count (or pin it), and new
/// tasks would reuse old tasks' numbers.
fn task_number(record: &Record) -> Option<u32> {
    let Record::Note {
        kind: NoteKind::TaskStart,
        data,
    } = record
    else {
        return None;
    };
    let n = data
        .get("task")
        .or_else(|| data.get("turn"))
        .and_then(serde_json::Value::as_u64)?;
    u32::try_from(n).ok().filter(|&t| t < u32::MAX)
}

/// Whether the session file holds at least one message (directly or in a compaction).
fn has_conversation(path: &Path) -> bool {
    let Some(file) = open_session_file(path) else {
        return false;
    };
    listed_lines(file).any(|line| match serde_json::from_str::<Record>(&line) {
        Ok(Record::Message { .. }) => true,
        Ok(Record::Compaction { messages, .. }) => !messages.is_empty(),
        _ => false,
    })
}

/// The plan a [`NoteKind::Plan`] note records, if it is well formed.
pub(crate) fn recorded_plan(record: &Record) -> Option<crate::plan::Plan> {
    match record {
        Record::Note {
            kind: NoteKind::Plan,
            data,
        } => serde_json::from_value(data.clone()).ok(),
        _ => None,
    }
}

/// The round's usage a [`NoteKind::Usage`] note carries, if it is well formed.
fn note_usage(data: &serde_json::Value) -> Option<Usage> {
    serde_json::from_value(data.get("usage")?.clone()).ok()
}

/// The usage a session file records: the sum over its model rounds (and its subagents'),
/// and the last round's (whose input plus output is how full the context was). Zero and `None` for
/// a session that recorded none (or a file that cannot be read).
pub fn recorded_usage(session_file: &Path) -> (Usage, Option<Usage>) {
    let mut total = Usage::default();
    let mut last = None;
    let Some(file) = open_session_file(session_file) else {
        return (total, last);
    };
    for line in listed_lines(file) {
        if !line.contains(NoteKind::USAGE) {
            continue;
        }
        let Ok(Record::Note { kind, data }) = serde_json::from_str(&line) else {
            continue;
        };
        let Some(usage) = note_usage(&data) else {
            continue;
        };
        if kind == NoteKind::Usage {
            total.add(&usage);
            // Child calls (tools' own model requests) and auxiliary calls (a compaction
            // summary) say nothing about how full the session's context is.
            if data.get("child_calls").is_none() && data.get("utility").is_none() {
                last = Some(usage);
            }
        } else if kind == NoteKind::Subagent {
            // A child's rounds cost too; they say nothing about this context's fill.
            total.add(&usage);
        }
    }
    (total, last)
}

/// Opens a session file for reading only when it is a regular file, not a symlink:
/// a `.jsonl` link to `/dev/zero` or a FIFO in the sessions directory must not make a
/// listing read forever or without bound. `None` for anything else.
pub fn open_session_file(path: &Path) -> Option<File> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let file = File::open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// A session file as a listing sees it: read without opening, locking or repairing it
/// (the repair happens when the session is resumed, see [`Session::open`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    /// The session's header ([`Record::Meta`]).
    pub meta: Record,
    /// Message records.
    pub messages: usize,
    /// 1-based numbers of unreadable lines (not UTF-8 or not a record) that a resume skips.
    pub skipped_lines: Vec<usize>,
    /// Bytes of a torn tail (an incomplete last record) that a resume cuts back and keeps
    /// in `ID.jsonl.torn`.
    pub torn_bytes: usize,
    /// The model rounds' usage, summed from the transcript's usage notes.
    pub usage: codesmith_protocol::Usage,
}

/// Why a session file cannot be listed or resumed.
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    /// A symlink, FIFO, device or directory in place of the file.
    #[error("not a regular file")]
    NotRegular,
    /// Reading it failed.
    #[error("cannot be read: {0}")]
    Io(std::io::Error),
    /// No readable session header in it.
    #[error("no readable session header")]
    NoHeader,
}

/// Checks the session file at `path` the way [`Session::open`] reads it.
///
/// # Errors
/// [`FileProblem`] when it is not a regular file, cannot be read, or holds no session
/// header (such a session cannot be resumed).
pub fn check_session_file(path: &Path) -> Result<FileCheck, FileProblem> {
    let file = open_session_file(path).ok_or(FileProblem::NotRegular)?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let mut meta = None;
    let mut messages = 0;
    let mut replaced = false;
    let mut usage = codesmith_protocol::Usage::default();
    // Streamed: a listing holds one line of the file at a time, never the whole file.
    let tally = scan_lines(
        &mut BufReader::new(file),
        LISTED_LINE_BYTES,
        &mut |record| match record {
            Record::Meta { .. } if meta.is_none() => meta = Some(record),
            Record::Message { .. } => messages += 1,
            Record::Compaction { .. } => replaced = true,
            Record::Note {
                kind: NoteKind::Usage,
                data,
            } => {
                if let Some(round) = note_usage(&data) {
                    usage.add(&round);
                }
            }
            _ => {}
        },
    )
    .map_err(FileProblem::Io)?;
    let meta = header_from(meta, messages > 0 || replaced, id).ok_or(FileProblem::NoHeader)?;
    Ok(FileCheck {
        meta,
        messages,
        skipped_lines: tally.skipped_lines,
        torn_bytes: tally.total_len - tally.complete_len,
        usage,
    })
}

/// The session's header: its meta record, or, when that line cannot be read but messages
/// can, a stand-in with the id and nothing else known (empty strings), so an unreadable
/// first line never costs the messages after it. `None` when there is neither.
fn header(records: &[Record], id: &str) -> Option<Record> {
    let meta = records
        .iter()
        .find(|r| matches!(r, Record::Meta { .. }))
        .cloned();
    let talked = records
        .iter()
        .any(|r| matches!(r, Record::Message { .. } | Record::Compaction { .. }));
    header_from(meta, talked, id)
}

/// [`header`] from the first meta record and whether any message or compaction
/// was read.
fn header_from(meta: Option<Record>, talked: bool, id: &str) -> Option<Record> {
    if meta.is_some() {
        return meta;
    }
    talked.then(|| Record::Meta {
        session_id: id.to_string(),
        created_at: String::new(),
        workspace: String::new(),
        provider: String::new(),
        model: String::new(),
        parent: None,
    })
}

fn first_record(path: &Path) -> Option<Record> {
    let mut line = Vec::new();
    let mut reader = BufReader::new(open_session_file(path)?);
    let (_, whole) = read_line_bounded(&mut reader, &mut line, LISTED_LINE_BYTES).ok()?;
    parse_line(line.strip_suffix(b"\n").unwrap_or(&line)).filter(|_| whole)
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
    fn note_kinds_keep_their_strings_on_disk_and_unknown_kinds_survive() {
        for (line, kind) in [
            (
                r#"{"type":"note","kind":"task","data":{"task":3}}"#,
                NoteKind::TaskStart,
            ),
            (
                r#"{"type":"note","kind":"restore","data":{}}"#,
                NoteKind::Restore,
            ),
            (
                r#"{"type":"note","kind":"usage","data":{}}"#,
                NoteKind::Usage,
            ),
            (
                r#"{"type":"note","kind":"subagent","data":{}}"#,
                NoteKind::Subagent,
            ),
            (
                r#"{"type":"note","kind":"response_interrupted","data":{}}"#,
                NoteKind::ResponseInterrupted,
            ),
            (
                r#"{"type":"note","kind":"verdict_v9","data":{"x":1}}"#,
                NoteKind::Other("verdict_v9".into()),
            ),
        ] {
            let record: Record = serde_json::from_str(line).unwrap();
            assert!(
                matches!(&record, Record::Note { kind: k, .. } if *k == kind),
                "{line}"
            );
            // Written back byte for byte as older versions wrote it.
            assert_eq!(serde_json::to_string(&record).unwrap(), line);
        }
        // Older sessions named a task start "turn": read as the same kind, written back
        // under its name.
        let task: Record =
            serde_json::from_str(r#"{"type":"note","kind":"turn","data":{"turn":1}}"#).unwrap();
        let Record::Note { kind, .. } = &task else {
            panic!("{task:?}");
        };
        assert_eq!(*kind, NoteKind::TaskStart);
        assert!(
            serde_json::to_string(&task)
                .unwrap()
                .contains(r#""kind":"task""#)
        );
    }

    #[test]
    fn an_open_session_knows_its_task_count_without_reading_the_file_again() {
        let notes = concat!(
            r#"{"type":"note","kind":"turn","data":{"turn":2}}"#,
            "\n",
            r#"{"type":"note","kind":"task","data":{"task":4294967295}}"#,
            "\n",
            r#"{"type":"note","kind":"task","data":{"task":3}}"#,
            "\n",
        );
        let (home, id, path) =
            session_with_lines(&[&line(Message::user_text("hi")), notes.as_bytes()]);
        let mut session = Session::open(home.path(), &id).unwrap();
        assert_eq!(session.recorded_tasks(), 3);
        assert_eq!(session.recorded_tasks(), recorded_tasks(&path));
        session
            .note(NoteKind::TaskStart, serde_json::json!({"task": 4}))
            .unwrap();
        assert_eq!(session.recorded_tasks(), 4);
        drop(session);
        assert_eq!(recorded_tasks(&path), 4);
    }

    #[test]
    fn a_session_with_an_unknown_note_kind_still_opens() {
        let (home, id, _path) = session_with_lines(&[
            &line(Message::user_text("hi")),
            b"{\"type\":\"note\",\"kind\":\"from_the_future\",\"data\":[1,2]}\n",
            &line(Message::assistant_text("hello")),
        ]);
        let s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages().len(), 2);
        assert!(s.notices.is_empty(), "{:?}", s.notices);
    }

    #[test]
    fn child_call_usage_counts_in_the_total_but_is_not_the_context_fill() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/work/ws"), "openai", "m").unwrap();
        s.push(Message::user_text("hi")).unwrap();
        let usage = |input| Usage {
            input_tokens: input,
            ..Usage::default()
        };
        s.note(
            NoteKind::Usage,
            serde_json::json!({"turn": 1, "usage": usage(100)}),
        )
        .unwrap();
        s.note(
            NoteKind::Usage,
            serde_json::json!({"turn": 1, "usage": usage(5_000), "child_calls": true}),
        )
        .unwrap();
        s.sync().unwrap();
        let (total, last) = recorded_usage(s.path());
        assert_eq!(total.input_tokens, 5_100);
        assert_eq!(last.map(|u| u.input_tokens), Some(100));
    }

    #[test]
    fn session_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let ch = home.path().join("csh");
        let mut s = Session::create(&ch, Path::new("/work/ws"), "openai", "m").unwrap();
        // The file is created with the first message.
        s.push(Message::user_text("hi")).unwrap();
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
            SessionCatalog::new(home.path()).latest_for(ws).as_deref(),
            Some(id.as_str())
        );
        assert_eq!(
            SessionCatalog::new(home.path()).latest_for(Path::new("/other")),
            None
        );
    }

    /// The torn tail is cut before anything is appended, so the next record
    /// starts on its own line instead of being glued to the fragment.
    #[test]
    fn a_torn_tail_is_cut_and_kept_before_the_next_append() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        s.push(Message::user_text("task")).unwrap();
        s.push(Message::assistant_text("answer")).unwrap();
        let (id, path) = (s.id().to_string(), s.path().to_path_buf());
        drop(s);
        let fragment = b"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"cont";
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(fragment)
            .unwrap();
        let mut s = Session::open(home.path(), &id).unwrap();
        let notices = s.take_notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("cut back"), "{notices:?}");
        let torn = home.path().join(format!("sessions/{id}.jsonl.torn"));
        assert_eq!(fs::read(&torn).unwrap(), fragment);
        s.push(Message::user_text("next task")).unwrap();
        drop(s);
        let s = Session::open(home.path(), &id).unwrap();
        let texts: Vec<String> = s.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["task", "answer", "next task"]);
        assert!(fs::read_to_string(&path).unwrap().ends_with('\n'));
    }

    #[test]
    fn a_torn_utf8_sequence_at_the_tail_does_not_stop_the_resume() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        s.push(Message::user_text("读取文件")).unwrap();
        let (id, path) = (s.id().to_string(), s.path().to_path_buf());
        drop(s);
        let mut tail = b"{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"".to_vec();
        tail.extend_from_slice(&"世".as_bytes()[..2]);
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&tail)
            .unwrap();
        let mut s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages().len(), 1);
        assert_eq!(s.messages()[0].text(), "读取文件");
        assert_eq!(s.take_notices().len(), 1);
    }

    #[test]
    fn unreadable_lines_in_the_middle_are_skipped_with_a_notice() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        s.push(Message::user_text("one")).unwrap();
        let (id, path) = (s.id().to_string(), s.path().to_path_buf());
        drop(s);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"\xff\xfe not utf-8\n{\"not\": \"a record\"}\n")
            .unwrap();
        let mut two = serde_json::to_vec(&Record::Message {
            message: Message::assistant_text("two"),
        })
        .unwrap();
        two.push(b'\n');
        f.write_all(&two).unwrap();
        drop(f);
        let mut s = Session::open(home.path(), &id).unwrap();
        let texts: Vec<String> = s.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["one", "two"]);
        let notices = s.take_notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("line 3, 4"), "{notices:?}");
    }

    /// A session file with the given lines after its meta line; returns home and id.
    fn session_with_lines(lines: &[&[u8]]) -> (tempfile::TempDir, String, PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        // A session's file is written with its first record.
        s.note(NoteKind::Other("start".into()), serde_json::json!({}))
            .unwrap();
        let (id, path) = (s.id().to_string(), s.path().to_path_buf());
        drop(s);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        for line in lines {
            f.write_all(line).unwrap();
        }
        (home, id, path)
    }

    fn line(message: Message) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&Record::Message { message }).unwrap();
        bytes.push(b'\n');
        bytes
    }

    /// The first message is the user's, the model never speaks twice in a row, every tool
    /// result answers a call of the message right before it, once, and every call but the
    /// last message's is answered: what the providers require.
    fn assert_providers_accept(messages: &[Message]) {
        assert_eq!(messages.first().map(|m| m.role), Some(Role::User));
        for pair in messages.windows(2) {
            assert!(
                pair[0].role == Role::User || pair[1].role == Role::User,
                "{messages:#?}"
            );
            let calls: Vec<&str> = pair[0].tool_calls().map(|c| c.id.as_str()).collect();
            let results: Vec<&str> = pair[1]
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r.call_id.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(calls, results, "{messages:#?}");
        }
    }

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(codesmith_protocol::ToolCall {
                id: id.into(),
                name: "exec_shell".into(),
                arguments: "{}".into(),
            })],
        }
    }

    fn result(id: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                call_id: id.into(),
                content: "ok".into(),
                is_error: false,
            })],
        }
    }

    #[test]
    fn a_transcript_broken_by_skipped_or_repeated_lines_is_mended_without_losing_user_text() {
        let (home, id, _) = session_with_lines(&[
            // The task, then its answer unreadable: two user messages in a row.
            &line(Message::user_text("ticket QX-77: fix the parser")),
            b"{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"con\xc3\n",
            &line(Message::user_text("and keep the old API")),
            // A call whose result line is gone, then the model speaks again.
            &line(call("k1")),
            &line(Message::assistant_text("done with k1")),
            // A result repeated, a result of a call that is not there.
            &line(Message::user_text("next: add a test")),
            &line(call("k2")),
            &line(result("k2")),
            &line(result("k2")),
            &line(result("ghost")),
            &line(Message::assistant_text("test added")),
            &line(Message::assistant_text("test added")),
        ]);
        let mut s = Session::open(home.path(), &id).unwrap();
        assert_providers_accept(s.messages());
        let all: String = s.messages().iter().map(Message::text).collect();
        for said in ["ticket QX-77", "keep the old API", "next: add a test"] {
            assert!(all.contains(said), "{said} lost: {:#?}", s.messages());
        }
        let notices = s.take_notices().join("\n");
        assert!(notices.contains("mended"), "{notices}");
    }

    #[test]
    fn a_transcript_whose_first_message_is_unreadable_still_starts_with_the_user() {
        let (home, id, _) = session_with_lines(&[
            b"\0\0\0\0\0\0\n",
            &line(Message::assistant_text("the answer")),
            &line(Message::user_text("thanks, now the docs")),
        ]);
        let s = Session::open(home.path(), &id).unwrap();
        assert_providers_accept(s.messages());
        assert_eq!(s.messages().last().unwrap().text(), "thanks, now the docs");
    }

    #[test]
    fn a_whole_last_record_without_its_newline_is_kept() {
        let last = line(Message::assistant_text("kept answer"));
        let (home, id, path) =
            session_with_lines(&[&line(Message::user_text("q")), &last[..last.len() - 1]]);
        let mut s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages().last().unwrap().text(), "kept answer");
        s.push(Message::user_text("follow-up")).unwrap();
        drop(s);
        let s = Session::open(home.path(), &id).unwrap();
        let texts: Vec<String> = s.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["q", "kept answer", "follow-up"]);
        assert!(!path.with_extension("jsonl.torn").exists());
    }

    #[test]
    fn a_byte_order_mark_before_the_header_does_not_lose_the_session() {
        let (home, id, path) = session_with_lines(&[&line(Message::user_text("hello"))]);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, [b"\xef\xbb\xbf".as_slice(), &bytes].concat()).unwrap();
        assert!(check_session_file(&path).is_ok());
        assert_eq!(
            SessionCatalog::new(home.path()).meta(&id).unwrap().model,
            "m"
        );
        assert_eq!(
            SessionCatalog::new(home.path())
                .latest_for(Path::new("/w"))
                .as_deref(),
            Some(id.as_str())
        );
        let s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages()[0].text(), "hello");
    }

    #[test]
    fn an_unreadable_header_line_does_not_cost_the_messages_after_it() {
        let (home, id, path) = session_with_lines(&[
            &line(Message::user_text("REQ-9 migrate the db")),
            &line(Message::assistant_text("migrated")),
        ]);
        let bytes = fs::read(&path).unwrap();
        let header_len = bytes.iter().position(|&b| b == b'\n').unwrap();
        let mut broken = vec![0u8; header_len];
        broken.extend_from_slice(&bytes[header_len..]);
        fs::write(&path, broken).unwrap();
        let check = check_session_file(&path).unwrap();
        assert_eq!(check.messages, 2);
        let mut s = Session::open(home.path(), &id).unwrap();
        assert_eq!(s.messages()[0].text(), "REQ-9 migrate the db");
        assert!(s.take_notices().join(" ").contains("header line"));
        drop(s);
        // A file with no record at all is still not a session.
        fs::write(&path, b"\0\0\n").unwrap();
        assert!(matches!(
            Session::open(home.path(), &id),
            Err(SessionError::Corrupt(_))
        ));
    }

    #[test]
    fn a_directory_in_place_of_the_file_is_named_as_such() {
        let (home, id, path) = session_with_lines(&[]);
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let err = Session::open(home.path(), &id).unwrap_err();
        assert!(matches!(err, SessionError::NotRegular(_)), "{err}");
    }

    #[test]
    fn an_open_turn_is_closed_so_roles_alternate() {
        let home = tempfile::tempdir().unwrap();
        let mut s = Session::create(home.path(), Path::new("/w"), "openai", "m").unwrap();
        s.push(Message::user_text("task")).unwrap();
        s.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(codesmith_protocol::ToolCall {
                id: "c1".into(),
                name: "exec_shell".into(),
                arguments: "{}".into(),
            })],
        })
        .unwrap();
        assert!(s.close_open_turn("CodeSmith stopped").unwrap());
        let roles: Vec<Role> = s.messages().iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::User, Role::Assistant]
        );
        assert!(
            matches!(&s.messages()[2].content[0], ContentBlock::ToolResult(r) if r.call_id == "c1" && r.is_error)
        );
        assert!(!s.close_open_turn("again").unwrap());
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
        let mut s = Session::create(home.path(), Path::new("/w"), "local", "m").unwrap();
        s.push(Message::user_text("hi")).unwrap();
        assert!(matches!(
            Session::open(home.path(), s.id()),
            Err(SessionError::Busy(_))
        ));
    }

    #[test]
    fn an_empty_session_is_never_written_and_never_resumed() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/w");
        let mut talked = Session::create(home.path(), ws, "openai", "m").unwrap();
        talked.push(Message::user_text("a real question")).unwrap();
        let talked_id = talked.id().to_string();
        drop(talked);
        std::thread::sleep(std::time::Duration::from_millis(20));
        // Opened and left without a word: nothing on disk.
        let empty = Session::create(home.path(), ws, "openai", "m").unwrap();
        assert!(!empty.is_saved());
        let empty_path = empty.path().to_path_buf();
        drop(empty);
        assert!(!empty_path.exists());
        // An empty file left by an older version, newer than the conversation: skipped.
        let old_style = sessions_dir(home.path()).join("20991231-000000-000000.jsonl");
        fs::write(
            &old_style,
            r#"{"type":"meta","session_id":"20991231-000000-000000","created_at":"2099-12-31T00:00:00Z","workspace":"/w","provider":"openai","model":"m"}"#.to_string() + "\n",
        )
        .unwrap();
        assert_eq!(
            SessionCatalog::new(home.path()).latest_for(ws).as_deref(),
            Some(talked_id.as_str())
        );
        // A note alone (a session that only recorded a turn number) is no conversation either.
        let mut noted = Session::create(home.path(), ws, "openai", "m").unwrap();
        noted
            .note(NoteKind::TaskStart, serde_json::json!({"turn": 1}))
            .unwrap();
        assert!(noted.is_saved());
        drop(noted);
        assert_eq!(
            SessionCatalog::new(home.path()).latest_for(ws).as_deref(),
            Some(talked_id.as_str())
        );
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

    #[test]
    fn a_session_file_that_is_a_link_or_device_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("x.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(open_session_file(&link).is_none());
        assert!(first_record(&link).is_none());
        let plain = dir.path().join("y.jsonl");
        fs::write(&plain, "{}\n").unwrap();
        assert!(open_session_file(&plain).is_some());
    }

    /// A line longer than the bound (a gigabyte without a newline) is passed
    /// over without being held, and a line that is not UTF-8 never ends a
    /// count early: what follows either is still read.
    #[test]
    fn listing_reads_lines_within_a_bound_and_past_bad_ones() {
        let mut reader = &b"abcdef\nxy\nlonger-than-four"[..];
        let mut line = Vec::new();
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 4).unwrap(),
            (7, false)
        );
        assert_eq!(line, b"\n");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 4).unwrap(),
            (3, true)
        );
        assert_eq!(line, b"xy\n");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 4).unwrap(),
            (16, false)
        );
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 4).unwrap(),
            (0, true)
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let meta = r#"{"type":"meta","session_id":"s","created_at":"2026-01-01T00:00:00Z","workspace":"/w","provider":"p","model":"m"}"#;
        let task = |n: u32| format!(r#"{{"type":"note","kind":"task","data":{{"task":{n}}}}}"#);
        let message = r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
        let mut bytes = format!("{meta}\n{}\n", task(1)).into_bytes();
        bytes.extend_from_slice(b"\xff\xfe not text\n");
        bytes.extend_from_slice(format!("{}\n", task(2)).as_bytes());
        bytes.resize(bytes.len() + LISTED_LINE_BYTES + 1, b' ');
        bytes.extend_from_slice(format!("\n{}\n{message}\n", task(3)).as_bytes());
        fs::write(&path, &bytes).unwrap();
        assert_eq!(recorded_tasks(&path), 3);
        assert!(has_conversation(&path));
        let checked = check_session_file(&path).unwrap();
        assert_eq!(checked.messages, 1);
        assert_eq!(checked.torn_bytes, 0);
    }
}
