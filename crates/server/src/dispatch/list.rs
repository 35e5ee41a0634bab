//! The list methods: a page of tools, prompts, resources, templates or
//! skills for the caller, its cursor and its cache hints (PAGE-*, CACHE-01).

use super::*;

impl Server {
    // -- lists -------------------------------------------------------------

    pub(super) fn list(
        &self,
        kind: ListKind,
        params: Option<Value>,
        principal: Option<&Principal>,
    ) -> Result<Vec<u8>, Fault> {
        let caps = &self.inner.capabilities;
        let (declared, member, name) = match kind {
            ListKind::Tools => (caps.tools.is_some(), "tools", method::TOOLS_LIST),
            ListKind::Prompts => (caps.prompts.is_some(), "prompts", method::PROMPTS_LIST),
            ListKind::Resources => (
                caps.resources.is_some(),
                "resources",
                method::RESOURCES_LIST,
            ),
            ListKind::Templates => (
                caps.resources.is_some(),
                "resourceTemplates",
                method::RESOURCES_TEMPLATES_LIST,
            ),
            // Answered by the skills module, never routed here.
            ListKind::Skills | ListKind::Directory => {
                return Err(Fault::method_not_found(name_of(kind)));
            }
        };
        if !declared {
            // HTTP-S-17: a feature not advertised is a method not found.
            return Err(Fault::method_not_found(name));
        }
        let at = self.cursor_at(kind, params.as_ref())?;
        let registry = self.registry();
        let offers = self.offer_filter();
        let page = self.inner.options.page_size;
        let mut out = Vec::with_capacity(1024);
        out.push(b'{');
        out.push(b'"');
        out.extend_from_slice(member.as_bytes());
        out.extend_from_slice(b"\":");
        let listed = match kind {
            ListKind::Tools => match self.tool_filter() {
                None => write_page(
                    &mut out,
                    &registry.tools,
                    at,
                    page,
                    |t| &t.def.name,
                    |t| &t.def,
                ),
                Some(keep) => {
                    let shown: Vec<_> = registry
                        .tools
                        .iter()
                        .filter(|t| keep(principal, &t.def.name))
                        .cloned()
                        .collect();
                    write_page(&mut out, &shown, at, page, |t| &t.def.name, |t| &t.def)
                }
            },
            ListKind::Prompts => {
                let shown = offered(&registry.prompts, principal, &offers, |p| {
                    Offered::Prompt(&p.def.name)
                });
                write_page(&mut out, &shown, at, page, |p| &p.def.name, |p| &p.def)
            }
            ListKind::Resources => {
                let shown = offered(&registry.resources, principal, &offers, |r| {
                    Offered::Resource(&r.def.uri)
                });
                let skills = self.skill_resources();
                if skills.is_empty() {
                    write_page(&mut out, &shown, at, page, |r| &r.def.uri, |r| &r.def)
                } else {
                    // The fixed resources, then the skills' SKILL.md files.
                    let all: Vec<Arc<switchboard_wire::Resource>> = shown
                        .iter()
                        .map(|r| Arc::new(r.def.clone()))
                        .chain(skills.into_iter().map(Arc::new))
                        .collect();
                    write_page(&mut out, &all, at, page, |r| &r.uri, |r| r)
                }
            }
            ListKind::Skills | ListKind::Directory => Ok(Listed::default()),
            ListKind::Templates => {
                let shown = offered(&registry.templates, principal, &offers, |t| {
                    Offered::Template(&t.def.uri_template)
                });
                write_page(
                    &mut out,
                    &shown,
                    at,
                    page,
                    |t| &t.def.uri_template,
                    |t| &t.def,
                )
            }
        }?;
        self.write_next_cursor(&mut out, kind, listed, page);
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// Writes `,"nextCursor":…` after a page of `listed` when more
    /// follow.
    pub(crate) fn write_next_cursor(
        &self,
        out: &mut Vec<u8>,
        kind: ListKind,
        listed: Listed,
        page: usize,
    ) {
        let next = listed.offset.saturating_add(page);
        if next < listed.len {
            out.extend_from_slice(b",\"nextCursor\":");
            let at = CursorAt {
                offset: next,
                generation: listed.generation,
            };
            out.extend_from_slice(&to_json(&self.inner.keys.cursor(kind, at)));
        }
    }

    /// Where the page a list request asks for starts: `None` without a
    /// cursor, else where a cursor this server issued for `kind` points
    /// (-32602 for any other: PAGE-03). Whether the list is still the
    /// one it was issued for is [`page_start`]'s question.
    pub(crate) fn cursor_at(
        &self,
        kind: ListKind,
        params: Option<&Value>,
    ) -> Result<Option<CursorAt>, Fault> {
        match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(c)) => self.inner.keys.open_cursor(kind, c).map(Some).ok_or_else(|| {
                Fault::invalid_params(
                    "invalid cursor: it was not issued by this server for this list; list again without a cursor",
                )
            }),
            Some(_) => Err(Fault::invalid_params("cursor must be a string")),
        }
    }

    // -- tools, prompts, resources (MRTR-capable) --------------------------
}

