//! The top-level `"identityProviders"` section: enterprise identity
//! providers a server's `"oauth": {"idp": NAME}` signs in through (the
//! enterprise-managed grant).
//!
//! ```json
//! "identityProviders": {
//!   "corp": {"issuer": "https://idp.example.com", "clientId": "switchboard"}
//! }
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Parser, is_http_url, key_path};
use crate::config::{IdentityProviderConfig, ProblemKind};

const IDP_KEYS: &[&str] = &["issuer", "clientId", "clientSecret", "scopes"];
const SECTION: &str = "identityProviders";

impl Parser<'_> {
    /// Reads `"identityProviders"`; entries with a problem are left out
    /// (the problem is recorded).
    pub(super) fn identity_providers(
        &mut self,
        value: &Value,
    ) -> BTreeMap<String, IdentityProviderConfig> {
        let mut out = BTreeMap::new();
        let Some(map) = value.as_object() else {
            self.bad_type(
                SECTION,
                "an object mapping names to {\"issuer\": \"https://…\", \"clientId\": \"…\"}",
            );
            return out;
        };
        for (name, entry) in map {
            let key = key_path(SECTION, name);
            if let Some(idp) = self.identity_provider(entry, &key) {
                out.insert(name.clone(), idp);
            }
        }
        out
    }

    fn identity_provider(&mut self, value: &Value, key: &str) -> Option<IdentityProviderConfig> {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                key,
                "an object like {\"issuer\": \"https://…\", \"clientId\": \"…\"}",
            );
            return None;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, IDP_KEYS, &[], &mut ignore);
        let sub = |k: &str| key_path(key, k);
        let issuer = self.expanded_string(obj.get("issuer"), &sub("issuer"));
        let client_id = self.expanded_string(obj.get("clientId"), &sub("clientId"));
        let client_secret = self.config_value(obj.get("clientSecret"), &sub("clientSecret"));
        let scopes = self.string_list(obj.get("scopes"), &sub("scopes"), true);
        let before = self.problems.len();
        match &issuer {
            None if !obj.contains_key("issuer") => self.problem(
                ProblemKind::MissingKey,
                &sub("issuer"),
                "an identity provider needs its issuer URL".into(),
                "add \"issuer\": \"https://idp.example.com\"",
            ),
            Some(url) if !is_http_url(url) => self.problem(
                ProblemKind::BadValue,
                &sub("issuer"),
                format!("{url:?} is not an http:// or https:// URL"),
                "write the identity provider's issuer URL, e.g. https://idp.example.com",
            ),
            _ => {}
        }
        match &client_id {
            None if !obj.contains_key("clientId") => self.problem(
                ProblemKind::MissingKey,
                &sub("clientId"),
                "an identity provider needs Switchboard's client id there".into(),
                "add \"clientId\": \"…\" (the client registered for Switchboard at the identity provider)",
            ),
            Some(id) if id.is_empty() => self.bad_type(&sub("clientId"), "a non-empty client id"),
            _ => {}
        }
        for (i, scope) in scopes.iter().enumerate() {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                self.problem(
                    ProblemKind::BadValue,
                    &format!("{}[{i}]", sub("scopes")),
                    format!("{scope:?} is not one scope"),
                    "write each scope as its own string, e.g. [\"openid\", \"email\"]",
                );
            }
        }
        if self.problems.len() != before {
            return None;
        }
        Some(IdentityProviderConfig {
            issuer: issuer?,
            client_id: client_id?,
            client_secret,
            scopes,
        })
    }

    /// Every `oauth.idp` must name an `identityProviders` entry.
    pub(super) fn check_idp_refs(
        &mut self,
        refs: Vec<(String, String)>,
        known: &BTreeMap<String, IdentityProviderConfig>,
        section_present: bool,
    ) {
        for (key, name) in refs {
            if known.contains_key(&name) || (section_present && self.idp_named_with_problem(&name))
            {
                continue;
            }
            let names: Vec<&str> = known.keys().map(String::as_str).collect();
            let fix = if names.is_empty() {
                format!(
                    "add \"identityProviders\": {{{name:?}: {{\"issuer\": \"https://…\", \"clientId\": \"…\"}}}}"
                )
            } else {
                match super::did_you_mean(&name, &names) {
                    Some(s) => format!("did you mean {s:?}? known: {}", names.join(", ")),
                    None => format!(
                        "name one of {} or add {name:?} to \"identityProviders\"",
                        names.join(", ")
                    ),
                }
            };
            self.problem(
                ProblemKind::BadValue,
                &key,
                format!("no identity provider is named {name:?}"),
                fix,
            );
        }
    }

    /// Whether an entry named `name` exists but had its own problem
    /// (reported there; not again as unknown).
    fn idp_named_with_problem(&self, name: &str) -> bool {
        let prefix = key_path(SECTION, name);
        self.problems
            .iter()
            .any(|p| p.key == prefix || p.key.starts_with(&format!("{prefix}.")))
    }
}
