//! Finding the server's era when the client connects: the
//! `server/discover` probe, a retry with a version a -32022 error offers,
//! or the 2025-11-25 `initialize` handshake as the legacy fallback.

use super::*;

impl Client {
    pub(super) fn remember_discover(&self, result: &DiscoverResult) {
        let server_info = result
            .header
            .meta
            .as_ref()
            .and_then(|m| m.get(SERVER_INFO))
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let description = ServerDescription {
            era: Era::Modern,
            protocol_version: self.session().version.clone(),
            capabilities: result.capabilities.clone(),
            server_info,
            instructions: result.instructions.clone(),
        };
        if let Ok(mut d) = self.inner.description.write() {
            *d = Some(description);
        }
    }

    /// Finds the server's era: the `server/discover` probe, a retry with a
    /// version from a -32022 error, or the legacy fallback.
    pub(super) async fn connect(&self) -> Result<(), ClientError> {
        let policy = self.inner.config.era_policy;
        match policy {
            EraPolicy::LegacyOnly => return self.initialize().await,
            EraPolicy::AssumeModern => {
                self.set_session(self.modern_session(version::LATEST));
                return Ok(());
            }
            _ => {}
        }
        // --- HTTP: a server found legacy earlier in this process skips the
        // probe (VER-07); if the handshake fails now, probe afresh. ---
        if policy == EraPolicy::Probe && self.inner.transport.era_hint() == Some(Era::Legacy) {
            match self.initialize().await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    debug!(server = %self.inner.name, error = %e, "remembered legacy era failed; probing again")
                }
            }
        }
        let mut version = version::LATEST.to_owned();
        let probe = RequestOptions::timeout(self.inner.config.probe_timeout);
        for attempt in 0..2 {
            self.set_session(self.modern_session(&version));
            let outcome = self
                .send(method::DISCOVER, None, &probe)
                .await
                .and_then(|v| {
                    serde_json::from_value::<DiscoverResult>(v)
                        .map_err(|e| self.invalid(method::DISCOVER, e.to_string()))
                });
            match outcome {
                Ok(result) => {
                    if !result.supported_versions.contains(&version) {
                        match version::pick_modern(&result.supported_versions) {
                            Some(v) if attempt == 0 => {
                                version = v.to_owned();
                                continue;
                            }
                            _ => {
                                return Err(ClientError::UnsupportedVersion {
                                    server: self.inner.name.clone(),
                                    supported: result.supported_versions,
                                });
                            }
                        }
                    }
                    self.remember_discover(&result);
                    debug!(server = %self.inner.name, version = %version, "modern server");
                    return Ok(());
                }
                Err(ClientError::Protocol { error, .. })
                    if error.code == ErrorCode::UnsupportedProtocolVersion.code() =>
                {
                    // A recognised modern error: the server is modern; use a
                    // version it names, never fall back (STDIO-15).
                    let supported = error
                        .unsupported_version_data()
                        .map(|d| d.supported)
                        .unwrap_or_default();
                    match version::pick_modern(&supported) {
                        // Even the version we sent: retry the call once
                        // with it (VER-03), never loop.
                        Some(v) if attempt == 0 => version = v.to_owned(),
                        _ => {
                            return Err(ClientError::UnsupportedVersion {
                                server: self.inner.name.clone(),
                                supported,
                            });
                        }
                    }
                }
                Err(e @ ClientError::Protocol { .. })
                    if e.protocol_error()
                        .and_then(ErrorObject::known_code)
                        .is_some_and(ErrorCode::is_modern) =>
                {
                    return Err(e);
                }
                Err(
                    e @ (ClientError::Protocol { .. }
                    | ClientError::Timeout { .. }
                    | ClientError::InvalidResult { .. }),
                ) if policy == EraPolicy::Probe => {
                    // Any other error, silence or a non-discover answer: a
                    // legacy server (STDIO-16: not keyed to one code).
                    match self.initialize().await {
                        Ok(()) => return Ok(()),
                        // Silence may also be a modern server still starting
                        // up: if it then refuses initialize, probe once more
                        // now that it answers (VER-07: re-probe on failure).
                        Err(ClientError::Protocol { error, .. })
                            if e.is_timeout() && attempt == 0 =>
                        {
                            debug!(server = %self.inner.name, %error, "initialize refused after a silent probe; probing again");
                        }
                        Err(init) => return Err(init),
                    }
                }
                // --- HTTP: 400/404/405 without a modern error body is how a
                // 2025-11-25 or HTTP+SSE server refuses a modern POST
                // (HTTP-C-16); the transport's handshake reaches both. ---
                Err(ClientError::Transport(t))
                    if policy == EraPolicy::Probe && t.is_other_era_refusal() =>
                {
                    return self.initialize().await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::UnsupportedVersion {
            server: self.inner.name.clone(),
            supported: Vec::new(),
        })
    }

    pub(super) fn modern_session(&self, version: &str) -> Session {
        let mut base_meta = JsonObject::new();
        base_meta.insert(PROTOCOL_VERSION.into(), Value::from(version));
        base_meta.insert(
            CLIENT_CAPABILITIES.into(),
            serde_json::to_value(&self.inner.capabilities).unwrap_or_else(|_| json!({})),
        );
        base_meta.insert(
            CLIENT_INFO.into(),
            serde_json::to_value(&self.inner.config.client_info).unwrap_or(Value::Null),
        );
        Session {
            era: Era::Modern,
            version: version.to_owned(),
            base_meta: Arc::new(SharedMeta::new(base_meta)),
        }
    }

    /// The 2025-11-25 handshake: `initialize`, then
    /// `notifications/initialized`; legacy wire from then on.
    pub(super) async fn initialize(&self) -> Result<(), ClientError> {
        self.set_session(Session {
            era: Era::Legacy,
            version: version::LEGACY.to_owned(),
            base_meta: Arc::default(),
        });
        let mut params = JsonObject::new();
        params.insert("protocolVersion".into(), Value::from(version::LEGACY));
        params.insert(
            "capabilities".into(),
            serde_json::to_value(&self.inner.capabilities).unwrap_or_else(|_| json!({})),
        );
        params.insert(
            "clientInfo".into(),
            serde_json::to_value(&self.inner.config.client_info).unwrap_or(Value::Null),
        );
        let value = self
            .send(method::INITIALIZE, Some(params), &RequestOptions::default())
            .await?;
        let result: InitializeResult = self.parse(method::INITIALIZE, value)?;
        if !version::LEGACY_ACCEPTED.contains(&result.protocol_version.as_str()) {
            return Err(ClientError::UnsupportedVersion {
                server: self.inner.name.clone(),
                supported: vec![result.protocol_version],
            });
        }
        self.inner
            .transport
            .notify(Notification::new(method::INITIALIZED, None))
            .await?;
        self.set_session(Session {
            era: Era::Legacy,
            version: result.protocol_version.clone(),
            base_meta: Arc::default(),
        });
        debug!(server = %self.inner.name, version = %result.protocol_version, "legacy server");
        if let Ok(mut d) = self.inner.description.write() {
            *d = Some(ServerDescription {
                era: Era::Legacy,
                protocol_version: result.protocol_version,
                capabilities: result.capabilities,
                server_info: Some(result.server_info),
                instructions: result.instructions,
            });
        }
        Ok(())
    }
}
