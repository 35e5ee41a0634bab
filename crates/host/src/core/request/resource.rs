//! `resources/read` on the governed path: the catalog routes the served
//! URI (or the served template that matched it) to its server and the URI
//! there; the contents' URIs are mapped back to the served ones, the
//! server's cache hints dropped (the caller sets its own), and the text
//! wrapped in boundary markers and held to the server's result budget
//! like a tool result's (`core/offered_text.rs`).

use switchboard_wire::ReadResourceResult;
use switchboard_wire::types::method;

use super::outcome::Governed;
use super::{CallOptions, Kind, Named, OfferError, Start, Target};
use crate::core::Host;

/// What a read names: a resource of the catalog, or a URI a served
/// resource template matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceRef<'a> {
    /// A listed resource, by its served URI.
    Listed(&'a str),
    /// A URI that a served template matched (the caller's server framework
    /// matched it): the template, by its served `uriTemplate`, and the URI.
    Templated {
        /// The served `uriTemplate`.
        template: &'a str,
        /// The URI read.
        uri: &'a str,
    },
}

/// One `resources/read`.
struct ReadResource<'a> {
    resource: ResourceRef<'a>,
}

impl<'a> ReadResource<'a> {
    /// The URI read.
    fn uri(&self) -> &'a str {
        match self.resource {
            ResourceRef::Listed(uri) | ResourceRef::Templated { uri, .. } => uri,
        }
    }
}

impl Kind for ReadResource<'_> {
    type Answer = ReadResourceResult;
    type Route = ();
    const METHOD: Option<&'static str> = Some(method::RESOURCES_READ);

    fn named(&self) -> Named<'_> {
        match self.resource {
            ResourceRef::Listed(uri) => Named::Resource(uri),
            ResourceRef::Templated { template, .. } => Named::Template(template),
        }
    }

    fn located(&self, host: &Host) -> Option<Target> {
        match self.resource {
            ResourceRef::Listed(uri) => host.target(Named::Resource(uri)),
            ResourceRef::Templated { template, uri } => {
                let catalog = host.catalog();
                catalog.template(template).map(|offered| Target {
                    alias: offered.alias.clone(),
                    original: offered.original_uri(uri).to_owned(),
                    by_name: false,
                    skill: false,
                })
            }
        }
    }

    fn refused(&self) -> String {
        format!("reading {} was refused", self.uri())
    }

    fn forbidden(&self, principal: &str, _why: &str) -> String {
        let named = match self.resource {
            ResourceRef::Listed(uri) => uri,
            ResourceRef::Templated { template, .. } => template,
        };
        format!("The user's permission rules for {principal} do not allow resource {named}.")
    }

    async fn route(&self, host: &Host) -> Result<(Target, ()), Governed<ReadResourceResult>> {
        if let Some(target) = self.located(host) {
            return Ok((target, ()));
        }
        Err(match self.resource {
            ResourceRef::Listed(uri) => Governed::unknown(format!(
                "unknown resource {uri:?}; resources/list names the resources on offer"
            )),
            ResourceRef::Templated { template, .. } => Governed::unknown_template(template),
        })
    }

    async fn run(
        self,
        host: &Host,
        (target, ()): (Target, ()),
        options: &CallOptions,
        _start: Start<'_>,
    ) -> Governed<ReadResourceResult> {
        let target = &target;
        host.ask_server(target, options, |client| async move {
            let mut result = client
                .read_resource_with(&target.original, &options.request)
                .await?;
            let catalog = host.catalog();
            for c in &mut result.contents {
                c.uri = catalog.served_uri(&target.alias, &c.uri);
            }
            result.cache = switchboard_wire::types::CacheHints::default();
            Ok(host.fit_resource(&target.alias, result))
        })
        .await
    }
}

impl Host {
    /// Reads a served resource from its server on the governed path: the
    /// caller's limits and `principals` rules (a resource follows the
    /// rules for its whole server), one audit line (tool = the URI read).
    /// The contents' URIs are mapped back to the served ones; the server's
    /// cache hints are dropped (the caller sets its own); text contents
    /// are wrapped in boundary markers naming the server and cut to its
    /// result budget with a note, as a tool result's.
    ///
    /// # Errors
    /// [`OfferError`]: an unknown URI or template, a refusal, the server's
    /// error, or its failure to answer.
    pub async fn read_resource(
        &self,
        resource: ResourceRef<'_>,
        options: CallOptions,
    ) -> Result<ReadResourceResult, OfferError> {
        let request = ReadResource { resource };
        let uri = request.uri();
        self.govern(uri, request, &options)
            .await
            .into_offer_result()
    }
}
