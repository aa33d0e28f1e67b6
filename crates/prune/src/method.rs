//! The `prune`, `mask`, `shake` and `trim` compaction methods.

use std::sync::Arc;

use abridge_compact::Capabilities;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_compact::Prospect;
use abridge_compact::Trigger;
use async_trait::async_trait;
use serde::Deserialize;
use serde::Serialize;

use crate::PruneError;
use crate::context::PassContext;
use crate::mask::MaskConfig;
use crate::mask::mask;
use crate::prune::PruneConfig;
use crate::prune::prune;
use crate::report::Reclaim;
use crate::scan::Snapshot;
use crate::shake::ShakeConfig;
use crate::shake::ShakePreset;
use crate::shake::shake;
use crate::trim::TrimConfig;
use crate::trim::trim;

/// Settings of all four methods, for a settings file or the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReclaimConfig {
    /// The `prune` method.
    pub prune: PruneConfig,
    /// The `mask` method.
    pub mask: MaskConfig,
    /// The `shake` method; `None` (the default) picks a preset from the
    /// trigger: rescue on overflow or incomplete output, manual when asked
    /// by hand, automatic otherwise.
    pub shake: Option<ShakeConfig>,
    /// The `trim` method.
    pub trim: TrimConfig,
}

impl ReclaimConfig {
    /// The method called `name` (`prune`, `mask`, `shake` or `trim`), or `None`.
    ///
    /// # Errors
    /// [`PruneError::Config`] when the method's settings cannot work.
    pub fn method(&self, name: &str) -> Option<Result<Arc<dyn CompactionMethod>, PruneError>> {
        let method: Result<Arc<dyn CompactionMethod>, PruneError> = match name {
            "prune" => Ok(Arc::new(PruneMethod::new(self.prune.clone()))),
            "mask" => MaskMethod::new(self.mask.clone()).map(|m| Arc::new(m) as _),
            "shake" => Ok(Arc::new(match &self.shake {
                Some(config) => ShakeMethod::with_config(config.clone()),
                None => ShakeMethod::new(),
            })),
            "trim" => TrimMethod::new(self.trim.clone()).map(|m| Arc::new(m) as _),
            _ => return None,
        };
        Some(method)
    }
}

/// What a method returns for a pass: its rewrites, or "nothing to do" so
/// the caller falls through to the next method.
fn output(method: &str, reclaim: Reclaim) -> Result<MethodOutput, MethodError> {
    if reclaim.is_empty() {
        let mut reason = format!("{method} found no tool output to reclaim");
        if reclaim.report.below_minimum_saving > 0 {
            reason.push_str(&format!(
                " (pruning would save only {} tokens)",
                reclaim.report.below_minimum_saving
            ));
        }
        return Err(MethodError::NothingToCompact { reason });
    }
    let details = Details::new().with(&reclaim.report)?;
    Ok(MethodOutput::Rewrites {
        rewrites: reclaim.rewrites,
        details,
    })
}

/// What an attempt can expect from a pass's finding: nothing when the
/// pass reclaimed nothing (the same reason `run` would give), otherwise
/// maybe. An error (trim's settings) is left for `run` to report.
fn prospect(method: &str, reclaim: Result<Reclaim, MethodError>) -> Prospect {
    match reclaim.map(|reclaim| output(method, reclaim)) {
        Ok(Err(MethodError::NothingToCompact { reason })) => Prospect::Nothing { reason },
        _ => Prospect::Maybe,
    }
}

/// `prune`: superseded reads, useless results and old tool outputs
/// replaced by placeholders (see [`prune`](crate::prune())).
#[derive(Debug, Clone, Default)]
pub struct PruneMethod {
    config: PruneConfig,
}

impl PruneMethod {
    /// The method with `config`.
    pub fn new(config: PruneConfig) -> Self {
        PruneMethod { config }
    }
}

#[async_trait]
impl CompactionMethod for PruneMethod {
    fn name(&self) -> &str {
        "prune"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::rewriting()
    }

    fn prospect(&self, plan: &Plan) -> Prospect {
        prospect(self.name(), self.reclaim(plan))
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        output(self.name(), self.reclaim(plan)?)
    }
}

impl PruneMethod {
    /// What the pass reclaims from `plan`: asked once by `prospect`, which
    /// writes nothing, and again by `run`.
    fn reclaim(&self, plan: &Plan) -> Result<Reclaim, MethodError> {
        let snapshot = Snapshot::of_plan(plan);
        let reclaim = prune(
            &snapshot,
            &self.config,
            &PassContext::compaction(),
            plan.counter().as_ref(),
        );
        Ok(reclaim)
    }
}

