//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): a
//! server publishes Agent Skills (a directory holding a `SKILL.md` and
//! supporting files) as resources, lists them with `skills/list`, answers
//! `skills/get` for one, and may list a directory's children with
//! `resources/directory/read`.
//!
//! This module holds what every role shares, with no I/O:
//! - the wire shapes ([`Skill`], [`SkillResource`], [`ListSkillsResult`],
//!   [`GetSkillResult`], the directory read) and the capability
//!   ([`SkillsCapability`]);
//! - the `sha256:` digest format ([`Sha256Digest`]);
//! - the checks a host makes before it lets skill content near a model:
//!   is the entry valid and within the limits ([`Skill::check`]), is a
//!   file listed, does it have the listed size and digest, does a fetched
//!   `SKILL.md` carry the entry's frontmatter ([`Skill::verify_file`]).
//!   Each failure is a [`SkillError`] whose [`SkillError::kind`] names it.
//!
//! A `resources` member that is missing or neither an array nor
//! `"dynamic"` does not fail the parse of the entry (or of the listing it
//! came in): it reads as [`SkillResources::Invalid`], kept as it came, and
//! [`Skill::check`] refuses it (SK-ENT-18).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::frontmatter;
use crate::types::paged_result;
use crate::types::{
    CacheHints, JsonObject, Resource, ResourceContents, ResultHeader, ServerCapabilities,
    value_kind,
};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// `skills/list`: the skills a server serves, paged.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`: the entry of one skill, by the URI of its `SKILL.md`.
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read`: the direct children of a directory resource.
pub const DIRECTORY_READ: &str = "resources/directory/read";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of a `SKILL.md` resource (SK-MAP-6).
pub const SKILL_MD_MIME_TYPE: &str = "text/markdown";
/// The `_meta` key prefix reserved for this extension on skill resources.
pub const META_PREFIX: &str = "io.modelcontextprotocol.skills/";
/// `resources` of a skill whose content is generated (no stable digests).
pub const DYNAMIC: &str = "dynamic";
/// The most files a host must accept in one skill, `SKILL.md` included
/// (SK-LIM-1).
pub const MAX_FILES: usize = 512;
/// The most bytes a host must accept in one skill, summed over `size`
/// (SK-LIM-1): 16 MiB.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest skill name the Agent Skills naming rules allow.
pub const MAX_NAME_LEN: usize = 64;

/// The extension's settings in a server's capabilities.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// Whether the server answers `resources/directory/read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_read: Option<bool>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SkillsCapability {
    /// Settings declaring (or not) `directoryRead`.
    pub fn new(directory_read: bool) -> Self {
        SkillsCapability {
            directory_read: directory_read.then_some(true),
            extra: JsonObject::new(),
        }
    }

    /// What `caps` declares for the extension; `None` when it is not
    /// declared. A declaration whose settings are not an object declares
    /// the extension with no optional feature.
    pub fn of(caps: &ServerCapabilities) -> Option<SkillsCapability> {
        let value = caps.extensions.as_ref()?.get(EXTENSION_ID)?;
        Some(SkillsCapability::deserialize(value).unwrap_or_default())
    }

    /// Whether `directoryRead: true` is declared.
    pub fn directory_read(&self) -> bool {
        self.directory_read == Some(true)
    }

    /// The settings as the JSON value to put under `extensions`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(JsonObject::new()))
    }
}

/// A SHA-256 digest, written `sha256:` and 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

/// Why a digest string is not `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a digest of the form sha256:<64 lowercase hex digits>")]
pub struct DigestError(pub String);

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// Reads `sha256:{hex}` (exactly 64 lowercase hex digits).
    ///
    /// # Errors
    /// [`DigestError`] for anything else (another algorithm, upper case,
    /// a wrong length).
    pub fn parse(text: &str) -> Result<Self, DigestError> {
        let bad = || DigestError(text.chars().take(80).collect());
        let hex = text.strip_prefix("sha256:").ok_or_else(bad)?;
        if hex.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            let high = hex_value(pair[0]).ok_or_else(bad)?;
            let low = hex_value(pair[1]).ok_or_else(bad)?;
            out[i] = (high << 4) | low;
        }
        Ok(Sha256Digest(out))
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Whether `bytes` hash to this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Sha256Digest::of(bytes) == *self
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::str::FromStr for Sha256Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Sha256Digest::parse(s)
    }
}

