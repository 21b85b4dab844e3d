// Command-line options of replay.mjs (node:util parseArgs; no dependencies). Every default is
// here, and --help prints them.
import { parseArgs } from 'node:util';

const SPEC = {
  url: ['', 'a running server (instead of --qmlx); its log via --server-log'],
  'metrics-url': ['', 'its metrics, e.g. http://127.0.0.1:8081/metrics (with --url)'],
  'server-log': ['', 'its stderr log file (with --url), to read uid= and divergence lines'],
  qmlx: ['', 'qmlx binary: start/stop/restart `qmlx serve` for each run'],
  model: ['', 'model folder for `qmlx serve --model` (none: the built-in demo model)'],
  'cache-config': ['', 'base cache_config.json (the run\'s overrides are applied on top)'],
  'serve-arg': [[], 'extra argument for `qmlx serve` (repeatable)'],
  'no-disk-kv-restore': [false, 'do not pass --disk-kv-restore to `qmlx serve`'],
  'start-timeout-ms': ['120000', 'how long `qmlx serve` may take to become healthy'],
  'api-key': ['sk-qmlx-bench', 'bearer token sent with every request'],
  'model-id': ['', 'the "model" field (default: the first of /v1/models)'],
  scenario: ['clean', 'clean|timestamp|interrupt|interval-flood|restart|regenerate, a comma list, or all'],
  cache: ['', 'on|off|both (default: both with --qmlx, on with --url)'],
  trace: ['', 'replay a JSONL trace (one chat request per line, think_time_ms) instead of the generator'],
  'trace-mode': ['substitute', 'substitute (live replies replace recorded ones) | verbatim'],
  record: ['', 'append every request sent to this JSONL trace file'],
  seed: ['1', 'generator seed'],
  'start-tokens': ['4000', 'first prompt size in tokens'],
  'target-tokens': ['60000', 'stop once a prompt reaches this many tokens'],
  turns: ['30', 'about how many turns to take from start to target'],
  'max-turns': ['0', 'hard cap on turns (0: 2 * turns + 4)'],
  'tool-count': ['12', 'generator: how many of the twelve tool schemas to send (fewer: smaller prompts for short tests)'],
  'max-tokens': ['256', 'max_tokens of each reply'],
  temperature: ['0', 'sampling temperature (0: greedy, warm == cold)'],
  'think-time-ms': ['1000', 'pause before each turn (the agent running tools; the cache\'s idle time)'],
  'chars-per-token': ['', 'size conversion for the generator (default: measured with /tokenize)'],
  'no-thinking': [false, 'send chat_template_kwargs.enable_thinking = false'],
  'interrupt-every': ['2', 'interrupt: cut every N-th reply'],
  'interrupt-after': ['6', 'interrupt: cut after this many streamed chunks'],
  'regenerate-every': ['3', 'regenerate: every N-th turn is a follow-up that is then edited and re-sent'],
  'restart-every': ['1', 'restart: restart the server before every N-th turn'],
  'flood-interval': ['256', 'interval-flood: checkpoint_interval_tokens'],
  'flood-disk-gb': ['0.05', 'interval-flood: disk_cache_max_gb'],
  'flood-max-tokens': ['640', 'interval-flood: max_tokens per reply (several interval snapshots each)'],
  tolerance: ['0.05', 'warm-hits: prefill may exceed new tokens by this fraction'],
  'rerender-allowance': ['reply', 'warm-hits: extra prefill allowed: "reply" (the previous reply as re-rendered) or a token count'],
  'timeout-ms': ['600000', 'per-request timeout'],
  'log-wait-ms': ['5000', 'how long to wait for a request\'s log line'],
  out: ['agent-replay-out', 'report folder: <scenario>.md/.json/.svg, summary.md, server logs'],
  assert: [false, 'exit 1 when a check fails'],
  help: [false, 'this text'],
};

export function usage() {
  const lines = ['usage: node bench/agent/replay.mjs [options]', ''];
  for (const [name, [def, help]] of Object.entries(SPEC)) {
    const shown = Array.isArray(def) || def === false || def === '' ? '' : ` (default ${def})`;
    lines.push(`  --${name.padEnd(20)} ${help}${shown}`);
  }
  return lines.join('\n');
}

const camel = (name) => name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

export function parseOptions(argv) {
  const options = {};
  for (const [name, [def]] of Object.entries(SPEC)) {
    options[name] = { type: typeof def === 'boolean' ? 'boolean' : 'string',
      multiple: Array.isArray(def) };
  }
  const { values } = parseArgs({ args: argv, options, strict: true });
  const o = {};
  for (const [name, [def]] of Object.entries(SPEC)) {
    const v = values[name] ?? def;
    const numeric = typeof def === 'string' && def !== '' && /^-?[0-9.]+$/.test(def);
    o[camel(name)] = numeric ? Number(v) : v;
  }
  if (!o.help) validate(o);
  return o;
}

function validate(o) {
  if (!o.url === !o.qmlx) throw new Error('give exactly one of --url and --qmlx');
  o.cache ||= o.qmlx ? 'both' : 'on';
  if (!['on', 'off', 'both'].includes(o.cache)) throw new Error('--cache is on, off or both');
  if (o.rerenderAllowance !== 'reply' && !Number.isFinite(Number(o.rerenderAllowance))) {
    throw new Error('--rerender-allowance is "reply" or a number of tokens');
  }
  for (const name of ['seed', 'startTokens', 'targetTokens', 'turns', 'maxTokens', 'tolerance']) {
    if (!Number.isFinite(o[name])) throw new Error(`--${name} must be a number`);
  }
}
