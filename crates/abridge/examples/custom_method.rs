//! A host's own compaction method, registered by name and run by the
//! Harness from the settings' `method_order` (the guide's last section:
//! docs/writing-a-compaction-method.md). Run it with
//! `cargo run -p abridge --example custom_method`.

#![allow(clippy::print_stdout)]

use std::sync::Arc;

use abridge::compact::{Checkpoint, CompactionMethod, MethodError, MethodOutput, Plan};
use abridge::llm::Message;
use abridge::session::Session;
use abridge::{Harness, MethodRegistry, Settings};

/// Keeps the first line of the first and last `n` messages it replaces.
/// It does not copy the previous checkpoint forward, so what it carries
/// stays bounded however many times it runs.
#[derive(Debug)]
struct KeepEnds {
    n: usize,
}

#[async_trait::async_trait]
impl CompactionMethod for KeepEnds {
    fn name(&self) -> &str {
        "keep-ends"
    }

    // No `capabilities`: the default says a model-free checkpoint, which
    // runs on every trigger and is never started early. A method that
    // calls a model returns `Capabilities::model_backed()`.

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let history = plan.history();
        let line = |m: &Message| {
            let first = m.plain_text().lines().next().unwrap_or("").to_string();
            format!(
                "[{:?}] {}\n",
                m.role,
                first.chars().take(120).collect::<String>()
            )
        };
        let mut text = String::new();
        if history.len() <= 2 * self.n {
            history.iter().for_each(|m| text.push_str(&line(m)));
        } else {
            history[..self.n]
                .iter()
                .for_each(|m| text.push_str(&line(m)));
            text.push_str(&format!(
                "... {} messages left out ...\n",
                history.len() - 2 * self.n
            ));
            history[history.len() - self.n..]
                .iter()
                .for_each(|m| text.push_str(&line(m)));
        }
        if text.trim().is_empty() {
            return Err(MethodError::Summary {
                method: self.name().into(),
                reason: "the span holds no text".into(),
            });
        }
        let files = plan.previous().map(|p| p.files.clone()).unwrap_or_default();
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text)
                .with_short_summary(format!("Kept the ends of {} messages.", history.len()))
                .with_files(files),
        ))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The one line that makes the name known: to settings files, the
    // Harness, manual passes, and a command line built with
    // `abridge_cli::main_with(registry)`.
    let mut registry = MethodRegistry::builtin();
    registry.register("keep-ends", |_| Ok(Arc::new(KeepEnds { n: 2 })))?;

    let settings = Settings::from_toml_using(
        "method_order = [\"prune\", \"keep-ends\", \"digest\"]\n",
        "abridge.toml",
        &registry,
    )?;
    let harness = Harness::builder(Session::in_memory("custom"), "gpt-4o")
        .settings(settings)
        .registry(registry)
        .window(8_000)
        .build()?;
    let mut landed = Vec::new();
    futures::executor::block_on(async {
        for i in 0..200 {
            harness.append(Message::user(format!(
                "step {i}: {}",
                "details ".repeat(40)
            )))?;
            harness.append(Message::assistant(format!("did step {i}")))?;
            let pass = harness.after_turn().await?;
            landed.extend(pass.outcomes.into_iter().map(|o| o.method));
        }
        Ok::<(), abridge::HarnessError>(())
    })?;
    assert!(landed.iter().any(|m| m == "keep-ends"), "{landed:?}");
    assert!(harness.tokens() <= harness.limits().threshold);
    println!(
        "{} passes landed keep-ends; the context is {} tokens (threshold {})",
        landed.iter().filter(|m| *m == "keep-ends").count(),
        harness.tokens(),
        harness.limits().threshold
    );
    Ok(())
}