/// One file of a skill, with the digest and size of its bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{hex}` of the file's raw bytes.
    pub digest: String,
    /// The length in bytes of the file's raw content (what `digest` covers).
    pub size: u64,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SkillResource {
    /// The entry for a file at `uri` holding `bytes`.
    pub fn of_bytes(uri: impl Into<String>, bytes: &[u8]) -> Self {
        SkillResource {
            uri: uri.into(),
            digest: Sha256Digest::of(bytes).to_string(),
            size: bytes.len() as u64,
            extra: JsonObject::new(),
        }
    }

    /// Checks `bytes` against this entry: the length first, then the
    /// digest (SK-ENT-16, SK-VER-1).
    ///
    /// # Errors
    /// [`SkillError::Size`], [`SkillError::Digest`].
    pub fn verify(&self, bytes: &[u8]) -> Result<(), SkillError> {
        let actual = bytes.len() as u64;
        if actual != self.size {
            return Err(SkillError::Size {
                uri: self.uri.clone(),
                expected: self.size,
                actual,
            });
        }
        let got = Sha256Digest::of(bytes);
        let expected = Sha256Digest::parse(&self.digest).map_err(|e| SkillError::Invalid {
            skill: self.uri.clone(),
            reason: e.to_string(),
        })?;
        if got != expected {
            return Err(SkillError::Digest {
                uri: self.uri.clone(),
                expected: self.digest.clone(),
                actual: got.to_string(),
            });
        }
        Ok(())
    }
}

/// The `resources` of a skill entry: its complete file list, `"dynamic"`,
/// or something else (an invalid entry, kept as it came).
#[derive(Clone, Debug, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included.
    Files(Vec<SkillResource>),
    /// The content is generated: no stable digests (SK-ENT-17).
    Dynamic,
    /// Missing, or neither an array of file entries nor `"dynamic"`
    /// (SK-ENT-18).
    Invalid(InvalidResources),
}

/// A `resources` member that makes its entry invalid.
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidResources {
    /// The value as it came; `None` when the member was missing.
    pub value: Option<Value>,
    /// What is wrong with it.
    pub reason: String,
}

impl SkillResources {
    /// The value of a missing `resources` member.
    pub fn missing() -> Self {
        SkillResources::Invalid(InvalidResources {
            value: None,
            reason: "the entry has no resources".into(),
        })
    }

    /// Whether the member was missing (it is then not written back).
    pub fn is_missing(&self) -> bool {
        matches!(
            self,
            SkillResources::Invalid(InvalidResources { value: None, .. })
        )
    }

    /// Reads a `resources` value.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::String(s) if s == DYNAMIC => SkillResources::Dynamic,
            Value::Array(_) => match Vec::<SkillResource>::deserialize(&value) {
                Ok(files) => SkillResources::Files(files),
                Err(e) => SkillResources::Invalid(InvalidResources {
                    reason: format!("a file entry of resources is malformed: {e}"),
                    value: Some(value),
                }),
            },
            other => SkillResources::Invalid(InvalidResources {
                reason: format!(
                    "resources is {}, neither an array of files nor \"dynamic\"",
                    value_kind(&other)
                ),
                value: Some(other),
            }),
        }
    }
}

