//! Skills (the `io.modelcontextprotocol/skills` extension): Agent Skills
//! served from a directory on disk ([`ServerBuilder::skills_dir`]) or from
//! code ([`SkillSpec`]), as `skills/list`, `skills/get`,
//! `resources/directory/read` and `resources/read` of every skill file.
//!
//! Everything served is one [`Snapshot`]: the entries (each with the
//! complete `{uri, digest, size}` manifest of its files), the files by URI,
//! and the directories of the skill namespace. Skills from code are fixed
//! when the server is built; a skills directory is walked again before
//! each skills request (a `stat` per file; a file is hashed again only
//! when its size or modification time changed, or when a read found bytes
//! that no longer match), so a listed digest is never older than the
//! request that lists it.
//!
//! A skill that breaks the rules (its directory name is not its
//! frontmatter `name`, the frontmatter lacks `name` or `description`, a
//! file cannot be read, it is over 512 files or 16 MiB) is not served, and
//! the reason is logged once (SK-MAP-2, SK-FMT-2, SK-LIM-2).
//!
//! [`ServerBuilder::skills_dir`]: crate::ServerBuilder::skills_dir

mod disk;
mod relay;
mod serve;

pub(crate) use relay::Relay;
pub use relay::SkillsRelay;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use switchboard_wire::shared::{lock, read_lock, write_lock};
use switchboard_wire::skills::{
    DIRECTORY_MIME_TYPE, SKILL_MD, SKILL_MD_MIME_TYPE, Skill, SkillResource, SkillResources,
};
use switchboard_wire::{JsonObject, Resource, frontmatter};

use crate::auth::BoxFuture;
use crate::error::{BuildError, HandlerError};

/// Reads one file of a dynamic skill, by its path inside the skill
/// (`SKILL.md`, `data/today.md`): its bytes, or `None` when there is no
/// such file now.
type DynamicRead =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<Option<Vec<u8>>, HandlerError>> + Send + Sync>;

/// A skill served from code: its path in the skill namespace and its
/// files, fixed at build time, or generated on each read
/// ([`SkillSpec::dynamic`]).
///
/// ```
/// use switchboard_server::{Server, SkillSpec};
///
/// let skill = SkillSpec::new(
///     "meeting-notes",
///     "---\nname: meeting-notes\ndescription: Take meeting minutes\n---\nUse templates/minutes.md.\n",
/// )
/// .file("templates/minutes.md", "# Minutes\n");
/// let server = Server::builder("notes", "1.0.0").skill(skill).build().unwrap();
/// assert!(server.capabilities().extensions.as_ref().unwrap().contains_key("io.modelcontextprotocol/skills"));
/// ```
#[derive(Clone)]
pub struct SkillSpec {
    path: String,
    kind: SpecKind,
}

#[derive(Clone)]
enum SpecKind {
    /// Files by path inside the skill; `SKILL.md` among them.
    Fixed(BTreeMap<String, Arc<[u8]>>),
    Dynamic {
        frontmatter: JsonObject,
        files: Vec<String>,
        read: DynamicRead,
    },
}

impl std::fmt::Debug for SkillSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSpec")
            .field("path", &self.path)
            .field("dynamic", &matches!(self.kind, SpecKind::Dynamic { .. }))
            .finish_non_exhaustive()
    }
}

impl SkillSpec {
    /// A skill at `path` (`meeting-notes`, or with a prefix:
    /// `acme/billing/refunds`; the last segment is the skill's name) whose
    /// `SKILL.md` is `skill_md`.
    pub fn new(path: impl Into<String>, skill_md: impl Into<Vec<u8>>) -> Self {
        let mut files = BTreeMap::new();
        files.insert(SKILL_MD.to_owned(), Arc::from(skill_md.into()));
        SkillSpec {
            path: path.into(),
            kind: SpecKind::Fixed(files),
        }
    }

