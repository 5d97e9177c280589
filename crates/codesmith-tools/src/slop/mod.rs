//! The slop ledger: a project's register of technical debt an agent introduced or found
//! (a duplicated helper, an untested branch, a claim nobody checked), each entry with its
//! bucket, severity, the confidence of the assessment, an owner, source links, a cleanup
//! recommendation, linked tasks, and the lifecycle Open → InProgress → Resolved / Accepted
//! / WontFix.
//!
//! Stored beside the project's memory, in `<workspace>/.codesmith/slop/`: `ledger.jsonl`
//! is append-only, one [`Record`] per line (an entry recorded, or a status changed), and
//! `index.json` is the current state of every entry, rebuilt from the ledger after each
//! append (and whenever it is missing or behind). Nothing is ever deleted or rewritten:
//! a change of status is a new line, so an entry's whole history stays readable
//! ([`Ledger::history`]). The model writes through the [`SlopTool`] (`slop`: record,
//! update, list, show); the person through `codesmith slop list|show|resolve|accept|wontfix`;
//! the claim verifier can file its `unsubstantiated` and `verified_fail` verdicts.

mod tool;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use tool::SlopTool;

/// Name of the ledger directory under `<workspace>/.codesmith/`.
pub const SLOP_DIR: &str = "slop";
/// The append-only ledger file.
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// The derived index of current states.
pub const INDEX_FILE: &str = "index.json";
/// Longest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 200;
/// Longest description or cleanup recommendation, in bytes.
pub const MAX_TEXT_BYTES: usize = 4_000;
/// Most source links or linked tasks per entry.
pub const MAX_LINKS: usize = 20;

/// The project's ledger directory: `<workspace>/.codesmith/slop`.
pub fn slop_dir(workspace: &Path) -> PathBuf {
    workspace.join(".codesmith").join(SLOP_DIR)
}

/// What kind of debt an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// The same logic written twice.
    Duplication,
    /// Code nothing reaches.
    DeadCode,
    /// More machinery than the task needs.
    OverEngineering,
    /// A success claim without evidence, or one the evidence contradicts.
    UnverifiedClaim,
    /// Behaviour without a test that would fail when it breaks.
    MissingTests,
    /// Errors swallowed, panics, unclear failures.
    ErrorHandling,
    /// A weakness an attacker could use.
    Security,
    /// Documentation missing or out of date.
    Docs,
    /// Anything else.
    Other,
}

/// How much the debt hurts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Cosmetic.
    Low,
    /// Worth a cleanup soon.
    Medium,
    /// Causes bugs or slows every change.
    High,
    /// Must be fixed before release.
    Critical,
}

/// How sure the assessment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// A suspicion.
    Low,
    /// Likely.
    Medium,
    /// Checked.
    High,
}

/// Where an entry is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Recorded, nobody on it.
    Open,
    /// Being cleaned up.
    InProgress,
    /// Cleaned up.
    Resolved,
    /// Kept on purpose (a person's decision).
    Accepted,
    /// Will not be fixed (a person's decision).
    WontFix,
}

impl Status {
    /// The wire name (`open`, `in_progress`, `resolved`, `accepted`, `wont_fix`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Resolved => "resolved",
            Status::Accepted => "accepted",
            Status::WontFix => "wont_fix",
        }
    }

    /// True for the three end states.
    pub fn is_closed(self) -> bool {
        matches!(self, Status::Resolved | Status::Accepted | Status::WontFix)
    }

    /// Whether an entry in `self` may move to `to`: open and in-progress entries move
    /// forward (or in progress back to open); a closed entry never changes again (a
    /// regression is a new entry).
    pub fn may_become(self, to: Status) -> bool {
        match self {
            Status::Open => to != Status::Open,
            Status::InProgress => to != Status::InProgress,
            _ => false,
        }
    }
}

/// Who wrote a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    /// The model, through the `slop` tool.
    Model,
    /// A person, through `codesmith slop`.
    User,
    /// The claim verifier, from a verdict.
    Verifier,
}