impl Default for SkillResources {
    fn default() -> Self {
        SkillResources::missing()
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str(DYNAMIC),
            SkillResources::Invalid(InvalidResources { value, .. }) => {
                value.as_ref().unwrap_or(&Value::Null).serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(SkillResources::from_value)
    }
}

/// The entry of one skill, as `skills/list` and `skills/get` return it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter as a JSON object, every field as written.
    #[serde(default)]
    pub frontmatter: JsonObject,
    /// The skill's files, `"dynamic"`, or an invalid value.
    #[serde(default, skip_serializing_if = "SkillResources::is_missing")]
    pub resources: SkillResources,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Skill {
    /// The frontmatter's `name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`, when it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// Whether `resources` is `"dynamic"`.
    pub fn is_dynamic(&self) -> bool {
        matches!(self.resources, SkillResources::Dynamic)
    }

    /// The listed files, when `resources` is an array.
    pub fn files(&self) -> Option<&[SkillResource]> {
        match &self.resources {
            SkillResources::Files(files) => Some(files),
            _ => None,
        }
    }

    /// The skill's root directory: the `uri` without `/SKILL.md`.
    pub fn root(&self) -> Option<&str> {
        skill_root(&self.uri)
    }

    /// The sum of the listed sizes (`None` unless `resources` is an array).
    pub fn total_size(&self) -> Option<u64> {
        self.files()
            .map(|files| files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size)))
    }

    /// The `{uri, digest}` set of the files, sorted by URI: what a
    /// content-bound approval binds to (SK-SEC-16). `None` for a dynamic
    /// or invalid entry, which cannot be content-bound.
    pub fn content_set(&self) -> Option<Vec<(&str, &str)>> {
        let mut set: Vec<(&str, &str)> = self
            .files()?
            .iter()
            .map(|f| (f.uri.as_str(), f.digest.as_str()))
            .collect();
        set.sort_unstable();
        Some(set)
    }

    /// Checks the entry alone, before anything is read: it is valid
    /// (SK-ENT-5/12/13/14/15/18, SK-MAP-2, SK-FMT-2) and within the limits
    /// every host accepts (SK-LIM-1/3).
    ///
    /// # Errors
    /// [`SkillError::Invalid`] or [`SkillError::Limits`], with the reason.
    pub fn check(&self) -> Result<(), SkillError> {
        let invalid = |reason: String| SkillError::Invalid {
            skill: self.uri.clone(),
            reason,
        };
        let Some(root) = self.root() else {
            return Err(invalid(format!(
                "its uri does not name a {SKILL_MD} under a skill directory"
            )));
        };
        let Some(name) = self.name().filter(|n| !n.is_empty()) else {
            return Err(invalid("its frontmatter has no name".into()));
        };
        if self.description().is_none_or(str::is_empty) {
            return Err(invalid("its frontmatter has no description".into()));
        }
        let last = skill_name_from_uri(&self.uri).unwrap_or_default();
        if last != name {
            return Err(invalid(format!(
                "the last segment of its path is {last:?} but its frontmatter name is {name:?}"
            )));
        }
        if !is_valid_name(name) {
            return Err(invalid(format!(
                "its name {name:?} breaks the Agent Skills naming rules (1-64 lowercase letters, digits and single hyphens, no hyphen at either end)"
            )));
        }
        let files = match &self.resources {
            SkillResources::Invalid(bad) => return Err(invalid(bad.reason.clone())),
            SkillResources::Dynamic => return Ok(()),
            SkillResources::Files(files) => files,
        };
        let mut seen = std::collections::HashSet::with_capacity(files.len());
        for file in files {
            if !seen.insert(file.uri.as_str()) {
                return Err(invalid(format!("{} is listed twice", file.uri)));
            }
            if file.uri != self.uri && !within(root, &file.uri) {
                return Err(invalid(format!(
                    "{} is outside the skill's directory {root}",
                    file.uri
                )));
            }
            if let Err(e) = Sha256Digest::parse(&file.digest) {
                return Err(invalid(format!("{}: {e}", file.uri)));
            }
        }
        if !seen.contains(self.uri.as_str()) {
            return Err(invalid(format!(
                "its resources do not list its own {SKILL_MD}"
            )));
        }
        if files.len() > MAX_FILES {
            return Err(SkillError::Limits {
                skill: self.uri.clone(),
                reason: format!(
                    "it has {} files, over the limit of {MAX_FILES}",
                    files.len()
                ),
            });
        }
        let total = self.total_size().unwrap_or_default();
        if total > MAX_TOTAL_BYTES {
            return Err(SkillError::Limits {
                skill: self.uri.clone(),
                reason: format!(
                    "its files add up to {total} bytes, over the limit of {MAX_TOTAL_BYTES} (16 MiB)"
                ),
            });
        }
        Ok(())
    }

    /// The entry's record of the file at `uri`: `Some` for a listed file,
    /// `None` for any file of a dynamic skill (nothing to check it
    /// against).
    ///
    /// # Errors
    /// [`SkillError::Unlisted`] for a file the entry does not list
    /// (SK-VER-3/4, SK-DIR-5); [`SkillError::Invalid`] for an invalid entry.
    pub fn listed(&self, uri: &str) -> Result<Option<&SkillResource>, SkillError> {
        match &self.resources {
            SkillResources::Dynamic => Ok(None),
            SkillResources::Invalid(bad) => Err(SkillError::Invalid {
                skill: self.uri.clone(),
                reason: bad.reason.clone(),
            }),
            SkillResources::Files(files) => match files.iter().find(|f| f.uri == uri) {
                Some(file) => Ok(Some(file)),
                None => Err(SkillError::Unlisted {
                    uri: uri.to_owned(),
                    skill: self.uri.clone(),
                }),
            },
        }
    }

    /// Checks bytes fetched for the file at `uri` of this skill: the
    /// entry is valid and within the limits, the file is listed, its size
    /// and digest match (size first: SK-ENT-16), and for the skill's own
    /// `SKILL.md` the frontmatter equals the entry's field by field
    /// (SK-VER-5). For a dynamic skill only the frontmatter can be
    /// checked.
    ///
    /// # Errors
    /// The first [`SkillError`] met.
    pub fn verify_file(&self, uri: &str, bytes: &[u8]) -> Result<(), SkillError> {
        self.check()?;
        if let Some(file) = self.listed(uri)? {
            file.verify(bytes)?;
        }
        if uri == self.uri {
            verify_frontmatter(&self.uri, &self.frontmatter, bytes)?;
        }
        Ok(())
    }

    /// The URI a relative reference inside the skill names (SK-READ-3):
    /// `templates/a.md` in `skill://x/SKILL.md` is `skill://x/templates/a.md`.
    /// `.` segments are dropped; `..` may not climb out of the skill.
    ///
    /// # Errors
    /// [`SkillError::Unlisted`] for an absolute reference, an empty one, or
    /// one that leaves the skill's directory.
    pub fn resolve(&self, relative: &str) -> Result<String, SkillError> {
        let outside = || SkillError::Unlisted {
            uri: relative.to_owned(),
            skill: self.uri.clone(),
        };
        let root = self.root().ok_or_else(outside)?;
        if relative.starts_with('/') || relative.contains("://") || relative.contains('\\') {
            return Err(outside());
        }
        let mut parts: Vec<&str> = Vec::new();
        for segment in relative.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    parts.pop().ok_or_else(outside)?;
                }
                s => parts.push(s),
            }
        }
        if parts.is_empty() {
            return Err(outside());
        }
        Ok(format!("{root}/{}", parts.join("/")))
    }
}

