//! The skills requests, answered from the catalog's snapshot:
//! `skills/list` (paged with the signed cursors of every list; an entry
//! is never split: SK-LIST-4), `skills/get` (-32602 for a skill not
//! served: SK-GET-3), `resources/directory/read` (-32602 for anything but
//! a directory: SK-DIR-2) and `resources/read` of a skill file (text when
//! the file is text, base64 `blob` otherwise; -32602 for a file not
//! served: SK-ERR-1).

use std::sync::Arc;

use serde_json::Value;
use switchboard_wire::skills::{DIRECTORY_READ, SKILLS_GET, SKILLS_LIST};
use switchboard_wire::{
    ReadResourceResult, Resource, ResourceContents, Sha256Digest,
    types::{CacheHints, ResultHeader},
};

use super::{Catalog, ServedFile, Snapshot, Source, is_textual};
use crate::dispatch::{Listed, page_start, write_cache};
use crate::error::{Fault, HandlerError};
use crate::resource::{blob_contents, text_contents};
use crate::seal::{ListKind, generation};
use crate::server::Server;

impl Server {
    /// The skills catalog, when the server serves skills.
    pub(crate) fn skills(&self) -> Option<&Arc<Catalog>> {
        self.inner.skills.as_ref()
    }

    /// The current snapshot after walking the skills directories; tells
    /// listen streams the resource list changed when it did (the
    /// `SKILL.md` resources are in `resources/list`).
    pub(crate) async fn refresh_skills(&self) -> Option<Arc<Snapshot>> {
        let catalog = self.skills()?;
        let before = catalog.now();
        let after = catalog.current().await;
        if !Arc::ptr_eq(&before, &after) {
            self.inner.notifier.resources_list_changed();
        }
        Some(after)
    }