/// What an entry says, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEntry {
    /// What kind of debt.
    pub bucket: Bucket,
    /// How much it hurts.
    pub severity: Severity,
    /// How sure the assessment is.
    pub confidence: Confidence,
    /// Who owns the cleanup (a person, a team, or `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Paths with lines (`src/lib.rs:40-52`) or URLs the debt lives at.
    #[serde(default)]
    pub source_links: Vec<String>,
    /// One line.
    pub title: String,
    /// What is wrong and why it matters.
    #[serde(default)]
    pub description: String,
    /// How to clean it up.
    #[serde(default)]
    pub cleanup: String,
    /// Tasks or sessions the entry belongs to.
    #[serde(default)]
    pub linked_tasks: Vec<String>,
}

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// A new entry, status `open`.
    Recorded {
        /// `SLOP-N`.
        id: String,
        /// RFC 3339, UTC.
        at: String,
        /// Who recorded it.
        by: Author,
        /// What it says.
        #[serde(flatten)]
        entry: NewEntry,
    },
    /// A change of status.
    Status {
        /// The entry's id.
        id: String,
        /// RFC 3339, UTC.
        at: String,
        /// Who changed it.
        by: Author,
        /// The new status.
        status: Status,
        /// Why (what was done, or why it is accepted).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
    },
}

impl Record {
    /// The id of the entry the record belongs to.
    pub fn id(&self) -> &str {
        match self {
            Record::Recorded { id, .. } | Record::Status { id, .. } => id,
        }
    }
}

/// An entry's current state (what the index holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `SLOP-N`.
    pub id: String,
    /// Its current status.
    pub status: Status,
    /// When it was recorded (RFC 3339, UTC).
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// Who recorded it.
    pub recorded_by: Author,
    /// What it says.
    #[serde(flatten)]
    pub entry: NewEntry,
}

/// Why the ledger could not be read or changed.
#[derive(Debug)]
pub enum SlopError {
    /// No entry has this id.
    Unknown(String),
    /// The lifecycle does not allow the change.
    Transition {
        /// The entry.
        id: String,
        /// Its status.
        from: &'static str,
        /// The status asked for.
        to: &'static str,
    },
    /// A field is missing, empty or too long.
    Invalid(String),
    /// Reading or writing the files failed.
    Io(std::io::Error),
}

impl std::fmt::Display for SlopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlopError::Unknown(id) => write!(f, "there is no slop entry {id}"),
            SlopError::Transition { id, from, to } => {
                write!(f, "{id} is {from} and cannot become {to}")
            }
            SlopError::Invalid(why) => f.write_str(why),
            SlopError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SlopError {}

impl From<std::io::Error> for SlopError {
    fn from(e: std::io::Error) -> Self {
        SlopError::Io(e)
    }
}

/// A project's ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    workspace: PathBuf,
    dir: PathBuf,
}

/// The current time as RFC 3339 in UTC, whole seconds.
fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// `secs` after the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

fn check_text(field: &str, text: &str, max: usize) -> Result<(), SlopError> {
    if text.len() > max {
        return Err(SlopError::Invalid(format!(
            "{field} is {} bytes; at most {max}",
            text.len()
        )));
    }
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(SlopError::Invalid(format!(
            "{field} holds a control character; write it as text"
        )));
    }
    Ok(())
}

impl NewEntry {
    /// Checks the sizes and the characters of every field.
    ///
    /// # Errors
    /// [`SlopError::Invalid`] naming the field.
    pub fn validate(&self) -> Result<(), SlopError> {
        if self.title.trim().is_empty() {
            return Err(SlopError::Invalid("title is empty".into()));
        }
        check_text("title", &self.title, MAX_TITLE_BYTES)?;
        if self.title.contains('\n') {
            return Err(SlopError::Invalid("title must be one line".into()));
        }
        check_text("description", &self.description, MAX_TEXT_BYTES)?;
        check_text("cleanup", &self.cleanup, MAX_TEXT_BYTES)?;
        if let Some(owner) = &self.owner {
            check_text("owner", owner, MAX_TITLE_BYTES)?;
        }
        for (field, list) in [
            ("source_links", &self.source_links),
            ("linked_tasks", &self.linked_tasks),
        ] {
            if list.len() > MAX_LINKS {
                return Err(SlopError::Invalid(format!(
                    "{field} has {} items; at most {MAX_LINKS}",
                    list.len()
                )));
            }
            for item in list {
                check_text(field, item, MAX_TITLE_BYTES)?;
            }
        }
        Ok(())
    }
}

impl Ledger {
    /// The ledger of the project at `workspace` (nothing is created until a record is
    /// appended).
    pub fn for_workspace(workspace: &Path) -> Self {
        Ledger {
            workspace: workspace.to_path_buf(),
            dir: slop_dir(workspace),
        }
    }

    /// The ledger file.
    pub fn ledger_path(&self) -> PathBuf {
        self.dir.join(LEDGER_FILE)
    }