/// Whether `uri` is a file inside the directory `root` (no `.` or `..`
/// segment, nothing empty).
fn within(root: &str, uri: &str) -> bool {
    uri.strip_prefix(root)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| {
            rest.split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..")
        })
}

/// Compares the frontmatter of a fetched `SKILL.md` with an entry's, field
/// by field (SK-VER-5). A field absent on one side equals `null` on the
/// other; numbers compare by value (`1` equals `1.0`), as JSON and YAML
/// writers differ there.
///
/// # Errors
/// [`SkillError::Frontmatter`] naming the first differing field, or why
/// the file's frontmatter cannot be read.
pub fn verify_frontmatter(
    uri: &str,
    entry: &JsonObject,
    skill_md: &[u8],
) -> Result<(), SkillError> {
    let failed = |reason: String| SkillError::Frontmatter {
        uri: uri.to_owned(),
        reason,
    };
    let text =
        std::str::from_utf8(skill_md).map_err(|_| failed("the file is not UTF-8 text".into()))?;
    let file = frontmatter::parse(text).map_err(|e| failed(e.to_string()))?;
    for key in file.keys().chain(entry.keys()) {
        let ours = file.get(key).unwrap_or(&Value::Null);
        let theirs = entry.get(key).unwrap_or(&Value::Null);
        if !same_json(ours, theirs) {
            return Err(failed(format!(
                "field {key:?} is {} in the file but {} in the entry",
                shown(ours),
                shown(theirs)
            )));
        }
    }
    Ok(())
}

/// JSON equality with numbers compared by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// A value for an error message, cut to a readable length.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 80 {
        return text;
    }
    let mut cut: String = text.chars().take(77).collect();
    cut.push_str("...");
    cut
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64
/// characters, lowercase ASCII letters, digits and hyphens, no hyphen
/// first, last or twice in a row.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The directory of a skill from the URI of its `SKILL.md`
/// (`skill://a/b/SKILL.md` → `skill://a/b`); `None` when the URI does not
/// end in `/SKILL.md` after a non-empty skill path.
pub fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let path = root.split_once("://").map_or(root, |(_, path)| path);
    (!path.is_empty() && !root.ends_with('/')).then_some(root)
}

