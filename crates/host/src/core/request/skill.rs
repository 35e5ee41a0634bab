//! Skill requests on the governed path, for a front end serving its
//! servers' skills (the gateway): `skills/get` of a skill, `resources/read`
//! of one of its files, `resources/directory/read` of one of its
//! directories. Each names its server by alias and the URI there
//! ([`SkillRef`]); the route checks the caller's `principals` rules about
//! the skill the URI belongs to (`skill:ALIAS:SKILL_PATH`, or the whole
//! server); the server answers; one audit line names the method and the
//! caller. Nothing is verified or rewritten here: the bytes and digests
//! pass as the server sent them (a host acting on the skill verifies).

use switchboard_wire::skills::{DIRECTORY_READ, SKILLS_GET};
use switchboard_wire::types::method;
use switchboard_wire::{ReadDirectoryResult, ReadResourceResult, Skill};

use super::outcome::{Answer, End, Governed};
use super::{CallOptions, Kind, Named, OfferError, Start, Target};
use crate::audit::Outcome;
use crate::core::Host;
use crate::skills::skill_path;

/// What a skill request names: the server, by alias, and a URI there (a
/// skill's `SKILL.md`, one of its files, or one of its directories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkillRef<'a> {
    /// The server's alias.
    pub server: &'a str,
    /// The URI on that server.
    pub uri: &'a str,
}

/// Which skill request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Read,
    Directory,
}

/// One skill request of a caller.
struct SkillRequest<'a, T> {
    at: SkillRef<'a>,
    method: Method,
    cursor: Option<&'a str>,
    principal: Option<&'a str>,
    answer: std::marker::PhantomData<fn() -> T>,
}

impl Answer for Skill {}

impl Answer for ReadDirectoryResult {}

/// What each answer type is fetched with.
trait Fetch: Answer + Sized + 'static {
    const METHOD: &'static str;
    fn fetch<'a>(
        client: &'a switchboard_client::Client,
        request: &'a SkillRequest<'a, Self>,
        options: &'a CallOptions,
    ) -> impl Future<Output = Result<Self, switchboard_client::ClientError>> + Send + 'a;
}

impl Fetch for Skill {
    const METHOD: &'static str = SKILLS_GET;
    async fn fetch<'a>(
        client: &'a switchboard_client::Client,
        request: &'a SkillRequest<'a, Self>,
        _options: &'a CallOptions,
    ) -> Result<Self, switchboard_client::ClientError> {
        client.get_skill(request.at.uri).await.map(|r| r.skill)
    }
}

impl Fetch for ReadResourceResult {
    const METHOD: &'static str = method::RESOURCES_READ;
    async fn fetch<'a>(
        client: &'a switchboard_client::Client,
        request: &'a SkillRequest<'a, Self>,
        options: &'a CallOptions,
    ) -> Result<Self, switchboard_client::ClientError> {
        client
            .read_resource_with(request.at.uri, &options.request)
            .await
    }
}

impl Fetch for ReadDirectoryResult {
    const METHOD: &'static str = DIRECTORY_READ;
    async fn fetch<'a>(
        client: &'a switchboard_client::Client,
        request: &'a SkillRequest<'a, Self>,
        _options: &'a CallOptions,
    ) -> Result<Self, switchboard_client::ClientError> {
        client
            .read_directory_page(request.at.uri, request.cursor)
            .await
    }
}

impl<'a, T: Fetch> Kind for SkillRequest<'a, T> {
    type Answer = T;
    type Route = ();
    const METHOD: Option<&'static str> = Some(T::METHOD);

