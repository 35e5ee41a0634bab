//! Small top-level sections: the `breaker` and `auditRotate` settings.

use serde_json::Value;

use super::{AUDIT_ROTATE_KEYS, BREAKER_KEYS, Parser};
use crate::config::{BreakerConfig, ProblemKind};

impl Parser<'_> {
    pub(super) fn breaker(&mut self, value: &Value, out: &mut BreakerConfig) {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "breaker",
                "an object like {\"failures\": 3, \"cooldownMs\": 30000}",
            );
            return;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "breaker", BREAKER_KEYS, &[], &mut ignore);
        if let Some(v) = obj.get("failures") {
            if let Some(n) = self.positive(v, "breaker.failures", 1_000) {
                out.failures = u32::try_from(n).unwrap_or(u32::MAX);
            }
        }
        if let Some(v) = obj.get("cooldownMs") {
            if let Some(d) = self.millis(v, "breaker.cooldownMs") {
                out.cooldown = d;
            }
        }
    }

    pub(super) fn audit_rotate(&mut self, value: &Value) -> Option<crate::AuditRotation> {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "auditRotate",
                "an object like {\"maxBytes\": 104857600, \"keep\": 10}",
            );
            return None;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "auditRotate", AUDIT_ROTATE_KEYS, &[], &mut ignore);
        let Some(max) = obj.get("maxBytes") else {
            self.problem(
                ProblemKind::BadValue,
                "auditRotate",
                "has no \"maxBytes\"".into(),
                "give the size at which the log is archived, e.g. \"maxBytes\": 104857600",
            );
            return None;
        };
        let max = self.positive(max, "auditRotate.maxBytes", u64::MAX)?;
        let mut rotation = crate::AuditRotation::at(max);
        if let Some(v) = obj.get("keep") {
            let keep = self.positive(v, "auditRotate.keep", 1_000_000)?;
            rotation = rotation.keeping(usize::try_from(keep).unwrap_or(usize::MAX));
        }
        Some(rotation)
    }
}
