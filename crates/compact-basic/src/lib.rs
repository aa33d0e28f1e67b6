//! The basic compaction backend: retention walk, LLM and digest checkpoints, branch summaries, handoff, remote.