    /// `skills/list`: one page of entries.
    pub(crate) async fn skills_list(&self, params: Option<Value>) -> Result<Vec<u8>, Fault> {
        if self.skills().is_none() {
            return Err(Fault::method_not_found(SKILLS_LIST));
        }
        let at = self.cursor_at(ListKind::Skills, params.as_ref())?;
        let Some(snapshot) = self.refresh_skills().await else {
            return Err(Fault::method_not_found(SKILLS_LIST));
        };
        let generation = generation(snapshot.skills.iter().map(|s| s.entry.uri.as_str()));
        let offset = page_start(at, generation)?;
        let page = self.inner.options.page_size;
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(b"{\"skills\":[");
        for (i, skill) in snapshot.skills.iter().skip(offset).take(page).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&skill.json);
        }
        out.push(b']');
        let listed = Listed {
            offset,
            len: snapshot.skills.len(),
            generation,
        };
        self.write_next_cursor(&mut out, ListKind::Skills, listed, page);
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is
    /// `params.uri`, listed or not (SK-GET-4), with no cursor (SK-GET-1).
    pub(crate) async fn skills_get(&self, params: Option<Value>) -> Result<Vec<u8>, Fault> {
        let Some(snapshot) = self.refresh_skills().await else {
            return Err(Fault::method_not_found(SKILLS_GET));
        };
        let uri = uri_param(params.as_ref(), SKILLS_GET)?;
        let Some(skill) = snapshot.skill_index.get(uri).map(|i| &snapshot.skills[*i]) else {
            return Err(Fault::invalid_params(format!(
                "No skill is served at {uri}; skills/list names the skills this server serves"
            )));
        };
        let mut out = Vec::with_capacity(skill.json.len() + 128);
        out.extend_from_slice(b"{\"skill\":");
        out.extend_from_slice(&skill.json);
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// `resources/directory/read`: one page of a directory's direct
    /// children (SK-DIR-1/3).
    pub(crate) async fn directory_read(&self, params: Option<Value>) -> Result<Vec<u8>, Fault> {
        if !self.skills().is_some_and(|c| c.directory_read) {
            return Err(Fault::method_not_found(DIRECTORY_READ));
        }
        let uri = uri_param(params.as_ref(), DIRECTORY_READ)?.to_owned();
        let at = self.cursor_at(ListKind::Directory, params.as_ref())?;
        let Some(snapshot) = self.refresh_skills().await else {
            return Err(Fault::method_not_found(DIRECTORY_READ));
        };
        let Some(children) = snapshot.dirs.get(&uri) else {
            let what = if snapshot.files.contains_key(&uri) {
                "is not a directory resource"
            } else {
                "is not a directory this server serves"
            };
            return Err(Fault::invalid_params(format!("{uri} {what}")));
        };
        // The directory's URI is part of its generation: a cursor of one
        // directory does not page another.
        let generation = generation(
            std::iter::once(uri.as_str()).chain(children.iter().map(|r| r.uri.as_str())),
        );
        let offset = page_start(at, generation)?;
        let page = self.inner.options.page_size;
        let shown: Vec<&Resource> = children.iter().skip(offset).take(page).collect();
        let mut out = b"{\"resources\":".to_vec();
        out.extend_from_slice(&serde_json::to_vec(&shown).unwrap_or_else(|_| b"[]".to_vec()));
        let listed = Listed {
            offset,
            len: children.len(),
            generation,
        };
        self.write_next_cursor(&mut out, ListKind::Directory, listed, page);
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// The `SKILL.md` resources `resources/list` shows after the fixed
    /// resources (SK-MAP-6: name and description from the frontmatter).
    pub(crate) fn skill_resources(&self) -> Vec<Resource> {
        self.skills()
            .map(|c| c.now().listed.clone())
            .unwrap_or_default()
    }

    /// `resources/read` of a skill file: `None` when `uri` is no skill
    /// file (the read goes on to templates, or not found).
    pub(crate) async fn read_skill_file(
        &self,
        uri: &str,
    ) -> Option<Result<ReadResourceResult, Fault>> {
        let catalog = self.skills()?;
        let mut snapshot = catalog.now();
        if !snapshot.files.contains_key(uri) {
            // A file added since the last walk.
            snapshot = self.refresh_skills().await?;
        }
        let file = snapshot.files.get(uri)?.clone();
        Some(read(catalog, uri, file).await)
    }
}

/// Reads a served file's bytes and frames them as `resources/read`
/// contents.
async fn read(
    catalog: &Arc<Catalog>,
    uri: &str,
    file: ServedFile,
) -> Result<ReadResourceResult, Fault> {
    let gone = || Fault::invalid_params(format!("resource {uri:?} is no longer served"));
    let bytes = match &file.source {
        Source::Fixed(bytes) => bytes.to_vec(),
        Source::Disk(path) => {
            let path = path.clone();
            match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                    catalog.distrust();
                    return Err(gone());
                }
                Ok(Err(e)) => {
                    tracing::error!(%uri, "cannot read a skill file: {e}");
                    return Err(Fault::internal(format!("cannot read {uri}")));
                }
                Err(_) => return Err(Fault::internal(format!("cannot read {uri}"))),
            }
        }
        Source::Dynamic(generate, path) => match generate(path.clone()).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(gone()),
            Err(e) => return Err(generator_fault(e)),
        },
    };
    if let Some(listed) = &file.listed {
        if listed.size != bytes.len() as u64
            || listed.digest != Sha256Digest::of(&bytes).to_string()
        {
            // Changed since the last walk: served as it is now (a host
            // verifies against its entry), and hashed again next time.
            catalog.distrust();
        }
    }
    let mime = file
        .resource
        .mime_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    let contents: ResourceContents = match std::str::from_utf8(&bytes) {
        Ok(text) if is_textual(mime) => text_contents(uri, mime, text),
        _ => blob_contents(uri, mime, &bytes),
    };
    Ok(ReadResourceResult {
        contents: vec![contents],
        cache: CacheHints::default(),
        header: ResultHeader::complete(),
    })
}

/// The `uri` string param of a skills request.
fn uri_param<'a>(params: Option<&'a Value>, method: &str) -> Result<&'a str, Fault> {
    match params.and_then(|p| p.get("uri")) {
        Some(Value::String(uri)) => Ok(uri),
        Some(_) => Err(Fault::invalid_params(format!(
            "{method}: uri must be a string"
        ))),
        None => Err(Fault::invalid_params(format!("{method} needs a uri"))),
    }
}

/// A dynamic skill's reader failed: its protocol error as it is, anything
/// else as -32603.
fn generator_fault(e: HandlerError) -> Fault {
    match e.into_parts() {
        Ok(message) => Fault::internal(message),
        Err(obj) => Fault::from_rpc(obj),
    }
}