    /// Adds (or replaces) a supporting file at `path` inside the skill
    /// (`templates/minutes.md`). Has no effect on a dynamic skill, whose
    /// files [`SkillSpec::dynamic`] names.
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        if let SpecKind::Fixed(files) = &mut self.kind {
            files.insert(path.into(), Arc::from(bytes.into()));
        }
        self
    }

    /// A skill whose content is generated when it is read, so it has no
    /// stable digests and is listed with `resources: "dynamic"`
    /// (SK-ENT-17). `frontmatter` is what its entry carries (its generated
    /// `SKILL.md` should start with the same); `files` are the paths inside
    /// the skill besides `SKILL.md` that directory reads list; `read`
    /// returns a file's bytes by its path, `None` when it does not exist.
    pub fn dynamic<F, Fut>(
        path: impl Into<String>,
        frontmatter: JsonObject,
        files: impl IntoIterator<Item = impl Into<String>>,
        read: F,
    ) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Vec<u8>>, HandlerError>> + Send + 'static,
    {
        let mut files: Vec<String> = files.into_iter().map(Into::into).collect();
        if !files.iter().any(|f| f == SKILL_MD) {
            files.insert(0, SKILL_MD.to_owned());
        }
        SkillSpec {
            path: path.into(),
            kind: SpecKind::Dynamic {
                frontmatter,
                files,
                read: Arc::new(move |p| Box::pin(read(p))),
            },
        }
    }
}

/// What the builder collects: skills from code, skills directories, and
/// whether `resources/directory/read` is offered.
#[derive(Debug)]
pub(crate) struct SkillsBuilder {
    pub(crate) specs: Vec<SkillSpec>,
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) directory_read: bool,
}

impl Default for SkillsBuilder {
    fn default() -> Self {
        SkillsBuilder {
            specs: Vec::new(),
            dirs: Vec::new(),
            directory_read: true,
        }
    }
}

impl SkillsBuilder {
    /// Whether any skill source was given (the extension is declared).
    pub(crate) fn is_empty(&self) -> bool {
        self.specs.is_empty() && self.dirs.is_empty()
    }

    /// The catalog, with its first snapshot (the directories walked once).
    pub(crate) fn build(self) -> Result<Option<Arc<Catalog>>, BuildError> {
        if self.is_empty() {
            return Ok(None);
        }
        let code = code_skills(self.specs)?;
        let mut roots = Vec::with_capacity(self.dirs.len());
        for dir in self.dirs {
            std::fs::read_dir(&dir).map_err(|e| {
                BuildError::Config(format!(
                    "the skills directory {} cannot be read: {e}",
                    dir.display()
                ))
            })?;
            roots.push(disk::Root::new(dir));
        }
        let catalog = Catalog {
            code,
            roots: Mutex::new(roots),
            snapshot: RwLock::new(Arc::new(Snapshot::default())),
            directory_read: self.directory_read,
            rehash: AtomicBool::new(false),
            built: AtomicBool::new(false),
            reported: Mutex::new(HashMap::new()),
        };
        catalog.refresh_blocking();
        Ok(Some(Arc::new(catalog)))
    }
}

/// Where the bytes of a served file come from.
#[derive(Clone)]
pub(crate) enum Source {
    /// Given in code.
    Fixed(Arc<[u8]>),
    /// A file on disk, read on each request.
    Disk(PathBuf),
    /// Generated by a dynamic skill's reader, from this path in the skill.
    Dynamic(DynamicRead, String),
}

/// One served file.
#[derive(Clone)]
pub(crate) struct ServedFile {
    pub(crate) source: Source,
    /// The resource metadata (name, MIME type, size when known).
    pub(crate) resource: Resource,
    /// The entry's record (absent for dynamic files).
    pub(crate) listed: Option<SkillResource>,
}

/// One served skill: the entry and its serialized form.
pub(crate) struct ServedSkill {
    pub(crate) entry: Skill,
    pub(crate) json: Vec<u8>,
}

/// Everything the skills requests answer from, replaced whole when
/// something changed.
#[derive(Default)]
pub(crate) struct Snapshot {
    /// By `SKILL.md` URI, sorted.
    pub(crate) skills: Vec<Arc<ServedSkill>>,
    pub(crate) skill_index: HashMap<String, usize>,
    pub(crate) files: HashMap<String, ServedFile>,
    /// Directory URI → its children's metadata, sorted by URI.
    pub(crate) dirs: HashMap<String, Vec<Resource>>,
    /// The `SKILL.md` resources, for `resources/list`.
    pub(crate) listed: Vec<Resource>,
}