/// The entries of `items` the offer filter keeps for `principal` (all of
/// them, uncopied, without a filter); `what` says what each entry is.
pub(super) fn offered<'a, T>(
    items: &'a [Arc<T>],
    principal: Option<&Principal>,
    filter: &Option<crate::server::OfferFilter>,
    what: impl Fn(&T) -> Offered<'_>,
) -> std::borrow::Cow<'a, [Arc<T>]> {
    match filter {
        None => std::borrow::Cow::Borrowed(items),
        Some(keep) => items
            .iter()
            .filter(|item| keep(principal, what(item)))
            .cloned()
            .collect(),
    }
}

/// A page written: where it started, in a list of how many items, of
/// which generation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Listed {
    /// The page's first item.
    pub(crate) offset: usize,
    /// Items in the whole list.
    pub(crate) len: usize,
    /// The list's generation, for the next cursor.
    pub(crate) generation: u32,
}

/// The offset a page starts at: 0 without a cursor, the cursor's offset
/// while the list is the one it was issued for (`now`, its generation),
/// and a -32602 refusal once the list changed (an item added, removed or
/// moved): the offset would skip or repeat items, so the client lists
/// again from the start.
pub(crate) fn page_start(at: Option<CursorAt>, now: u32) -> Result<usize, Fault> {
    match at {
        None => Ok(0),
        Some(at) if at.generation == now => Ok(at.offset),
        Some(_) => Err(Fault::invalid_params(
            "stale cursor: the list changed since this cursor was issued; list again without a cursor",
        )),
    }
}

/// Writes the page of `items` (keyed by `key`) that `at` asks for, as a
/// JSON array of `def`s.
pub(super) fn write_page<T, D: Serialize>(
    out: &mut Vec<u8>,
    items: &[Arc<T>],
    at: Option<CursorAt>,
    page: usize,
    key: impl Fn(&Arc<T>) -> &str,
    def: impl Fn(&T) -> &D,
) -> Result<Listed, Fault> {
    let generation = generation(items.iter().map(key));
    let offset = page_start(at, generation)?;
    out.push(b'[');
    for (i, item) in items.iter().skip(offset).take(page).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, def(item));
    }
    out.push(b']');
    Ok(Listed {
        offset,
        len: items.len(),
        generation,
    })
}

/// The method a list kind answers.
pub(super) fn name_of(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => method::TOOLS_LIST,
        ListKind::Prompts => method::PROMPTS_LIST,
        ListKind::Resources => method::RESOURCES_LIST,
        ListKind::Templates => method::RESOURCES_TEMPLATES_LIST,
        ListKind::Skills => skills::SKILLS_LIST,
        ListKind::Directory => skills::DIRECTORY_READ,
    }
}

/// Writes `,"ttlMs":…,"cacheScope":…` (CACHE-01).
pub(crate) fn write_cache(out: &mut Vec<u8>, hints: &CacheHints) {
    out.extend_from_slice(b",\"ttlMs\":");
    out.extend_from_slice(hints.ttl_ms.unwrap_or(0).max(0).to_string().as_bytes());
    out.extend_from_slice(b",\"cacheScope\":");
    out.extend_from_slice(&to_json(&hints.cache_scope));
}