    /// The index file.
    pub fn index_path(&self) -> PathBuf {
        self.dir.join(INDEX_FILE)
    }

    /// Every record, oldest first. A line that does not parse (cut short by a crash) is
    /// skipped; the count of skipped lines is returned beside.
    ///
    /// The ledger is opened below a held handle of the workspace without following any
    /// symlink, and a hard-linked ledger is refused: a link the repository ships cannot
    /// make CodeSmith read (or, in [`Ledger::record`], write) a file elsewhere.
    ///
    /// # Errors
    /// Reading the file failed or it is a link (a missing ledger is empty, not an error).
    pub fn records(&self) -> Result<(Vec<Record>, usize), SlopError> {
        let root = self.root()?;
        let mut file = match root.open_own_read(&Self::rel(LEDGER_FILE)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(e) => return Err(link_refusal(e)),
        };
        Ok(parse_records(&read_all(&mut file)?))
    }

    /// The workspace handle every ledger file is opened below.
    fn root(&self) -> Result<crate::fs::beneath::Root, SlopError> {
        let canonical = std::fs::canonicalize(&self.workspace)?;
        Ok(crate::fs::beneath::Root::open(&canonical)?)
    }

    /// `name` relative to the workspace.
    fn rel(name: &str) -> PathBuf {
        Path::new(".codesmith").join(SLOP_DIR).join(name)
    }

    /// The current state of every entry, by id order of recording.
    ///
    /// # Errors
    /// As [`Ledger::records`].
    pub fn entries(&self) -> Result<Vec<Entry>, SlopError> {
        Ok(fold(&self.records()?.0))
    }

    /// [`Ledger::entries`] with the count of ledger lines that could not be read (damaged,
    /// cut short, or not a record), which readers report instead of hiding.
    ///
    /// # Errors
    /// As [`Ledger::records`].
    pub fn entries_counted(&self) -> Result<(Vec<Entry>, usize), SlopError> {
        let (records, unreadable) = self.records()?;
        Ok((fold(&records), unreadable))
    }

    /// One entry's current state.
    ///
    /// # Errors
    /// [`SlopError::Unknown`] for an id not recorded.
    pub fn get(&self, id: &str) -> Result<Entry, SlopError> {
        let id = normalize_id(id);
        self.entries()?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or(SlopError::Unknown(id))
    }

    /// One entry's records, oldest first.
    ///
    /// # Errors
    /// [`SlopError::Unknown`] for an id not recorded.
    pub fn history(&self, id: &str) -> Result<Vec<Record>, SlopError> {
        let id = normalize_id(id);
        let history: Vec<Record> = self
            .records()?
            .0
            .into_iter()
            .filter(|r| r.id() == id)
            .collect();
        if history.is_empty() {
            return Err(SlopError::Unknown(id));
        }
        Ok(history)
    }

    /// Records a new entry (status `open`) and returns it.
    ///
    /// # Errors
    /// [`SlopError::Invalid`] for a field that does not pass [`NewEntry::validate`];
    /// [`SlopError::Io`] when the ledger cannot be written.
    pub fn record(&self, entry: NewEntry, by: Author) -> Result<Entry, SlopError> {
        entry.validate()?;
        // The id is chosen while the ledger is locked, so two writers never mint the same.
        // Ids seen in damaged lines count too: an id is never issued twice.
        let id = self.append_locked(|records, highest_seen| {
            let next = records
                .iter()
                .filter_map(|r| r.id().strip_prefix("SLOP-")?.parse::<u64>().ok())
                .chain([highest_seen])
                .max()
                .unwrap_or(0)
                .saturating_add(1);
            Ok(Record::Recorded {
                id: format!("SLOP-{next}"),
                at: now(),
                by,
                entry,
            })
        })?;
        self.get(&id)
    }

    /// Moves an entry to `status` with `note`, as a new record.
    ///
    /// # Errors
    /// [`SlopError::Unknown`], [`SlopError::Transition`] when the lifecycle does not allow
    /// it, [`SlopError::Invalid`] for a note too long, [`SlopError::Io`].
    pub fn set_status(
        &self,
        id: &str,
        status: Status,
        note: &str,
        by: Author,
    ) -> Result<Entry, SlopError> {
        check_text("note", note, MAX_TEXT_BYTES)?;
        let id = normalize_id(id);
        let id = self.append_locked(|records, _| {
            let current = fold(records)
                .into_iter()
                .find(|e| e.id == id)
                .ok_or_else(|| SlopError::Unknown(id.clone()))?;
            if !current.status.may_become(status) {
                return Err(SlopError::Transition {
                    id: current.id,
                    from: current.status.as_str(),
                    to: status.as_str(),
                });
            }
            Ok(Record::Status {
                id: current.id,
                at: now(),
                by,
                status,
                note: note.to_string(),
            })
        })?;
        self.get(&id)
    }

