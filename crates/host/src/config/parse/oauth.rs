//! A server's `oauth` settings: `false`, or the client the host registers
//! or brings (client id, secret, scopes, redirect, assertion, identity
//! provider).

use serde_json::Value;

use super::{OAUTH_KEYS, Parser, is_http_url, key_path};
use crate::config::{AssertionConfig, OAuthClientConfig, OAuthSetting, ProblemKind};

impl Parser<'_> {
    pub(super) fn oauth(&mut self, value: &Value, key: &str) -> OAuthSetting {
        let obj = match value {
            Value::Bool(false) => return OAuthSetting::Off,
            Value::Bool(true) => return OAuthSetting::Auto,
            Value::Object(obj) => obj,
            _ => {
                self.bad_type(
                    key,
                    "false, or an object like {\"clientId\": \"...\", \"scopes\": [...]}",
                );
                return OAuthSetting::Auto;
            }
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, OAUTH_KEYS, &[], &mut ignore);
        let sub = |k: &str| key_path(key, k);
        let mut client = OAuthClientConfig {
            client_id: self.expanded_string(obj.get("clientId"), &sub("clientId")),
            client_secret: self.config_value(obj.get("clientSecret"), &sub("clientSecret")),
            issuer: self.expanded_string(obj.get("issuer"), &sub("issuer")),
            scopes: self.string_list(obj.get("scopes"), &sub("scopes"), true),
            client_metadata_url: self
                .expanded_string(obj.get("clientMetadataUrl"), &sub("clientMetadataUrl")),
            callback_port: None,
            dpop: None,
            assertion: None,
            idp: None,
        };
        match obj.get("dpop") {
            None => {}
            Some(Value::Bool(b)) => client.dpop = Some(*b),
            Some(_) => self.bad_type(&sub("dpop"), "true or false"),
        }
        if let Some(v) = obj.get("assertion") {
            let k = sub("assertion");
            match v.as_object() {
                Some(a) if a.len() == 1 && a.contains_key("file") => {
                    client.assertion = self
                        .expanded_string(a.get("file"), &key_path(&k, "file"))
                        .map(AssertionConfig::File);
                }
                Some(a) if a.len() == 1 && a.contains_key("command") => {
                    let argv = self.string_list(a.get("command"), &key_path(&k, "command"), true);
                    if argv.is_empty() {
                        self.bad_type(&key_path(&k, "command"), "a program and its arguments");
                    } else {
                        client.assertion = Some(AssertionConfig::Command(argv));
                    }
                }
                _ => self.bad_type(
                    &k,
                    "{\"file\": \"/path/to/token\"} or {\"command\": [\"program\", \"arg\"]}",
                ),
            }
            if client.assertion.is_some() && client.client_id.is_none() {
                self.problem(
                    ProblemKind::MissingKey,
                    &sub("clientId"),
                    "the JWT-bearer grant needs the client id the assertion is presented as".into(),
                    "add \"clientId\" next to \"assertion\"",
                );
            }
        }
        if let Some(v) = obj.get("idp") {
            let k = sub("idp");
            match v.as_str() {
                Some(name) if !name.is_empty() => {
                    client.idp = self.idps.get(name).map(|provider| {
                        Box::new(crate::config::ServerIdp {
                            name: name.to_owned(),
                            provider: provider.clone(),
                        })
                    });
                    self.idp_refs.push((k.clone(), name.to_owned()));
                }
                _ => self.bad_type(&k, "the name of an identityProviders entry"),
            }
            if client.assertion.is_some() {
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    "a server signs in either with a workload assertion or through an identity provider, not both".into(),
                    "remove \"assertion\" or \"idp\"",
                );
            }
            if obj.get("idp").is_some_and(Value::is_string) && client.client_id.is_none() {
                self.problem(
                    ProblemKind::MissingKey,
                    &sub("clientId"),
                    "the enterprise-managed grant needs Switchboard's client id at the server's authorization server".into(),
                    "add \"clientId\" next to \"idp\"",
                );
            }
        }
        if client.client_id.as_deref().is_some_and(str::is_empty) {
            self.bad_type(&sub("clientId"), "a non-empty client id");
        }
        if client.client_secret.is_some() && client.client_id.is_none() {
            self.problem(
                ProblemKind::MissingKey,
                &sub("clientId"),
                "a client secret needs the client id it belongs to".into(),
                "add \"clientId\" next to \"clientSecret\"",
            );
        }
        if let Some(issuer) = &client.issuer {
            if !is_http_url(issuer) {
                self.problem(
                    ProblemKind::BadValue,
                    &sub("issuer"),
                    format!("{issuer:?} is not an http:// or https:// URL"),
                    "write the authorization server's issuer URL, e.g. https://auth.example.com",
                );
            }
        }
        if let Some(url) = &client.client_metadata_url {
            let path = url
                .strip_prefix("https://")
                .and_then(|rest| rest.split_once('/'));
            if !path.is_some_and(|(host, path)| !host.is_empty() && !path.is_empty()) {
                self.problem(
                    ProblemKind::BadValue,
                    &sub("clientMetadataUrl"),
                    format!("{url:?} is not an https:// URL with a path"),
                    "write the https URL your client metadata document is served at, e.g. https://example.com/switchboard.json",
                );
            }
        }
        for (i, scope) in client.scopes.iter().enumerate() {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                self.problem(
                    ProblemKind::BadValue,
                    &format!("{}[{i}]", sub("scopes")),
                    format!("{scope:?} is not one scope"),
                    "write each scope as its own string, e.g. [\"read\", \"write\"]",
                );
            }
        }
        if let Some(v) = obj.get("callbackPort") {
            match v.as_u64().and_then(|n| u16::try_from(n).ok()) {
                Some(port) if port > 0 => client.callback_port = Some(port),
                _ => self.bad_type(&sub("callbackPort"), "a port number between 1 and 65535"),
            }
        }
        OAuthSetting::Client(client)
    }
}