/// A skill before it is checked and indexed.
pub(crate) struct Candidate {
    /// The skill path (`acme/billing/refunds`), segments as written.
    pub(crate) path: Vec<String>,
    pub(crate) frontmatter: Result<JsonObject, String>,
    pub(crate) files: Vec<CandidateFile>,
    pub(crate) dynamic: bool,
    /// Why it cannot be served, found before the entry was built.
    pub(crate) refused: Option<String>,
}

/// One file of a candidate.
pub(crate) struct CandidateFile {
    /// Its path inside the skill, by segment.
    pub(crate) inner: Vec<String>,
    /// Where its bytes are.
    pub(crate) source: Source,
    /// Its size and digest (`None` for a dynamic file).
    pub(crate) record: Option<(u64, String)>,
    /// Its MIME type.
    pub(crate) mime: &'static str,
}

/// The skills a server serves.
pub(crate) struct Catalog {
    /// Skills from code, checked at build time.
    code: Vec<Candidate>,
    /// Skills directories, with what the last walk found.
    roots: Mutex<Vec<disk::Root>>,
    snapshot: RwLock<Arc<Snapshot>>,
    pub(crate) directory_read: bool,
    /// A read found bytes that no longer match their digest: hash every
    /// file again on the next walk.
    rehash: AtomicBool,
    /// Whether the first snapshot was made.
    built: AtomicBool,
    /// The refusals last logged, by skill path, so each is logged once.
    reported: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("directory_read", &self.directory_read)
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// The snapshot as it is, without looking at the disk.
    pub(crate) fn now(&self) -> Arc<Snapshot> {
        Arc::clone(&read_lock(&self.snapshot))
    }

    /// Whether any skill comes from disk (and so may change).
    fn has_disk(&self) -> bool {
        !lock(&self.roots).is_empty()
    }

    /// Walks the skills directories again (on a blocking thread) and
    /// returns the snapshot, new if anything changed.
    pub(crate) async fn current(self: &Arc<Self>) -> Arc<Snapshot> {
        if !self.has_disk() {
            return self.now();
        }
        let me = Arc::clone(self);
        match tokio::task::spawn_blocking(move || me.refresh_blocking()).await {
            Ok(snapshot) => snapshot,
            Err(_) => self.now(),
        }
    }

    /// Marks the disk records as suspect after a read found bytes that do
    /// not match them.
    pub(crate) fn distrust(&self) {
        self.rehash.store(true, Ordering::Relaxed);
    }

    /// Walks the directories, hashes what changed, and rebuilds the
    /// snapshot when anything did. One walk at a time.
    fn refresh_blocking(&self) -> Arc<Snapshot> {
        let mut roots = lock(&self.roots);
        let rehash = self.rehash.swap(false, Ordering::Relaxed);
        let changed = roots.iter_mut().fold(false, |acc, r| r.walk(rehash) | acc);
        // The first snapshot is made whatever the walk found.
        if !changed && self.built.swap(true, Ordering::Relaxed) {
            return self.now();
        }
        let mut candidates: Vec<&Candidate> = self.code.iter().collect();
        let disk: Vec<Candidate> = roots.iter().flat_map(disk::Root::candidates).collect();
        candidates.extend(disk.iter());
        let mut refusals = HashMap::new();
        let snapshot = Arc::new(index(&candidates, &mut refusals));
        self.report(refusals);
        *write_lock(&self.snapshot) = Arc::clone(&snapshot);
        snapshot
    }

    /// Logs each skill that is not served, once per reason (SK-MAP-2).
    fn report(&self, refusals: HashMap<String, String>) {
        let mut reported = lock(&self.reported);
        for (path, reason) in &refusals {
            if reported.get(path) != Some(reason) {
                tracing::warn!(skill = %path, "not serving the skill: {reason}");
            }
        }
        *reported = refusals;
    }
}