    fn named(&self) -> Named<'_> {
        Named::Skill {
            server: self.at.server,
            uri: self.at.uri,
        }
    }

    fn refused(&self) -> String {
        format!("{} {} was refused", T::METHOD, self.at.uri)
    }

    fn forbidden(&self, principal: &str, why: &str) -> String {
        format!(
            "The gateway's rules do not let {principal} reach {} ({why}).",
            self.at.uri
        )
    }

    async fn route(&self, host: &Host) -> Result<(Target, ()), Governed<T>> {
        let unknown = Governed::unknown;
        let Some(target) = host.target(self.named()) else {
            return Err(unknown(format!(
                "no server {:?} serves skills here",
                self.at.server
            )));
        };
        if let Some(principal) = self.principal {
            // The rules name skills: a file or directory answers to the
            // skill it belongs to.
            let path = host.skill_path_of(self.at.server, self.at.uri, self.method == Method::Get);
            if !host.principal_may_skill(principal, self.at.server, &path) {
                let text = format!(
                    "The gateway's rules do not let {principal} use skill {}:{path}.",
                    self.at.server
                );
                return Err(Governed::at(
                    Some(&target),
                    None,
                    End::stopped(Outcome::Denied, text),
                ));
            }
        }
        Ok((target, ()))
    }

    async fn run(
        self,
        host: &Host,
        (target, ()): (Target, ()),
        options: &CallOptions,
        _start: Start<'_>,
    ) -> Governed<T> {
        host.ask_server(&target, options, |client| async move {
            T::fetch(&client, &self, options).await
        })
        .await
    }
}

impl Host {
    /// `skills/get` of the skill at `skill.uri` on server `skill.server`,
    /// on the governed path: the caller's limits and `principals` rules
    /// (about that skill), one audit line (method `skills/get`).
    ///
    /// # Errors
    /// [`OfferError`]: no such server, a refusal, the server's error
    /// (-32602 for a skill it does not serve), or its failure to answer.
    pub async fn get_served_skill(
        &self,
        skill: SkillRef<'_>,
        options: CallOptions,
    ) -> Result<Skill, OfferError> {
        self.skill_request(skill, Method::Get, None, options).await
    }

    /// `resources/read` of a skill's file, as [`Host::get_served_skill`];
    /// the content as the server sent it (a host acting on the skill
    /// verifies it).
    ///
    /// # Errors
    /// As [`Host::get_served_skill`].
    pub async fn read_skill_resource(
        &self,
        file: SkillRef<'_>,
        options: CallOptions,
    ) -> Result<ReadResourceResult, OfferError> {
        self.skill_request(file, Method::Read, None, options).await
    }

    /// One page of `resources/directory/read` of a skill's directory, as
    /// [`Host::get_served_skill`] (`cursor` is the server's, echoed).
    ///
    /// # Errors
    /// As [`Host::get_served_skill`] (-32602 for what is no directory).
    pub async fn read_skill_directory(
        &self,
        dir: SkillRef<'_>,
        cursor: Option<&str>,
        options: CallOptions,
    ) -> Result<ReadDirectoryResult, OfferError> {
        self.skill_request(dir, Method::Directory, cursor, options)
            .await
    }

    async fn skill_request<T: Fetch>(
        &self,
        at: SkillRef<'_>,
        method: Method,
        cursor: Option<&str>,
        options: CallOptions,
    ) -> Result<T, OfferError> {
        let request = SkillRequest::<T> {
            at,
            method,
            cursor,
            principal: options.principal.as_deref(),
            answer: std::marker::PhantomData,
        };
        self.govern(at.uri, request, &options)
            .await
            .into_offer_result()
    }

    /// The path of the skill `uri` of `alias` belongs to, for the rules:
    /// a `SKILL.md`'s own (`is_skill`), else the listed skill whose
    /// directory holds it (the deepest), else the URI's path itself.
    pub(crate) fn skill_path_of(&self, alias: &str, uri: &str, is_skill: bool) -> String {
        if is_skill {
            return skill_path(uri).to_owned();
        }
        let owner = self
            .skills()
            .into_iter()
            .filter(|r| r.server == alias)
            .filter_map(|r| {
                let root = switchboard_wire::skills::skill_root(&r.uri)?.to_owned();
                let inside = uri == root
                    || uri
                        .strip_prefix(root.as_str())
                        .is_some_and(|rest| rest.starts_with('/'));
                inside.then_some(root)
            })
            .max_by_key(String::len);
        match owner {
            Some(root) => root.strip_prefix("skill://").unwrap_or(&root).to_owned(),
            None => uri.strip_prefix("skill://").unwrap_or(uri).to_owned(),
        }
    }
}