/// `mask`: every tool result but the newest N replaced by a one-line
/// placeholder naming it (see [`mask`](crate::mask())).
#[derive(Debug, Clone, Default)]
pub struct MaskMethod {
    config: MaskConfig,
}

impl MaskMethod {
    /// The method with `config`.
    ///
    /// # Errors
    /// [`PruneError::Config`] from [`MaskConfig::validate`].
    pub fn new(config: MaskConfig) -> Result<Self, PruneError> {
        config.validate()?;
        Ok(MaskMethod { config })
    }
}

#[async_trait]
impl CompactionMethod for MaskMethod {
    fn name(&self) -> &str {
        "mask"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::rewriting()
    }

    fn prospect(&self, plan: &Plan) -> Prospect {
        prospect(self.name(), self.reclaim(plan))
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        output(self.name(), self.reclaim(plan)?)
    }
}

impl MaskMethod {
    /// What the pass reclaims from `plan`: asked once by `prospect`, which
    /// writes nothing, and again by `run`.
    fn reclaim(&self, plan: &Plan) -> Result<Reclaim, MethodError> {
        let snapshot = Snapshot::of_plan(plan);
        let reclaim = mask(
            &snapshot,
            &self.config,
            &PassContext::compaction(),
            plan.counter().as_ref(),
        );
        Ok(reclaim)
    }
}

/// `shake`: large results and fenced or XML blocks of older results moved
/// out of the context (see [`shake`](crate::shake())).
#[derive(Debug, Clone, Default)]
pub struct ShakeMethod {
    config: Option<ShakeConfig>,
}

impl ShakeMethod {
    /// The method with the preset chosen by the trigger of each run.
    pub fn new() -> Self {
        ShakeMethod { config: None }
    }

    /// The method with fixed settings.
    pub fn with_config(config: ShakeConfig) -> Self {
        ShakeMethod {
            config: Some(config),
        }
    }

    /// The preset a trigger calls for.
    pub fn preset_for(trigger: Trigger) -> ShakePreset {
        match trigger {
            Trigger::Overflow | Trigger::IncompleteOutput => ShakePreset::Rescue,
            Trigger::Manual => ShakePreset::Manual,
            Trigger::Threshold | Trigger::MidTurn | Trigger::Idle => ShakePreset::Automatic,
        }
    }
}

#[async_trait]
impl CompactionMethod for ShakeMethod {
    fn name(&self) -> &str {
        "shake"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::rewriting()
    }

    fn prospect(&self, plan: &Plan) -> Prospect {
        prospect(self.name(), self.reclaim(plan))
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        output(self.name(), self.reclaim(plan)?)
    }
}

impl ShakeMethod {
    /// What the pass reclaims from `plan`: asked once by `prospect`, which
    /// writes nothing, and again by `run`.
    fn reclaim(&self, plan: &Plan) -> Result<Reclaim, MethodError> {
        let config = match &self.config {
            Some(config) => config.clone(),
            None => ShakeConfig::preset(Self::preset_for(plan.trigger())),
        };
        let snapshot = Snapshot::of_plan(plan);
        let reclaim = shake(
            &snapshot,
            &config,
            &PassContext::compaction(),
            plan.counter().as_ref(),
        );
        Ok(reclaim)
    }
}

/// `trim`: results over a size limit cut to head and tail (see
/// [`trim`](crate::trim())).
#[derive(Debug, Clone)]
pub struct TrimMethod {
    config: TrimConfig,
}

impl TrimMethod {
    /// The method with `config`.
    ///
    /// # Errors
    /// [`PruneError::Config`] from [`TrimConfig::validate`].
    pub fn new(config: TrimConfig) -> Result<Self, PruneError> {
        config.validate()?;
        Ok(TrimMethod { config })
    }
}

#[async_trait]
impl CompactionMethod for TrimMethod {
    fn name(&self) -> &str {
        "trim"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::rewriting()
    }

    fn prospect(&self, plan: &Plan) -> Prospect {
        prospect(self.name(), self.reclaim(plan))
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        output(self.name(), self.reclaim(plan)?)
    }
}

impl TrimMethod {
    /// What the pass reclaims from `plan`: asked once by `prospect`, which
    /// writes nothing, and again by `run`.
    fn reclaim(&self, plan: &Plan) -> Result<Reclaim, MethodError> {
        let snapshot = Snapshot::of_plan(plan);
        let reclaim = trim(
            &snapshot,
            &self.config,
            &PassContext::compaction(),
            plan.counter().as_ref(),
        )
        .map_err(|error| MethodError::Unavailable {
            method: self.name().to_string(),
            reason: error.to_string(),
        })?;
        Ok(reclaim)
    }
}