/// Checks and indexes the candidates; the refused ones land in `refusals`
/// (skill path → reason). Earlier candidates win a URI both claim (code
/// skills come first).
fn index(candidates: &[&Candidate], refusals: &mut HashMap<String, String>) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let mut taken: HashSet<String> = HashSet::new();
    let mut entries: Vec<(Skill, Vec<ServedFile>)> = Vec::new();
    for candidate in candidates {
        let label = candidate.path.join("/");
        match entry_of(candidate) {
            Err(reason) => {
                refusals.insert(label, reason);
            }
            Ok((entry, files)) => {
                if !taken.insert(entry.uri.clone()) {
                    refusals.insert(
                        label,
                        format!("another skill is already served at {}", entry.uri),
                    );
                    continue;
                }
                entries.push((entry, files));
            }
        }
    }
    entries.sort_by(|a, b| a.0.uri.cmp(&b.0.uri));
    for (entry, files) in entries {
        for file in files {
            // A file of a nested skill is also a file of the enclosing
            // one: the same URI, the same bytes.
            snapshot
                .files
                .entry(file.resource.uri.clone())
                .or_insert(file);
        }
        let json = serde_json::to_vec(&entry).unwrap_or_default();
        snapshot
            .skill_index
            .insert(entry.uri.clone(), snapshot.skills.len());
        snapshot.skills.push(Arc::new(ServedSkill { entry, json }));
    }
    // SKILL.md resources carry the skill's name and description (SK-MAP-6).
    for skill in &snapshot.skills {
        if let Some(file) = snapshot.files.get_mut(&skill.entry.uri) {
            file.resource.name = skill.entry.name().unwrap_or(SKILL_MD).to_owned();
            file.resource.description = skill.entry.description().map(str::to_owned);
            snapshot.listed.push(file.resource.clone());
        }
    }
    snapshot.dirs = directories(&snapshot.files);
    snapshot
}

/// The entry of a candidate and its files, or why it is not served.
fn entry_of(candidate: &Candidate) -> Result<(Skill, Vec<ServedFile>), String> {
    if let Some(reason) = &candidate.refused {
        return Err(reason.clone());
    }
    if candidate.path.is_empty() {
        return Err(format!(
            "a {SKILL_MD} must sit in a skill directory, not at the top"
        ));
    }
    let frontmatter = candidate
        .frontmatter
        .clone()
        .map_err(|e| format!("its {SKILL_MD} frontmatter cannot be read: {e}"))?;
    let root = skill_uri(&candidate.path, &[]);
    let uri = format!("{root}/{SKILL_MD}");
    let mut served = Vec::with_capacity(candidate.files.len());
    let mut listed = Vec::with_capacity(candidate.files.len());
    for file in &candidate.files {
        let file_uri = skill_uri(&candidate.path, &file.inner);
        let mut resource = Resource {
            uri: file_uri.clone(),
            name: file.inner.last().cloned().unwrap_or_default(),
            title: None,
            description: None,
            mime_type: Some(file.mime.to_owned()),
            extra: JsonObject::new(),
        };
        let record = file.record.as_ref().map(|(size, digest)| {
            resource.extra.insert("size".into(), Value::from(*size));
            SkillResource {
                uri: file_uri.clone(),
                digest: digest.clone(),
                size: *size,
                extra: JsonObject::new(),
            }
        });
        if let Some(r) = &record {
            listed.push(r.clone());
        }
        served.push(ServedFile {
            source: file.source.clone(),
            resource,
            listed: record,
        });
    }
    let entry = Skill {
        uri,
        frontmatter,
        resources: if candidate.dynamic {
            SkillResources::Dynamic
        } else {
            SkillResources::Files(listed)
        },
        extra: JsonObject::new(),
    };
    entry.check().map_err(|e| match e {
        switchboard_wire::SkillError::Invalid { reason, .. }
        | switchboard_wire::SkillError::Limits { reason, .. } => reason,
        other => other.to_string(),
    })?;
    Ok((entry, served))
}

/// The directories of the served namespace: every ancestor of a served
/// file below the scheme, each with its direct children.
fn directories(files: &HashMap<String, ServedFile>) -> HashMap<String, Vec<Resource>> {
    let mut dirs: HashMap<String, BTreeMap<String, Resource>> = HashMap::new();
    for (uri, file) in files {
        let Some(path) = uri.strip_prefix(SCHEME) else {
            continue;
        };
        let segments: Vec<&str> = path.split('/').collect();
        let mut child = file.resource.clone();
        // From the file up: each level is a child of the one above; stop
        // where a level was already linked (its ancestors are too).
        for end in (1..segments.len()).rev() {
            let parent = format!("{SCHEME}{}", segments[..end].join("/"));
            let siblings = dirs.entry(parent.clone()).or_default();
            let fresh = !siblings.contains_key(&child.uri);
            siblings.entry(child.uri.clone()).or_insert(child);
            if !fresh {
                break;
            }
            child = directory_resource(&parent, segments[end - 1]);
        }
    }
    dirs.into_iter()
        .map(|(uri, children)| (uri, children.into_values().collect()))
        .collect()
}