    /// Appends the record `make` builds from the current records, holding an exclusive
    /// lock (`flock`) on the ledger from reading to the rewritten index, and returns the
    /// record's id. The directory and files are created and opened below a held handle
    /// of the workspace with no symlink followed; a link (symbolic or hard) is refused.
    fn append_locked(
        &self,
        make: impl FnOnce(&[Record], u64) -> Result<Record, SlopError>,
    ) -> Result<String, SlopError> {
        let root = self.root()?;
        let ledger = Self::rel(LEDGER_FILE);
        root.create_parents(&ledger).map_err(link_refusal)?;
        let mut file = root.open_own_append(&ledger).map_err(link_refusal)?;
        lock_exclusive(&file)?;
        let text = read_all(&mut file)?;
        let (mut records, _) = parse_records(&text);
        let record = make(&records, highest_id(&text))?;
        let mut line = serde_json::to_string(&record)
            .map_err(|e| SlopError::Invalid(format!("the record does not serialise: {e}")))?;
        line.push('\n');
        // A last line without its line break (an editor, a merge) would swallow the record.
        if !text.is_empty() && !text.ends_with('\n') {
            line.insert(0, '\n');
        }
        file.write_all(line.as_bytes())?;
        file.sync_data()?;
        let id = record.id().to_string();
        records.push(record);
        self.write_index_of(&root, &records)?;
        Ok(id)
    }

    /// Rewrites `index.json` from the ledger (atomically: a temporary file renamed over
    /// it, refused when `index.json` is a link). The index is derived: deleting it loses
    /// nothing.
    ///
    /// # Errors
    /// Reading the ledger or writing the index failed.
    pub fn write_index(&self) -> Result<(), SlopError> {
        let root = self.root()?;
        let ledger = Self::rel(LEDGER_FILE);
        root.create_parents(&ledger).map_err(link_refusal)?;
        let mut file = root.open_own_append(&ledger).map_err(link_refusal)?;
        lock_exclusive(&file)?;
        let (records, _) = parse_records(&read_all(&mut file)?);
        self.write_index_of(&root, &records)
    }

    fn write_index_of(
        &self,
        root: &crate::fs::beneath::Root,
        records: &[Record],
    ) -> Result<(), SlopError> {
        let entries = fold(records);
        let index: BTreeMap<&str, serde_json::Value> = entries
            .iter()
            .map(|e| {
                (
                    e.id.as_str(),
                    serde_json::json!({
                        "title": e.entry.title,
                        "status": e.status,
                        "bucket": e.entry.bucket,
                        "severity": e.entry.severity,
                        "updated_at": e.updated_at,
                    }),
                )
            })
            .collect();
        let text = serde_json::to_string_pretty(&index)
            .map_err(|e| SlopError::Invalid(format!("the index does not serialise: {e}")))?;
        root.replace_own(&Self::rel(INDEX_FILE), text.as_bytes())
            .map_err(link_refusal)?;
        Ok(())
    }
}