/// The skill name a `SKILL.md` URI carries: the last segment of its skill
/// path (`skill://acme/billing/refunds/SKILL.md` → `refunds`).
pub fn skill_name_from_uri(uri: &str) -> Option<&str> {
    let root = skill_root(uri)?;
    let path = root.split_once("://").map_or(root, |(_, path)| path);
    path.rsplit('/').next().filter(|s| !s.is_empty())
}

/// The bytes of one `resources/read` content item: `text` as UTF-8, or
/// `blob` decoded from base64.
///
/// # Errors
/// A reason when the item has neither, or its `blob` is not base64.
pub fn contents_bytes(contents: &ResourceContents) -> Result<Vec<u8>, String> {
    match (&contents.text, &contents.blob) {
        (Some(text), _) => Ok(text.as_bytes().to_vec()),
        (None, Some(blob)) => STANDARD
            .decode(blob)
            .map_err(|e| format!("the blob of {} is not base64: {e}", contents.uri)),
        (None, None) => Err(format!(
            "the contents of {} have neither text nor blob",
            contents.uri
        )),
    }
}

/// Why skill content must not be used. [`SkillError::kind`] is the short
/// name a host shows (`digest`, `size`, `frontmatter`, `unlisted`,
/// `invalid`, `limits`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The bytes do not hash to the listed digest.
    #[error(
        "digest mismatch for {uri}: the entry lists {expected}, the content hashes to {actual}"
    )]
    Digest {
        /// The file.
        uri: String,
        /// The listed digest.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// The bytes are not the listed size.
    #[error("size mismatch for {uri}: the entry lists {expected} bytes, the content is {actual}")]
    Size {
        /// The file.
        uri: String,
        /// The listed size.
        expected: u64,
        /// The size of what was read.
        actual: u64,
    },
    /// A fetched `SKILL.md`'s frontmatter differs from the entry's, or
    /// cannot be read.
    #[error("frontmatter mismatch for {uri}: {reason}")]
    Frontmatter {
        /// The `SKILL.md`.
        uri: String,
        /// The differing field, or why the frontmatter cannot be read.
        reason: String,
    },
    /// The file is not listed in the skill's entry.
    #[error("unlisted file {uri}: the entry of {skill} does not list it")]
    Unlisted {
        /// The file asked for.
        uri: String,
        /// The skill's `SKILL.md` URI.
        skill: String,
    },
    /// The entry itself is invalid; the skill never loads.
    #[error("invalid skill {skill}: {reason}")]
    Invalid {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// What is wrong with the entry.
        reason: String,
    },
    /// The entry is over the limits every host accepts.
    #[error("skill {skill} is over the limits: {reason}")]
    Limits {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// Which limit, by how much.
        reason: String,
    },
}

impl SkillError {
    /// The short name of the failure: `digest`, `size`, `frontmatter`,
    /// `unlisted`, `invalid` or `limits`.
    pub fn kind(&self) -> &'static str {
        match self {
            SkillError::Digest { .. } => "digest",
            SkillError::Size { .. } => "size",
            SkillError::Frontmatter { .. } => "frontmatter",
            SkillError::Unlisted { .. } => "unlisted",
            SkillError::Invalid { .. } => "invalid",
            SkillError::Limits { .. } => "limits",
        }
    }
}

paged_result! {
    /// Result of `skills/list`.
    pub struct ListSkillsResult {
        /// This page of entries (never split across pages: SK-LIST-4).
        pub skills: Vec<Skill>,
        /// Freshness and scope (SK-LIST-5).
        cache,
    }
}

/// Result of `skills/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The entry.
    pub skill: Skill,
    /// Freshness and scope (SK-GET-1).
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// Params of `skills/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md` (SK-GET-2).
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `resources/directory/read`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The directory resource's URI (no trailing slash).
    pub uri: String,
    /// The cursor of the page to fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

paged_result! {
    /// Result of `resources/directory/read`.
    pub struct ReadDirectoryResult {
        /// This page of the directory's direct children: files with their
        /// resource metadata, subdirectories as [`DIRECTORY_MIME_TYPE`].
        pub resources: Vec<Resource>,
        /// Freshness and scope, when the server sends them.
        cache,
    }
}

/// Whether a listed child is a directory resource.
pub fn is_directory(resource: &Resource) -> bool {
    resource.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
}

#[cfg(test)]
mod tests;