fn directory_resource(uri: &str, encoded_name: &str) -> Resource {
    Resource {
        uri: uri.to_owned(),
        name: decode_segment(encoded_name),
        title: None,
        description: None,
        mime_type: Some(DIRECTORY_MIME_TYPE.to_owned()),
        extra: JsonObject::new(),
    }
}

/// The URI scheme skills are served under (SK-MAP-1).
const SCHEME: &str = "skill://";

/// `skill://` + the skill path + the path inside the skill, each segment
/// percent-encoded where a URI needs it. The first segment is the URI's
/// authority, where `:` and `@` are encoded too (SK-MAP-3).
fn skill_uri(path: &[String], inner: &[String]) -> String {
    let mut out = String::from(SCHEME);
    for (i, segment) in path.iter().chain(inner).enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_segment(&mut out, segment, i == 0);
    }
    out
}

fn encode_segment(out: &mut String, segment: &str, authority: bool) {
    for b in segment.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || b"-._~!$&'()*+,;=".contains(&b)
            || (!authority && (b == b':' || b == b'@'));
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A segment with its percent-escapes decoded (for display names).
fn decode_segment(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The MIME type of a skill file by its name (`text/markdown` for
/// `SKILL.md` and other Markdown: SK-MAP-6), or for a name that says
/// nothing (`LICENSE`), by its bytes when they are known: UTF-8 text
/// without NUL is `text/plain`, anything else `application/octet-stream`.
pub(crate) fn mime_of(name: &str, bytes: Option<&[u8]>) -> &'static str {
    match mime_type(name) {
        OCTET_STREAM => match bytes {
            Some(b) if !b.contains(&0) && std::str::from_utf8(b).is_ok() => "text/plain",
            _ => OCTET_STREAM,
        },
        known => known,
    }
}

const OCTET_STREAM: &str = "application/octet-stream";

/// The MIME type of a skill file by its name alone.
pub(crate) fn mime_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => SKILL_MD_MIME_TYPE,
        "txt" | "text" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "xml" => "application/xml",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "sh" | "bash" => "text/x-shellscript",
        "rs" => "text/x-rust",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => OCTET_STREAM,
    }
}

/// Whether content of this MIME type goes out as `text` (when it is UTF-8)
/// rather than base64 `blob`.
pub(crate) fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/yaml"
                | "application/toml"
                | "application/xml"
                | "image/svg+xml"
        )
}

/// Splits a `/`-separated path, refusing empty, `.` and `..` segments.
fn segments(path: &str) -> Result<Vec<String>, String> {
    let parts: Vec<String> = path.split('/').map(str::to_owned).collect();
    if parts.iter().any(|p| p.is_empty() || p == "." || p == "..") {
        return Err(format!("{path:?} is not a relative path of plain segments"));
    }
    Ok(parts)
}