/// The whole file from its start; bytes that are not UTF-8 become U+FFFD (their line then
/// counts as unreadable, the rest of the ledger still reads).
fn read_all(file: &mut std::fs::File) -> Result<String, SlopError> {
    use std::io::{Read, Seek};
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The highest `N` of any `SLOP-N` in the ledger text, damaged lines included (0 when
/// none).
fn highest_id(text: &str) -> u64 {
    text.match_indices("SLOP-")
        .filter_map(|(at, _)| {
            let digits: String = text[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .take(19)
                .collect();
            digits.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// The records of the ledger text, and the count of lines that do not parse.
fn parse_records(text: &str) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut skipped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(r) => records.push(r),
            Err(_) => skipped += 1,
        }
    }
    (records, skipped)
}

/// Holds an exclusive advisory lock on the ledger until `file` is closed.
fn lock_exclusive(file: &std::fs::File) -> Result<(), SlopError> {
    #[cfg(unix)]
    rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(std::io::Error::from)?;
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// A link met on the way to a ledger file, named as such.
fn link_refusal(e: std::io::Error) -> SlopError {
    #[cfg(unix)]
    let not_dir = e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error());
    #[cfg(not(unix))]
    let not_dir = false;
    if crate::fs::beneath::is_escape(&e) || not_dir {
        return SlopError::Invalid(
            "the slop ledger path .codesmith/slop holds a symbolic link (or a file where a \
             directory belongs); CodeSmith does not write or read its own files through a \
             link (remove it and retry)"
                .into(),
        );
    }
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        return SlopError::Invalid(format!("the slop ledger was refused: {e}"));
    }
    SlopError::Io(e)
}

/// `7`, `slop-7` and `SLOP-7` all name `SLOP-7`.
fn normalize_id(id: &str) -> String {
    let id = id.trim();
    if id.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty() {
        return format!("SLOP-{id}");
    }
    match id.get(..5) {
        Some(head) if head.eq_ignore_ascii_case("slop-") => format!("SLOP-{}", &id[5..]),
        _ => id.to_string(),
    }
}

/// The current state of every entry from its records (a status record for an unknown
/// id is ignored).
fn fold(records: &[Record]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for record in records {
        match record {
            Record::Recorded { id, at, by, entry } => entries.push(Entry {
                id: id.clone(),
                status: Status::Open,
                created_at: at.clone(),
                updated_at: at.clone(),
                recorded_by: *by,
                entry: entry.clone(),
            }),
            Record::Status { id, at, status, .. } => {
                if let Some(e) = entries.iter_mut().find(|e| &e.id == id) {
                    e.status = *status;
                    e.updated_at = at.clone();
                }
            }
        }
    }
    entries
}

/// The entry the claim verifier files for a verdict it doubts: `unsubstantiated` (no
/// command behind a success claim) or `verified_fail` (the replay contradicted it).
/// `None` for any other verdict.
pub fn verdict_entry(
    verdict: &str,
    claim: &str,
    command: Option<&str>,
    exit_code: Option<i32>,
) -> Option<NewEntry> {
    let claim: String = claim
        .chars()
        .filter(|c| !c.is_control())
        .take(150)
        .collect();
    let (severity, confidence, description) = match verdict {
        "unsubstantiated" => (
            Severity::Medium,
            Confidence::Medium,
            "The model claimed success, but no test or build command ran in the task to back \
             it."
            .to_string(),
        ),
        "verified_fail" => (
            Severity::High,
            Confidence::High,
            format!(
                "The model claimed success, but replaying `{}` exited with {}.",
                command.unwrap_or("?"),
                exit_code.map_or_else(|| "an error".to_string(), |c| c.to_string())
            ),
        ),
        _ => return None,
    };
    let mut entry = NewEntry {
        bucket: Bucket::UnverifiedClaim,
        severity,
        confidence,
        owner: None,
        source_links: Vec::new(),
        title: format!("Claim not backed by evidence: {claim}"),
        description,
        cleanup: "Run the project's tests or build, fix what fails, then resolve this entry."
            .into(),
        linked_tasks: Vec::new(),
    };
    entry.title.truncate(
        (0..=MAX_TITLE_BYTES.min(entry.title.len()))
            .rev()
            .find(|i| entry.title.is_char_boundary(*i))
            .unwrap_or(0),
    );
    entry.description = entry
        .description
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    Some(entry)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> NewEntry {
        NewEntry {
            bucket: Bucket::Duplication,
            severity: Severity::Medium,
            confidence: Confidence::High,
            owner: Some("auto".into()),
            source_links: vec!["src/a.rs:10-20".into()],
            title: "parse_size written twice".into(),
            description: "a.rs and b.rs both parse sizes".into(),
            cleanup: "keep one".into(),
            linked_tasks: vec![],
        }
    }

    #[test]
    fn a_ledger_without_a_final_line_break_keeps_every_record_and_id() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::for_workspace(dir.path());
        let file = dir.path().join(".codesmith/slop/ledger.jsonl");
        ledger.record(sample(), Author::Model).unwrap();
        // An editor or a merge drops the last line break.
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.trim_end()).unwrap();
        let second = ledger.record(sample(), Author::Model).unwrap();
        assert_eq!(second.id, "SLOP-2");
        let (entries, unreadable) = ledger.entries_counted().unwrap();
        assert_eq!(unreadable, 0);
        assert_eq!(entries.len(), 2);
        // A damaged line still reserves the ids it names, and readers count it.
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("{\"record\":\"recorded\",\"id\":\"SLOP-7\",\"cut short\n");
        std::fs::write(&file, text).unwrap();
        assert_eq!(ledger.record(sample(), Author::Model).unwrap().id, "SLOP-8");
        let (entries, unreadable) = ledger.entries_counted().unwrap();
        assert_eq!((entries.len(), unreadable), (3, 1));
        // A byte that is not UTF-8 damages its line only; the rest still reads.
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.extend_from_slice(b"\xff\n");
        std::fs::write(&file, bytes).unwrap();
        let (entries, unreadable) = ledger.entries_counted().unwrap();
        assert_eq!((entries.len(), unreadable), (3, 2));
    }

    #[test]
    fn a_change_is_a_new_record_and_the_history_stays() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::for_workspace(dir.path());
        let e = ledger.record(sample(), Author::Model).unwrap();
        assert_eq!(e.id, "SLOP-1");
        assert_eq!(e.status, Status::Open);
        ledger
            .set_status("slop-1", Status::InProgress, "", Author::Model)
            .unwrap();
        let done = ledger
            .set_status("1", Status::Resolved, "merged", Author::User)
            .unwrap();
        assert_eq!(done.status, Status::Resolved);
        assert_eq!(ledger.history("SLOP-1").unwrap().len(), 3);
        let err = ledger
            .set_status("SLOP-1", Status::Open, "", Author::Model)
            .unwrap_err();
        assert!(matches!(err, SlopError::Transition { .. }), "{err}");
        let index = std::fs::read_to_string(ledger.index_path()).unwrap();
        assert!(index.contains("\"resolved\""), "{index}");
    }

    #[cfg(unix)]
    #[test]
    fn links_to_the_ledger_are_refused_and_nothing_outside_changes() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(ws.join(".codesmith/slop")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("bashrc"), "keep\n").unwrap();
        let ledger = Ledger::for_workspace(&ws);
        // A symlinked ledger file (relative, as git keeps it).
        std::os::unix::fs::symlink(
            "../../../outside/bashrc",
            ws.join(".codesmith/slop/ledger.jsonl"),
        )
        .unwrap();
        let err = ledger.record(sample(), Author::Model).unwrap_err();
        assert!(err.to_string().contains("link"), "{err}");
        assert!(
            ledger.entries().is_err(),
            "a linked ledger is not read either"
        );
        std::fs::remove_file(ws.join(".codesmith/slop/ledger.jsonl")).unwrap();
        // A hard-linked ledger file.
        std::fs::hard_link(
            outside.join("bashrc"),
            ws.join(".codesmith/slop/ledger.jsonl"),
        )
        .unwrap();
        let err = ledger.record(sample(), Author::Model).unwrap_err();
        assert!(err.to_string().contains("hard link"), "{err}");
        std::fs::remove_file(ws.join(".codesmith/slop/ledger.jsonl")).unwrap();
        // A symlinked index.
        std::os::unix::fs::symlink(
            outside.join("bashrc"),
            ws.join(".codesmith/slop/index.json"),
        )
        .unwrap();
        assert!(ledger.record(sample(), Author::Model).is_err());
        std::fs::remove_dir_all(ws.join(".codesmith/slop")).unwrap();
        // A symlinked ledger directory.
        std::os::unix::fs::symlink(&outside, ws.join(".codesmith/slop")).unwrap();
        let err = ledger.record(sample(), Author::Model).unwrap_err();
        assert!(err.to_string().contains("link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.join("bashrc")).unwrap(),
            "keep\n"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    }

    #[test]
    fn parallel_records_get_distinct_ids() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().to_path_buf();
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let ws = ws.clone();
                // Each thread its own ledger value and file descriptions, as two
                // processes would have.
                std::thread::spawn(move || {
                    Ledger::for_workspace(&ws)
                        .record(sample(), Author::Model)
                        .unwrap()
                        .id
                })
            })
            .collect();
        let mut ids: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 12, "{ids:?}");
        assert_eq!(Ledger::for_workspace(&ws).entries().unwrap().len(), 12);
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_798_675_200), "2026-12-31T00:00:00Z");
    }

    #[test]
    fn only_doubtful_verdicts_file_entries() {
        assert!(verdict_entry("verified_pass", "done", None, Some(0)).is_none());
        let e = verdict_entry("verified_fail", "All tests pass.", Some("make"), Some(2)).unwrap();
        assert_eq!(e.bucket, Bucket::UnverifiedClaim);
        assert!(e.description.contains("exited with 2"));
        e.validate().unwrap();
    }
}
