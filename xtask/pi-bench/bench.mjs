// Times pi (pi-mono's coding agent, @mariozechner/pi-coding-agent) on one of
// its own v3 session files, in one node process, with pi's own code:
//
//   open     SessionManager.open(file) and buildSessionContext(): what pi
//            does at start-up before the first prompt.
//   plan     open, then getBranch() and prepareCompaction() with pi's
//            default compaction settings: the cut point, the messages to
//            summarize and the token estimate before.
//   compact  plan, then everything pi's compaction does except asking the
//            model for the summary: the file lists, a fixed summary text,
//            appendCompaction() (one line appended to the file) and the
//            buildSessionContext() pi rebuilds its messages with afterwards.
//
// Usage: node --expose-gc bench.mjs --pi PACKAGE_DIR [--runs N]
//        [--window TOKENS] SESSION.jsonl
// PACKAGE_DIR is the installed package (the folder holding its
// package.json). Prints one JSON object on stdout. Module loading happens
// once, before any clock starts; each compact run works on a fresh copy of
// the file (the copy is not timed). Our own code: `cargo xtask bench
// reopen` runs it (xtask/src/bench/pi.rs).

import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const args = { runs: 5, window: 200000, pi: null, session: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--pi") args.pi = argv[++i];
    else if (arg === "--runs") args.runs = Number(argv[++i]);
    else if (arg === "--window") args.window = Number(argv[++i]);
    else args.session = arg;
  }
  if (!args.pi || !args.session || !(args.runs > 0) || !(args.window > 0)) {
    throw new Error("usage: bench.mjs --pi PACKAGE_DIR [--runs N] [--window TOKENS] SESSION.jsonl");
  }
  return args;
}

// The package's modules by file: prepareCompaction is not re-exported by
// the package's index.
async function load(dir) {
  const module = (rel) => import(pathToFileURL(join(dir, rel)).href);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const sessions = await module("dist/core/session-manager.js");
  const compaction = await module("dist/core/compaction/compaction.js");
  const utils = await module("dist/core/compaction/utils.js");
  return { version: manifest.version, ...sessions, ...compaction, ...utils };
}

function open(pi, file) {
  const manager = pi.SessionManager.open(file);
  const context = manager.buildSessionContext();
  return { manager, context };
}

function plan(pi, file, settings) {
  const opened = open(pi, file);
  const branch = opened.manager.getBranch();
  const preparation = pi.prepareCompaction(branch, settings);
  if (!preparation) throw new Error("pi found nothing to compact");
  return { ...opened, branch, preparation };
}

// The summary pi would get from the model, replaced by a fixed text.
const SUMMARY = "## Goal\nThe synthetic benchmark session.\n\n## Progress\n- [x] Nothing: this summary is fixed.";

function compact(pi, file, settings) {
  const planned = plan(pi, file, settings);
  const { preparation, manager } = planned;
  const { readFiles, modifiedFiles } = pi.computeFileLists(preparation.fileOps);
  const summary = SUMMARY + pi.formatFileOperations(readFiles, modifiedFiles);
  manager.appendCompaction(summary, preparation.firstKeptEntryId, preparation.tokensBefore, {
    readFiles,
    modifiedFiles,
  });
  const after = manager.buildSessionContext();
  return { ...planned, after };
}

function median(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// Runs `step` `runs` times; `prepare` (untimed) gives each run its input.
function time(runs, prepare, step) {
  const samples = [];
  let last;
  for (let i = 0; i < runs; i++) {
    globalThis.gc?.();
    const input = prepare();
    const start = process.hrtime.bigint();
    last = step(input);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { ms: { median: median(samples), first: samples[0], all: samples }, last };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pi = await load(args.pi);
  const settings = { ...pi.DEFAULT_COMPACTION_SETTINGS };
  const scratch = mkdtempSync(join(tmpdir(), "abridge-pi-bench-"));
  try {
    const same = () => args.session;
    const opened = time(args.runs, same, (file) => open(pi, file));
    const planned = time(args.runs, same, (file) => plan(pi, file, settings));
    let copies = 0;
    const fresh = () => {
      const copy = join(scratch, `copy-${copies++}.jsonl`);
      copyFileSync(args.session, copy);
      return copy;
    };
    const compacted = time(args.runs, fresh, (file) => compact(pi, file, settings));

    const { manager, context } = opened.last;
    const { preparation } = planned.last;
    const entries = manager.getEntries();
    const estimate = pi.estimateContextTokens(context.messages);
    const result = {
      pi_version: pi.version,
      node: process.version,
      gc_between_runs: typeof globalThis.gc === "function",
      runs: args.runs,
      window: args.window,
      settings,
      entries: entries.length,
      path_entries: planned.last.branch.length,
      messages: context.messages.length,
      estimated_tokens: estimate.tokens,
      should_compact: pi.shouldCompact(estimate.tokens, args.window, settings),
      plan: {
        tokens_before: preparation.tokensBefore,
        messages_to_summarize: preparation.messagesToSummarize.length,
        turn_prefix_messages: preparation.turnPrefixMessages.length,
        is_split_turn: preparation.isSplitTurn,
        first_kept_entry_id: preparation.firstKeptEntryId,
      },
      messages_after_compaction: compacted.last.after.messages.length,
      open_ms: opened.ms,
      plan_ms: planned.ms,
      compact_ms: compacted.ms,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