/// Candidates for the skills given in code; nested fixed skills get their
/// nested files added to the enclosing manifest (SK-ENT-19).
fn code_skills(specs: Vec<SkillSpec>) -> Result<Vec<Candidate>, BuildError> {
    let invalid = |path: &str, reason: String| BuildError::InvalidSkill {
        path: path.to_owned(),
        reason,
    };
    let mut seen = HashSet::new();
    let mut parsed: Vec<(Vec<String>, SkillSpec)> = Vec::with_capacity(specs.len());
    for spec in specs {
        let path = segments(&spec.path).map_err(|e| invalid(&spec.path, e))?;
        if !seen.insert(path.clone()) {
            return Err(BuildError::Duplicate {
                kind: "skill",
                name: spec.path,
            });
        }
        parsed.push((path, spec));
    }
    let mut out = Vec::with_capacity(parsed.len());
    for (path, spec) in &parsed {
        let nested: Vec<&(Vec<String>, SkillSpec)> = parsed
            .iter()
            .filter(|(other, _)| other.len() > path.len() && other.starts_with(path))
            .collect();
        let candidate = match &spec.kind {
            SpecKind::Dynamic {
                frontmatter,
                files,
                read,
            } => {
                if !nested.is_empty() {
                    return Err(invalid(
                        &spec.path,
                        "a dynamic skill cannot enclose other skills".into(),
                    ));
                }
                let mut served = Vec::with_capacity(files.len());
                for file in files {
                    let inner = segments(file).map_err(|e| invalid(&spec.path, e))?;
                    served.push(CandidateFile {
                        mime: mime_type(inner.last().map_or("", String::as_str)),
                        inner,
                        source: Source::Dynamic(Arc::clone(read), file.clone()),
                        record: None,
                    });
                }
                Candidate {
                    path: path.clone(),
                    frontmatter: Ok(frontmatter.clone()),
                    files: served,
                    dynamic: true,
                    refused: None,
                }
            }
            SpecKind::Fixed(files) => {
                let mut all: BTreeMap<Vec<String>, Arc<[u8]>> = BTreeMap::new();
                for (file, bytes) in files {
                    let inner = segments(file).map_err(|e| invalid(&spec.path, e))?;
                    all.insert(inner, Arc::clone(bytes));
                }
                for (other, nested_spec) in &nested {
                    let SpecKind::Fixed(nested_files) = &nested_spec.kind else {
                        return Err(invalid(
                            &nested_spec.path,
                            format!("a dynamic skill cannot sit inside the skill {}", spec.path),
                        ));
                    };
                    for (file, bytes) in nested_files {
                        let mut inner = other[path.len()..].to_vec();
                        inner.extend(segments(file).map_err(|e| invalid(&nested_spec.path, e))?);
                        if all.get(&inner).is_some_and(|b| b != bytes) {
                            return Err(invalid(
                                &spec.path,
                                format!("{} is given twice with different bytes", inner.join("/")),
                            ));
                        }
                        all.insert(inner, Arc::clone(bytes));
                    }
                }
                let skill_md = files
                    .get(SKILL_MD)
                    .cloned()
                    .unwrap_or_else(|| Arc::from(Vec::new()));
                let frontmatter = std::str::from_utf8(&skill_md)
                    .map_err(|_| format!("{SKILL_MD} is not UTF-8 text"))
                    .and_then(|t| frontmatter::parse(t).map_err(|e| e.to_string()));
                let files = all
                    .into_iter()
                    .map(|(inner, bytes)| CandidateFile {
                        mime: mime_of(inner.last().map_or("", String::as_str), Some(&bytes)),
                        record: Some((
                            bytes.len() as u64,
                            switchboard_wire::Sha256Digest::of(&bytes).to_string(),
                        )),
                        inner,
                        source: Source::Fixed(bytes),
                    })
                    .collect();
                Candidate {
                    path: path.clone(),
                    frontmatter,
                    files,
                    dynamic: false,
                    refused: None,
                }
            }
        };
        let _ = entry_of(&candidate).map_err(|reason| invalid(&spec.path, reason))?;
        out.push(candidate);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_encode_what_a_uri_cannot_carry() {
        let path = vec!["acme:1".to_owned(), "billing".to_owned()];
        let inner = vec!["My Notes".to_owned(), "a@b.md".to_owned()];
        assert_eq!(
            skill_uri(&path, &inner),
            "skill://acme%3A1/billing/My%20Notes/a@b.md"
        );
        assert_eq!(decode_segment("My%20Notes"), "My Notes");
        assert_eq!(decode_segment("100%"), "100%");
        assert_eq!(decode_segment("%4"), "%4");
    }

    #[test]
    fn mime_types_by_name() {
        assert_eq!(mime_type("SKILL.md"), "text/markdown");
        assert_eq!(mime_type("logo.PNG"), "image/png");
        assert_eq!(mime_type("run"), "application/octet-stream");
        assert_eq!(mime_of("LICENSE", Some(b"MIT")), "text/plain");
        assert_eq!(mime_of("blob", Some(&[0, 159])), "application/octet-stream");
        assert!(is_textual(mime_type("x.py")) && !is_textual(mime_type("x.png")));
    }
}
