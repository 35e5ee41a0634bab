//! The Skills extension (`io.modelcontextprotocol/skills`) on the client:
//! `skills/list` (every page), `skills/get`, `resources/directory/read`,
//! and the fetch of one skill file checked against the entry the caller
//! holds ([`Client::fetch_skill_file`]).
//!
//! Each method is sent only to a server that declared the extension
//! (SK-CAP-5), and directory reads only when it declared `directoryRead`
//! (SK-CAP-3); otherwise the call is refused here, before anything is
//! sent, with [`ClientError::Unsupported`].
//!
//! These are the building blocks of a host's skill registry: list (the
//! entries are complete manifests, so nothing else is fetched: SK-VER-6),
//! confirm a skill known only by URI with `get_skill` (SK-LIST-3), and
//! fetch a file only when it is needed, verified before it is returned.

use serde_json::Value;
use switchboard_wire::skills::{
    DIRECTORY_READ, EXTENSION_ID, SKILLS_GET, SKILLS_LIST, contents_bytes,
};
use switchboard_wire::types::JsonObject;
use switchboard_wire::{
    GetSkillResult, ListSkillsResult, ReadDirectoryResult, Resource, Skill, SkillError,
    SkillsCapability,
};

use super::methods::cursor_params;
use super::{Client, Listing};
use crate::error::ClientError;
use crate::options::RequestOptions;

/// Why [`Client::fetch_skill_file`] returned no bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillFetchError {
    /// The bytes (or the entry) failed verification: they must not be used
    /// (SK-VER-2). [`SkillError::kind`] names the failure.
    #[error(transparent)]
    Verify(#[from] SkillError),
    /// The read failed (the server refused it, or is gone).
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl SkillFetchError {
    /// The verification failure, when that is what this is.
    pub fn verification(&self) -> Option<&SkillError> {
        match self {
            SkillFetchError::Verify(e) => Some(e),
            SkillFetchError::Client(_) => None,
        }
    }
}

impl Client {
    /// The extension's settings as the server declared them when the
    /// client connected; `None` when it did not declare the extension.
    pub fn skills_capability(&self) -> Option<SkillsCapability> {
        self.server()
            .and_then(|s| SkillsCapability::of(&s.capabilities))
    }

    /// The declared settings, or a local refusal naming `method`.
    fn skills_declared(&self, method: &str) -> Result<SkillsCapability, ClientError> {
        self.skills_capability()
            .ok_or_else(|| ClientError::Unsupported {
                server: self.server_name().to_owned(),
                method: method.to_owned(),
                what: format!("the {EXTENSION_ID} extension, which the server did not declare"),
            })
    }

    /// One page of `skills/list`. `cursor` is echoed unchanged.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] when the server did not declare the
    /// extension (nothing is sent); otherwise as for any request. An entry
    /// whose `resources` is invalid is kept in the page, as
    /// [`switchboard_wire::SkillResources::Invalid`].
    pub async fn list_skills_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListSkillsResult, ClientError> {
        self.skills_declared(SKILLS_LIST)?;
        self.typed(
            SKILLS_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every skill entry, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_skills_page`], and as [`Client::list_all_tools`]
    /// for a listing that does not end.
    pub async fn list_skills(&self) -> Result<Listing<Skill>, ClientError> {
        self.skills_declared(SKILLS_LIST)?;
        self.list_all(SKILLS_LIST, |c| async move {
            let p = self.list_skills_page(c.as_deref()).await?;
            Ok((p.skills, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// The entry of the skill whose `SKILL.md` is at `uri`, listed or not
    /// (SK-LIST-3).
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] without the extension; a protocol
    /// error (-32602) for a skill the server does not serve;
    /// [`ClientError::InvalidResult`] when the answer is for another URI.
    pub async fn get_skill(&self, uri: &str) -> Result<GetSkillResult, ClientError> {
        self.skills_declared(SKILLS_GET)?;
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::from(uri));
        let result: GetSkillResult = self
            .typed(SKILLS_GET, params, &RequestOptions::default())
            .await?;
        if result.skill.uri != uri {
            return Err(self.invalid(
                SKILLS_GET,
                format!(
                    "asked for {uri}, answered with the entry of {}",
                    result.skill.uri
                ),
            ));
        }
        Ok(result)
    }

    /// One page of `resources/directory/read` of the directory at `uri`.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] when the server did not declare the
    /// extension with `directoryRead: true` (nothing is sent: SK-CAP-3);
    /// otherwise as for any request (-32602 for a URI that is not a
    /// directory).
    pub async fn read_directory_page(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ReadDirectoryResult, ClientError> {
        if !self.skills_declared(DIRECTORY_READ)?.directory_read() {
            return Err(ClientError::Unsupported {
                server: self.server_name().to_owned(),
                method: DIRECTORY_READ.to_owned(),
                what: "directoryRead, which the server did not declare".into(),
            });
        }
        let mut params = cursor_params(cursor);
        params.insert("uri".into(), Value::from(uri));
        self.typed(DIRECTORY_READ, params, &RequestOptions::default())
            .await
    }

    /// Every direct child of the directory at `uri`, paging until
    /// `nextCursor` is absent. The result is what the server serves now;
    /// it never adds to a held entry's files (SK-DIR-7).
    ///
    /// # Errors
    /// As [`Client::read_directory_page`].
    pub async fn read_directory(&self, uri: &str) -> Result<Listing<Resource>, ClientError> {
        self.list_all(DIRECTORY_READ, |c| async move {
            let p = self.read_directory_page(uri, c.as_deref()).await?;
            Ok((p.resources, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// Reads the file at `uri` of `skill` (an entry the caller holds) and
    /// returns its bytes once verified: the entry is valid and within the
    /// limits, the file is listed in it (checked before anything is read:
    /// SK-VER-3/4), the bytes have the listed size and digest, and for
    /// the skill's `SKILL.md` the frontmatter equals the entry's (SK-VER-1,
    /// SK-VER-5, SK-ENT-16). Nothing unverified is returned (SK-VER-2).
    ///
    /// # Errors
    /// [`SkillFetchError::Verify`] naming the failure; [`SkillFetchError::Client`]
    /// when the read itself failed.
    pub async fn fetch_skill_file(
        &self,
        skill: &Skill,
        uri: &str,
    ) -> Result<Vec<u8>, SkillFetchError> {
        skill.check()?;
        skill.listed(uri)?;
        let read = self.read_resource(uri).await?;
        let contents = match read.contents.iter().find(|c| c.uri == uri) {
            Some(c) => c,
            None if read.contents.len() == 1 => &read.contents[0],
            None => {
                return Err(self
                    .invalid(
                        "resources/read",
                        format!("no content item for {uri} among {}", read.contents.len()),
                    )
                    .into());
            }
        };
        let bytes =
            contents_bytes(contents).map_err(|reason| self.invalid("resources/read", reason))?;
        skill.verify_file(uri, &bytes)?;
        Ok(bytes)
    }
}
